//! Status helpers every reconcile decision shares: condition updates that keep transition
//! times, status comparison that ignores them, forward-only phases and finalizer checks. Pure.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::core::ObjectMeta;

use crate::api::nonadmin::NonAdminPhase;

/// Whether two condition lists say the same, ignoring transition times.
pub fn same_conditions(a: &[Condition], b: &[Condition]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.type_ == y.type_
                && x.status == y.status
                && x.reason == y.reason
                && x.message == y.message
        })
}

/// Sets a condition, keeping its transition time when its status does not change.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &Time,
) {
    let status = if status { "True" } else { "False" }.to_string();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = now.clone();
            }
            c.status = status;
            c.reason = reason.to_string();
            c.message = message.to_string();
        }
        None => conditions.push(Condition {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }),
    }
}

/// Whether `new` differs from `old` (absent = default) in anything but condition transition
/// times: status writes are skipped when it does not.
pub fn differs_ignoring_transition_times<S: Clone + PartialEq + Default>(
    old: Option<&S>,
    new: &S,
    conditions: fn(&mut S) -> &mut Vec<Condition>,
) -> bool {
    let mut a = old.cloned().unwrap_or_default();
    let mut b = new.clone();
    let same = same_conditions(conditions(&mut a), conditions(&mut b));
    conditions(&mut a).clear();
    conditions(&mut b).clear();
    a != b || !same
}

/// Order of the phases (absent first).
pub fn phase_rank(p: Option<NonAdminPhase>) -> u8 {
    match p {
        None => 0,
        Some(NonAdminPhase::New) => 1,
        Some(NonAdminPhase::BackingOff) => 2,
        Some(NonAdminPhase::Created) => 3,
        Some(NonAdminPhase::Deleting) => 4,
    }
}

/// Phases only move forward: New, BackingOff, Created, Deleting. (The one way back, as upstream:
/// a NAB/NAR whose Velero object vanished after it was made is set to BackingOff directly by its
/// decision, not through here.)
pub fn advance_phase(phase: &mut Option<NonAdminPhase>, to: NonAdminPhase) {
    if phase_rank(Some(to)) > phase_rank(*phase) {
        *phase = Some(to);
    }
}

/// Whether an object carries `finalizer`.
pub fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn time(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn conditions_keep_transition_time_unless_status_changes() {
        let mut c = Vec::new();
        set_condition(&mut c, "Accepted", true, "R", "m", &time(1));
        set_condition(&mut c, "Accepted", true, "R2", "m2", &time(2));
        assert_eq!(c[0].last_transition_time, time(1));
        set_condition(&mut c, "Accepted", false, "R3", "m3", &time(3));
        assert_eq!(c[0].last_transition_time, time(3));
        let mut d = c.clone();
        d[0].last_transition_time = time(9);
        assert!(same_conditions(&c, &d));
    }

    #[test]
    fn phases_only_move_forward() {
        let mut p = None;
        advance_phase(&mut p, NonAdminPhase::Created);
        advance_phase(&mut p, NonAdminPhase::New);
        assert_eq!(p, Some(NonAdminPhase::Created));
        advance_phase(&mut p, NonAdminPhase::Deleting);
        assert_eq!(p, Some(NonAdminPhase::Deleting));
    }
}
