//! Audit log of the emulator: who did what to which resource, with the answer's code. Kept in a
//! bounded ring and optionally appended as JSON lines to a file.
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// One audited request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub time: String,
    pub user: String,
    pub verb: String,
    /// `group/resource[/subresource]`, or the path of a non-resource request.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub code: u16,
    pub latency_ms: u64,
}

/// The log: a ring of recent entries plus an optional file.
#[derive(Debug)]
pub struct AuditLog {
    recent: Mutex<VecDeque<AuditEntry>>,
    capacity: usize,
    file: Option<Mutex<std::fs::File>>,
}

impl AuditLog {
    /// A log keeping `capacity` entries in memory and appending to `file` when given.
    pub fn new(capacity: usize, file: Option<&Path>) -> std::io::Result<Self> {
        let file = match file {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            )),
            None => None,
        };
        Ok(AuditLog {
            recent: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            file,
        })
    }

    /// Records one entry.
    pub fn record(&self, entry: AuditEntry) {
        if let Some(f) = &self.file
            && let (Ok(mut f), Ok(line)) = (f.lock(), serde_json::to_string(&entry))
        {
            // The audit file is best effort: a full disk must not fail API requests.
            let _ = writeln!(f, "{line}");
        }
        if let Ok(mut r) = self.recent.lock() {
            if r.len() == self.capacity {
                r.pop_front();
            }
            r.push_back(entry);
        }
    }

    /// The retained entries, oldest first.
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.recent
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn entry(code: u16) -> AuditEntry {
        AuditEntry {
            time: "t".into(),
            user: "alice".into(),
            verb: "get".into(),
            resource: "/secrets".into(),
            namespace: "a".into(),
            name: "s".into(),
            code,
            latency_ms: 1,
        }
    }

    #[test]
    fn ring_is_bounded_and_file_gets_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(2, Some(&path)).unwrap();
        for c in [200, 403, 404] {
            log.record(entry(c));
        }
        let codes: Vec<u16> = log.entries().iter().map(|e| e.code).collect();
        assert_eq!(codes, vec![403, 404]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        let first: AuditEntry = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first.code, 200);
    }
}
