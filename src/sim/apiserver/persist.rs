//! Persistence of emulator state under `--data-dir`: one JSON snapshot written atomically, so a
//! restarted `nac demo` keeps its objects, tokens and resourceVersions.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::state::{State, TokenRecord};
use super::store::ObjectKey;

const SNAPSHOT_FILE: &str = "emulator-state.json";
const ADMIN_TOKEN_FILE: &str = "admin.token";

/// Why the data directory, or the state saved in it, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("cannot use data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot load saved state {path}: {reason}")]
    Snapshot { path: PathBuf, reason: String },
}

/// Everything saved.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub resource_version: u64,
    pub objects: Vec<SavedObject>,
    /// Token digests only; plain tokens live in the kubeconfig files.
    pub tokens: std::collections::BTreeMap<String, TokenRecord>,
}

/// One stored object with its key.
#[derive(Debug, Serialize, Deserialize)]
pub struct SavedObject {
    pub key: ObjectKey,
    pub object: Value,
}

/// Captures the state.
pub fn snapshot(state: &State) -> Snapshot {
    Snapshot {
        resource_version: state.store.resource_version(),
        objects: state
            .store
            .all()
            .map(|(k, v)| SavedObject {
                key: k.clone(),
                object: (**v).clone(),
            })
            .collect(),
        tokens: state.tokens.clone(),
    }
}

/// Writes a snapshot atomically (temporary file, then rename).
pub fn write(dir: &Path, snapshot: &Snapshot) -> Result<(), PersistError> {
    let io = |source| PersistError::DataDir {
        path: dir.to_path_buf(),
        source,
    };
    let tmp = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
    let bytes = serde_json::to_vec(snapshot).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, dir.join(SNAPSHOT_FILE)).map_err(io)
}

/// Loads a snapshot into `state`; `false` when none was saved.
pub fn load(dir: &Path, state: &mut State) -> Result<bool, PersistError> {
    let path = dir.join(SNAPSHOT_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(PersistError::DataDir { path, source }),
    };
    let snapshot: Snapshot =
        serde_json::from_slice(&bytes).map_err(|e| PersistError::Snapshot {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    state.store.restore(
        snapshot.resource_version,
        snapshot
            .objects
            .into_iter()
            .map(|o| (o.key, o.object))
            .collect(),
    );
    state.tokens = snapshot.tokens;
    state.rebuild_derived();
    Ok(true)
}

/// The admin token saved by an earlier run.
pub fn read_admin_token(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(ADMIN_TOKEN_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Saves the admin token (mode 0600 where supported).
pub fn write_admin_token(dir: &Path, token: &str) -> std::io::Result<()> {
    write_private(&dir.join(ADMIN_TOKEN_FILE), token.as_bytes())
}

/// Writes a file only its owner can read (tokens, keys, kubeconfigs).
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(contents)
}
