//! Property tests: the index against a full-scan model of the same semantics, over long
//! deterministic pseudo-random sequences of watch events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use super::entry::{Activity, Entry, QueueKind, VeleroPhase};
use super::index::{QueueIndex, UpsertOutcome};
use super::naive::naive_position;
use super::tests_support::{SplitMix64, backup, restore};
use crate::api::velero::{BackupPhase, RestorePhase};

/// The queue order, spelled out: creation second; within it running, then queued by Velero,
/// then not taken yet (those in creation order, as their `resourceVersion` tells); then name.
fn order(entry: &Entry) -> (chrono::DateTime<chrono::Utc>, u8, Option<u64>, &str) {
    let (stage, version) = match entry.activity() {
        Activity::Running => (0, None),
        _ if entry.phase.is_velero_queued() => (1, None),
        _ => (2, entry.resource_version),
    };
    (entry.created, stage, version, &entry.name)
}

/// The index's semantics, computed by scanning everything: the specification the index must
/// match.
fn reference_position(entries: &[&Entry], kind: QueueKind, name: &str) -> Option<u64> {
    let target = entries
        .iter()
        .find(|entry| entry.kind() == kind && entry.name == name)?;
    match target.activity() {
        Activity::Finished => None,
        Activity::Running => Some(1),
        Activity::Pending => {
            if target.phase.is_velero_queued()
                && let Some(position) = target.velero_queue_position
            {
                return Some(position);
            }
            let ahead = entries
                .iter()
                .filter(|entry| entry.kind() == kind && entry.activity().is_active())
                .filter(|entry| order(entry) < order(target))
                .count();
            Some(1 + ahead as u64)
        }
    }
}

const BACKUP_PHASES: [Option<BackupPhase>; 14] = [
    None,
    Some(BackupPhase::New),
    Some(BackupPhase::Queued),
    Some(BackupPhase::ReadyToStart),
    Some(BackupPhase::InProgress),
    Some(BackupPhase::WaitingForPluginOperations),
    Some(BackupPhase::WaitingForPluginOperationsPartiallyFailed),
    Some(BackupPhase::Finalizing),
    Some(BackupPhase::FinalizingPartiallyFailed),
    Some(BackupPhase::Completed),
    Some(BackupPhase::PartiallyFailed),
    Some(BackupPhase::Failed),
    Some(BackupPhase::FailedValidation),
    Some(BackupPhase::Deleting),
];

const RESTORE_PHASES: [Option<RestorePhase>; 7] = [
    None,
    Some(RestorePhase::New),
    Some(RestorePhase::InProgress),
    Some(RestorePhase::Finalizing),
    Some(RestorePhase::Completed),
    Some(RestorePhase::Failed),
    Some(RestorePhase::FailedValidation),
];

struct Generator {
    random: SplitMix64,
    names: u64,
    seconds: u64,
}

impl Generator {
    fn kind(&mut self) -> QueueKind {
        if self.random.below(4) == 0 {
            QueueKind::Restore
        } else {
            QueueKind::Backup
        }
    }

    fn name(&mut self) -> String {
        format!("obj-{:04}", self.random.below(self.names))
    }

    fn entry(&mut self, kind: QueueKind) -> Entry {
        let name = self.name();
        // Few distinct seconds, so same-second ties are frequent.
        let second = self.random.below(self.seconds) as i64;
        let mut entry = match kind {
            QueueKind::Backup => {
                let phase = BACKUP_PHASES[self.random.below(14) as usize].clone();
                backup(&name, second, phase)
            }
            QueueKind::Restore => {
                let phase = RESTORE_PHASES[self.random.below(7) as usize].clone();
                restore(&name, second, phase)
            }
        };
        if kind == QueueKind::Backup && self.random.below(3) == 0 {
            // Velero's own position, sometimes left over on a backup no longer Queued.
            entry.velero_queue_position = Some(1 + self.random.below(50));
        }
        if self.random.below(5) != 0 {
            entry.resource_version = Some(self.random.below(1_000));
        }
        entry
    }
}

/// The model: the latest accepted state per object, with the same staleness rule.
#[derive(Default)]
struct Model {
    entries: HashMap<(QueueKind, String), Entry>,
}

impl Model {
    fn upsert(&mut self, entry: Entry) -> UpsertOutcome {
        let key = (entry.kind(), entry.name.clone());
        match self.entries.get(&key) {
            None => {
                self.entries.insert(key, entry);
                UpsertOutcome::Inserted
            }
            Some(held) => match (held.resource_version, entry.resource_version) {
                (Some(held_version), Some(new_version)) if new_version < held_version => {
                    UpsertOutcome::Stale
                }
                _ if *held == entry => UpsertOutcome::Unchanged,
                _ => {
                    self.entries.insert(key, entry);
                    UpsertOutcome::Updated
                }
            },
        }
    }

    fn snapshot(&self) -> Vec<&Entry> {
        self.entries.values().collect()
    }
}

fn run(seed: u64, steps: usize, names: u64, seconds: u64) {
    let mut generator = Generator {
        random: SplitMix64::new(seed),
        names,
        seconds,
    };
    let mut index = QueueIndex::new();
    let mut model = Model::default();
    for step in 0..steps {
        match generator.random.below(20) {
            0..=14 => {
                let kind = generator.kind();
                let entry = generator.entry(kind);
                assert_eq!(
                    index.upsert(entry.clone()),
                    model.upsert(entry.clone()),
                    "step {step}: upsert {entry:?}"
                );
            }
            15..=18 => {
                let kind = generator.kind();
                let name = generator.name();
                let removed = model.entries.remove(&(kind, name.clone()));
                assert_eq!(index.remove(kind, &name), removed, "step {step}: remove");
            }
            _ => {
                if generator.random.below(50) == 0 {
                    // A re-list: some objects vanished while the watch was down.
                    let kind = generator.kind();
                    model.entries.retain(|(held_kind, _), _| {
                        *held_kind != kind || generator.random.below(2) == 0
                    });
                    let survivors: Vec<Entry> = model
                        .snapshot()
                        .into_iter()
                        .filter(|entry| entry.kind() == kind)
                        .cloned()
                        .collect();
                    index.replace_kind(kind, survivors);
                }
            }
        }

        let snapshot = model.snapshot();
        let full_check = step % 500 == 0;
        let probes = if full_check { names } else { 4 };
        for probe in 0..probes {
            let kind = generator.kind();
            let name = if full_check {
                format!("obj-{probe:04}")
            } else {
                generator.name()
            };
            assert_eq!(
                index.position(kind, &name),
                reference_position(&snapshot, kind, &name),
                "step {step}: position of {kind:?} {name}"
            );
        }
        if full_check {
            for kind in QueueKind::ALL {
                let active: Vec<&Entry> = snapshot
                    .iter()
                    .copied()
                    .filter(|entry| entry.kind() == kind && entry.activity().is_active())
                    .collect();
                assert_eq!(index.active_len(kind), active.len(), "step {step}");
                let mut ordered = active.clone();
                ordered.sort_by(|a, b| order(a).cmp(&order(b)));
                let expected: Vec<(chrono::DateTime<chrono::Utc>, &str)> = ordered
                    .iter()
                    .map(|entry| (entry.created, entry.name.as_str()))
                    .collect();
                let got: Vec<(chrono::DateTime<chrono::Utc>, &str)> = index
                    .active_in_order(kind)
                    .map(|entry| (entry.created, entry.name.as_str()))
                    .collect();
                assert_eq!(got, expected, "step {step}: queue order");
            }
        }
    }
}

#[test]
fn index_matches_full_scan_with_many_ties() {
    run(1, 20_000, 200, 10);
}

#[test]
fn index_matches_full_scan_with_few_ties() {
    run(2, 20_000, 800, 100_000);
}

#[test]
fn index_matches_full_scan_with_a_tiny_population() {
    // Few names: the same objects are inserted, updated and removed over and over.
    run(3, 10_000, 12, 3);
}

/// Where upstream and the index agree: no FailedValidation, no ties, no Velero positions, no
/// running object with active objects ahead. Then the two algorithms give the same answer,
/// which pins down that `naive_position` is the same formula applied with upstream's flaws.
#[test]
fn upstream_agrees_where_its_flaws_do_not_apply() {
    let mut random = SplitMix64::new(4);
    let pending_or_finished = [
        None,
        Some(BackupPhase::New),
        Some(BackupPhase::Completed),
        Some(BackupPhase::PartiallyFailed),
        Some(BackupPhase::Failed),
    ];
    for _ in 0..200 {
        let mut seconds: Vec<i64> = (0..300).collect();
        // Distinct seconds in random order.
        for i in (1..seconds.len()).rev() {
            seconds.swap(i, random.below(i as u64 + 1) as usize);
        }
        let entries: Vec<Entry> = seconds
            .iter()
            .take(100)
            .enumerate()
            .map(|(i, &second)| {
                let phase = pending_or_finished[random.below(5) as usize].clone();
                backup(&format!("b{i:03}"), second, phase)
            })
            .collect();
        let index = QueueIndex::from_entries(entries.clone());
        for entry in &entries {
            assert_eq!(
                index.position(QueueKind::Backup, &entry.name),
                naive_position(&entries, QueueKind::Backup, &entry.name),
                "{entry:?}"
            );
        }
    }
    // And the phase alone is the index's input: a FailedValidation backup differs.
    let flawed = vec![
        backup("a", 1, Some(BackupPhase::FailedValidation)),
        backup("b", 2, None),
    ];
    assert_ne!(
        QueueIndex::from_entries(flawed.clone()).position(QueueKind::Backup, "b"),
        naive_position(&flawed, QueueKind::Backup, "b")
    );
    assert!(matches!(flawed[0].phase, VeleroPhase::Backup(Some(_))));
}
