// Every string the console shows lives under strings/, one file per area, so it can be
// translated in one place: components import `t` and never spell user-facing text inline.
import { common } from './common';
import { backups } from './backups';
import { restores } from './restores';
import { locations } from './locations';
import { schedules } from './schedules';
import { overview } from './overview';
import { history } from './history';
import { queue } from './queue';
import { manifests } from './manifests';

export const t = { ...common, backups, restores, locations, schedules, overview, history, queue, manifests } as const;

/** Fills `{name}` placeholders of a string from `t`. */
export function fmt(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) =>
    key in values ? String(values[key]) : whole,
  );
}
