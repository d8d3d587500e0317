//! NonAdminSchedule cron rules: whether `spec.schedule` is a cron expression, and its next
//! run. The same check serves the gateway (422 field error) and the controller (the
//! `Accepted=False` message).
//!
//! Cron expressions are read by [`croner`] (standard 5 fields, plus the `@hourly`-style
//! shortcuts); times are the cluster's (UTC).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::policy::{PolicyViolation, ViolationReason};

/// The field holding a NonAdminSchedule's cron expression.
pub const SCHEDULE_FIELD: &str = "spec.schedule";

/// Checks a NonAdminSchedule's `spec.schedule`: refused (naming the field) unless it parses as
/// a cron expression.
pub fn validate_cron(cron: &str) -> Result<(), PolicyViolation> {
    cron.parse::<croner::Cron>().map(|_| ()).map_err(|error| {
        PolicyViolation::new(
            ViolationReason::Invalid,
            SCHEDULE_FIELD,
            format!("NonAdminSchedule spec.schedule is not a valid cron expression: {error}"),
        )
    })
}

/// The cron's next run strictly after `after` (None when the expression does not parse or has
/// no further run).
pub fn next_run(cron: &str, after: &Time) -> Option<Time> {
    let cron = cron.parse::<croner::Cron>().ok()?;
    let next = cron.find_next_occurrence(&to_chrono(after)?, false).ok()?;
    from_chrono(next)
}

fn to_chrono(t: &Time) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
}

fn from_chrono(t: chrono::DateTime<chrono::Utc>) -> Option<Time> {
    k8s_openapi::jiff::Timestamp::new(t.timestamp(), t.timestamp_subsec_nanos() as i32)
        .ok()
        .map(Time)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn time(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + secs).unwrap())
    }

    #[test]
    fn valid_crons_pass_and_invalid_ones_name_the_field() {
        assert!(validate_cron("0 * * * *").is_ok());
        assert!(validate_cron("*/30 2 * * MON-FRI").is_ok());
        for bad in ["nope", "every day", "", "61 * * * *"] {
            let violation = validate_cron(bad).expect_err(bad);
            assert_eq!(violation.field, "spec.schedule");
            assert_eq!(violation.reason, ViolationReason::Invalid);
            assert!(
                violation
                    .message
                    .starts_with("NonAdminSchedule spec.schedule is not a valid cron expression: "),
                "{violation}"
            );
        }
    }

    #[test]
    fn next_run_is_strictly_after_and_none_for_invalid_crons() {
        assert_eq!(next_run("nope", &time(0)), None);
        let after = time(0);
        let next = next_run("0 * * * *", &after).unwrap();
        assert!(next.0 > after.0);
        // On the hour, within the hour.
        assert_eq!(next.0.as_second() % 3600, 0);
        assert!(next.0.as_second() - after.0.as_second() <= 3600);
        // Exactly on a run time: the next one, not the same.
        assert_eq!(
            next_run("0 * * * *", &next).unwrap().0.as_second(),
            next.0.as_second() + 3600
        );
        // Sub-second precision survives the round trip.
        let precise = Time(k8s_openapi::jiff::Timestamp::new(1_800_000_000, 500_000_000).unwrap());
        assert!(next_run("* * * * *", &precise).unwrap().0 > precise.0);
    }
}
