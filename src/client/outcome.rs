//! What a NonAdminBackup or NonAdminRestore object says about its job (pure), and the exit code
//! a pipeline sees for it.
use serde_json::Value;

/// Where a backup or restore stands, read from its tenant object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still queued or running (or not yet handed to Velero).
    Running,
    /// Velero finished it without errors.
    Completed,
    /// Velero finished it with errors on some items.
    PartiallyFailed,
    /// Velero could not do it (Failed or FailedValidation), with Velero's reason.
    Failed(String),
    /// NAC refused the spec (BackingOff), with the reason NAC gave.
    Refused(String),
}

/// Exit codes of `nac backup|restore ... --wait` (2 is taken by usage errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitStatus {
    /// Completed (or the command needed no waiting and succeeded).
    Success = 0,
    /// The gateway or the network answered with an error.
    Error = 1,
    /// Finished with errors on some items.
    PartiallyFailed = 3,
    /// Failed, failed validation, or the spec was refused.
    Failed = 4,
    /// Still running when `--timeout` ran out.
    TimedOut = 5,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl Outcome {
    /// Reads `object` (a NonAdminBackup or NonAdminRestore as the gateway returns it).
    pub fn of(object: &Value) -> Outcome {
        let status = &object["status"];
        if status["phase"] == "BackingOff" {
            return Outcome::Refused(condition_message(status, "Accepted"));
        }
        let velero = if status.get("veleroRestore").is_some() {
            &status["veleroRestore"]["status"]
        } else {
            &status["veleroBackup"]["status"]
        };
        match velero["phase"].as_str().unwrap_or("") {
            "Completed" => Outcome::Completed,
            "PartiallyFailed" => Outcome::PartiallyFailed,
            "Failed" => Outcome::Failed(reason(velero)),
            "FailedValidation" => Outcome::Failed(
                velero["validationErrors"]
                    .as_array()
                    .map(|errors| {
                        errors
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .unwrap_or_default(),
            ),
            _ => Outcome::Running,
        }
    }

    /// Whether the job will not change any more.
    pub fn is_final(&self) -> bool {
        !matches!(self, Outcome::Running)
    }

    /// The exit status a pipeline gets for this outcome.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Outcome::Completed => ExitStatus::Success,
            Outcome::PartiallyFailed => ExitStatus::PartiallyFailed,
            Outcome::Failed(_) | Outcome::Refused(_) => ExitStatus::Failed,
            Outcome::Running => ExitStatus::TimedOut,
        }
    }

    /// One line for a pipeline's log.
    pub fn describe(&self, what: &str) -> String {
        match self {
            Outcome::Running => format!("{what} is still running"),
            Outcome::Completed => format!("{what} completed"),
            Outcome::PartiallyFailed => format!("{what} partially failed (see its logs)"),
            Outcome::Failed(why) if why.is_empty() => format!("{what} failed"),
            Outcome::Failed(why) => format!("{what} failed: {why}"),
            Outcome::Refused(why) => format!("{what} was refused: {why}"),
        }
    }
}

fn reason(velero_status: &Value) -> String {
    velero_status["failureReason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn condition_message(status: &Value, type_: &str) -> String {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn velero_phases_map_to_distinct_exit_codes() {
        let backup = |phase: &str| json!({"status": {"phase": "Created", "veleroBackup": {"status": {"phase": phase}}}});
        assert_eq!(
            Outcome::of(&backup("Completed")).exit_status(),
            ExitStatus::Success
        );
        assert_eq!(
            Outcome::of(&backup("PartiallyFailed")).exit_status(),
            ExitStatus::PartiallyFailed
        );
        assert_eq!(
            Outcome::of(&backup("Failed")).exit_status(),
            ExitStatus::Failed
        );
        assert_eq!(Outcome::of(&backup("InProgress")), Outcome::Running);
        assert_eq!(
            Outcome::of(&backup("New")).exit_status(),
            ExitStatus::TimedOut
        );
        let codes = [0u8, 1, 3, 4, 5];
        assert_eq!(
            codes,
            [
                ExitStatus::Success,
                ExitStatus::Error,
                ExitStatus::PartiallyFailed,
                ExitStatus::Failed,
                ExitStatus::TimedOut
            ]
            .map(ExitStatus::code)
        );
    }

    #[test]
    fn a_refused_spec_is_final_with_nacs_reason() {
        let refused = json!({"status": {"phase": "BackingOff", "conditions": [
            {"type": "Accepted", "status": "False", "message": "spec.backupSpec.ttl: too long"}
        ]}});
        let outcome = Outcome::of(&refused);
        assert!(outcome.is_final());
        assert_eq!(
            outcome.describe("backup team-a/x"),
            "backup team-a/x was refused: spec.backupSpec.ttl: too long"
        );
    }

    #[test]
    fn restores_are_read_from_their_velero_restore() {
        let restore = json!({"status": {"phase": "Created", "veleroRestore": {"status": {
            "phase": "FailedValidation", "validationErrors": ["backup not found", "bad mapping"]}}}});
        assert_eq!(
            Outcome::of(&restore),
            Outcome::Failed("backup not found; bad mapping".into())
        );
        assert_eq!(Outcome::of(&json!({})), Outcome::Running);
    }
}
