// The history page's filter toolbar: kind, phase, text search (applied as you pause typing),
// time range with custom dates, and "clear filters". Wraps on narrow screens.
import { useState } from 'react';
import {
  Button,
  FormHelperText,
  FormSelect,
  FormSelectOption,
  HelperText,
  HelperTextItem,
  SearchInput,
  TextInput,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
} from '@patternfly/react-core';
import { t } from '../strings';
import { DEFAULT_FILTERS, HISTORY_KINDS, HISTORY_PHASES, RANGE_KEYS, isFiltered, rangePatch, type HistoryFilters, type RangeKey, type RangeProblem } from './filters';
import { kindLabel } from './operations';
import { useDebounced } from '../queue/live';

export function HistoryFiltersBar({
  filters,
  onChange,
  problem,
}: {
  filters: HistoryFilters;
  onChange: (filters: HistoryFilters) => void;
  problem?: RangeProblem;
}) {
  const words = t.history.filters;
  // The search box keeps its own text and applies it once typing pauses.
  const [text, setText] = useState(filters.q);
  const [textOf, setTextOf] = useState(filters.q);
  if (textOf !== filters.q) {
    // The filters changed elsewhere (cleared, or the URL): the box follows.
    setTextOf(filters.q);
    setText(filters.q);
  }
  const applyText = useDebounced(() => {
    if (text !== filters.q) onChange({ ...filters, q: text });
  }, 350);
  const set = (patch: Partial<HistoryFilters>) => onChange({ ...filters, ...patch });
  return (
    <>
      <Toolbar aria-label={words.toolbar} data-testid="history-filters">
        <ToolbarContent>
          <ToolbarGroup variant="filter-group" style={{ flexWrap: 'wrap', rowGap: '0.5rem' }}>
            <ToolbarItem>
              <FormSelect value={filters.kind} onChange={(_event, kind) => set({ kind })} aria-label={words.kind} data-testid="filter-kind">
                <FormSelectOption value="" label={words.allKinds} />
                {HISTORY_KINDS.map((kind) => (
                  <FormSelectOption key={kind} value={kind} label={kindLabel(kind)} />
                ))}
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem>
              <FormSelect value={filters.phase} onChange={(_event, phase) => set({ phase })} aria-label={words.phase} data-testid="filter-phase">
                <FormSelectOption value="" label={words.allPhases} />
                {HISTORY_PHASES.map((phase) => (
                  <FormSelectOption key={phase} value={phase} label={phase} />
                ))}
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem>
              <FormSelect
                value={filters.range}
                onChange={(_event, range) => set(rangePatch(filters, range as RangeKey, Date.now()))}
                aria-label={words.range}
                data-testid="filter-range"
              >
                {RANGE_KEYS.map((range) => (
                  <FormSelectOption key={range} value={range} label={words.ranges[range]} />
                ))}
              </FormSelect>
            </ToolbarItem>
            {filters.range === 'custom' &&
              (['from', 'to'] as const).map((end) => (
                <ToolbarItem key={end}>
                  <TextInput
                    type="date"
                    value={filters[end]}
                    onChange={(_event, day) => set({ [end]: day })}
                    aria-label={words[end]}
                    validated={problem ? 'error' : 'default'}
                    data-testid={`filter-${end}`}
                  />
                </ToolbarItem>
              ))}
            <ToolbarItem style={{ minWidth: '14rem', flex: '1 1 14rem' }}>
              <SearchInput
                aria-label={words.search}
                placeholder={words.search}
                value={text}
                onChange={(_event, value) => {
                  setText(value);
                  applyText();
                }}
                onClear={() => {
                  setText('');
                  onChange({ ...filters, q: '' });
                }}
                data-testid="filter-search"
              />
            </ToolbarItem>
            {isFiltered(filters) && (
              <ToolbarItem>
                <Button variant="link" onClick={() => onChange(DEFAULT_FILTERS)} data-testid="filter-clear">
                  {words.clear}
                </Button>
              </ToolbarItem>
            )}
          </ToolbarGroup>
        </ToolbarContent>
      </Toolbar>
      {problem && (
        <FormHelperText>
          <HelperText>
            <HelperTextItem variant="error" data-testid="filter-range-problem">
              {words.problems[problem]}
            </HelperTextItem>
          </HelperText>
        </FormHelperText>
      )}
    </>
  );
}
