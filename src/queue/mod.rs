//! The queue index: where each Velero Backup and Restore stands in its queue, answered in
//! O(log n), and the coalescing of the positions written to tenant objects. Pure: no I/O, no
//! async, no client — reflectors feed it and controllers and the gateway read it.
//!
//! # Semantics
//!
//! The position of an object X is 1 + the number of objects **of the same kind** ahead of it —
//! created earlier, ties broken by name — that are still pending (New, Queued, no phase yet)
//! or running (ReadyToStart, InProgress, WaitingForPluginOperations…, Finalizing…). Finished
//! objects (Completed, PartiallyFailed, Failed, FailedValidation, Deleting) never count and
//! have no position; neither does an object the index does not know. Two refinements over the
//! formula: a Backup in phase Queued with Velero's own `status.queuePosition` (> 0) reports
//! that, because Velero ≥ 1.17 lets a later backup pass one whose namespaces are busy and only
//! Velero knows that order; and a running object reports 1 — it is being served, whatever
//! older objects are still waiting (which happens exactly when Velero let it pass them) — as
//! the upstream design (seed 004) also documents for InProgress. What upstream actually
//! computes, and what is wrong with it, is documented on [`naive_position`].
//!
//! # Structure and complexity
//!
//! [`QueueIndex`] holds, per kind, a `HashMap` from name to [`Entry`] and an
//! [`tree::OrderStatisticTree`] — an AVL tree whose nodes carry subtree sizes — holding the
//! order keys `(creationTimestamp, name)` of the **active** entries only. The position of a
//! pending X is then `1 + rank(X's key)`: the number of active keys smaller than X's.
//!
//! - query: one hash lookup + one root-to-leaf walk summing left-subtree sizes: O(log n);
//! - update (a watch event): one hash lookup, then at most one tree removal and one insertion
//!   (only when the entry becomes active, stops being active, or its key changes); each walks
//!   one path and rebalances on the way back with O(1) rotations per level: O(log n);
//! - the AVL invariant bounds the height by 1.44·log2(n + 2), so these are worst-case bounds,
//!   independent of the order in which objects arrive — creation timestamps arrive almost
//!   sorted, the worst case of an unbalanced search tree.
//!
//! Alternatives considered: `std`'s `BTreeMap` cannot rank (counting a range is O(k)); a
//! Fenwick tree needs the key space fixed in advance, and new backups keep arriving with
//! keys that fall between or after existing ones; a sorted `Vec` ranks by binary search but
//! inserts in O(n); a treap or a skip list would do, but their O(log n) holds only in
//! expectation over their random choices, while the AVL tree's holds always, for about the
//! same amount of code.
//!
//! Updates are idempotent and safe against replayed or reordered events: an entry whose
//! integer `resourceVersion` is older than the one held is dropped, identical states are
//! no-ops, and a completed re-list replaces a whole kind ([`QueueIndex::replace_kind`]).
//!
//! [`PositionWriter`] decides which tenant objects get a status write, so that one finished
//! backup does not cause a write to every queued NAB (its documentation gives the rules).

mod entry;
mod index;
mod naive;
pub mod tree;
mod writer;

#[cfg(test)]
mod proptests;
#[cfg(test)]
pub(crate) mod tests_support;

pub use entry::{Activity, Entry, EntryError, QueueKind, VeleroPhase};
pub use index::{QueueIndex, UpsertOutcome};
pub use naive::naive_position;
pub use writer::{
    PositionWrite, PositionWriter, TrackedObject, WritePlan, WriteReason, WriterConfig,
};
