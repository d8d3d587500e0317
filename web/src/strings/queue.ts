// Strings of the queue page and the queue tables shown on the dashboard.
export const queue = {
  title: 'Queue',
  intro: 'Velero runs one backup and one restore at a time for the whole cluster. Your work waits its turn here; other teams only appear as counts.',
  cluster: {
    title: 'Cluster queues',
    backups: 'Backups',
    restores: 'Restores',
    running: '{count} running',
    pending: '{count} waiting',
    mean: 'about {duration} each',
    noMean: 'no recent durations',
    othersNote: 'Counts include every team; names are only shown for your own work.',
  },
  mine: {
    title: 'Your work in {namespace}',
    elsewhere: 'Your work in other namespaces',
    empty: 'Nothing of yours is running or waiting in {namespace}.',
  },
  table: {
    caption: 'Running and waiting operations in {namespace}',
    kind: 'Kind',
    name: 'Name',
    namespace: 'Namespace',
    state: 'State',
    position: 'Position',
    eta: 'Estimate',
  },
  kinds: {
    backup: 'Backup',
    restore: 'Restore',
  },
  states: {
    running: 'Running',
    pending: 'Waiting',
  },
  position: {
    running: 'being served',
    next: 'next',
    waiting: '#{position}',
  },
  eta: {
    startsIn: 'starts in ~{duration}',
    finishesIn: 'done in ~{duration}',
    anyMoment: 'any moment now',
    overdue: 'taking longer than usual',
    basis: 'from {samples} recent runs',
    basisOne: 'from 1 recent run',
    none: 'no estimate yet',
    noneHelp: 'Estimates appear once this namespace has finished a few comparable operations.',
  },
  updated: 'Updated {age} ago',
} as const;
