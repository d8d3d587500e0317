//! The SQLite history store (embedded default): a file next to NAC (its directory is
//! created), WAL journal so reads never wait for the recorder, migrations from
//! `migrations/sqlite` (processes sharing the file take turns on `<file>.migrate.lock`), and
//! every operation from [`SqlCore`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Executor;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

use super::sql::{SqlCore, sql_history_store};
use super::{Backend, HistoryError};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// Connections per store: SQLite serializes writers anyway; a few let reads run beside them.
const MAX_CONNECTIONS: u32 = 4;
/// How long waiting for a free connection may take.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The history store on SQLite.
#[derive(Debug, Clone)]
pub struct SqliteHistoryStore {
    core: SqlCore,
}

impl SqliteHistoryStore {
    /// Opens `sqlite://path` (`sqlite:///abs/path`, `sqlite://relative`, `sqlite:path`; see
    /// [`super::sqlite_url_for`]), creating the file and its directory when missing (a URL
    /// without a `mode` opens read-write-create; an explicit `mode=ro`/`rw` is kept). Every
    /// connection runs with journal_mode=WAL, busy_timeout=5000 (writers wait for each other
    /// instead of failing), synchronous=NORMAL (safe with WAL) and foreign_keys=ON. An
    /// in-memory database (`sqlite::memory:`) keeps one connection, since each connection
    /// would otherwise see its own empty database. Does not migrate; migrating a file takes
    /// `<file>.migrate.lock` (created next to it) so processes sharing the file take turns.
    pub async fn connect(url: &str) -> Result<Self, HistoryError> {
        if Backend::from_url(url)? != Backend::Sqlite {
            return Err(HistoryError::UnsupportedUrl(super::redact_url(url)));
        }
        let (path, in_memory) = file_of(url);
        if let Some(parent) = path.as_deref().and_then(Path::parent)
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                HistoryError::Unavailable(format!(
                    "cannot create the directory {} of the history database: {e}",
                    parent.display()
                ))
            })?;
        }
        let mut options = AnyPoolOptions::new()
            .max_connections(if in_memory { 1 } else { MAX_CONNECTIONS })
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // busy_timeout first: switching to WAL may wait for another connection.
                    for pragma in [
                        "PRAGMA busy_timeout = 5000",
                        "PRAGMA journal_mode = WAL",
                        "PRAGMA synchronous = NORMAL",
                        "PRAGMA foreign_keys = ON",
                    ] {
                        conn.execute(pragma).await?;
                    }
                    Ok(())
                })
            });
        if in_memory {
            // The database lives as long as its only connection: never let it be closed.
            options = options
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        let lock = path
            .as_deref()
            .filter(|_| !read_only(url))
            .map(migrate_lock_of);
        let url = creating_file(url, in_memory);
        let mut core = SqlCore::connect(&url, Backend::Sqlite, options, &MIGRATOR).await?;
        // Processes sharing the file take turns migrating (an in-memory database has one
        // process; a read-only one cannot apply anything).
        if let Some(lock) = lock {
            core = core.with_migrate_lock(lock);
        }
        Ok(Self { core })
    }

    /// The shared SQL implementation (the benchmark's one-row-at-a-time baseline is there).
    pub fn core(&self) -> &SqlCore {
        &self.core
    }
}

sql_history_store!(SqliteHistoryStore);

/// `url` with `mode=rwc` (create the file when missing) unless it is in memory or already
/// says which mode: sqlx opens a SQLite file read-write without creating it by default, so
/// `sqlite:///path/to/new.db` failed with "unable to open database file".
fn creating_file(url: &str, in_memory: bool) -> std::borrow::Cow<'_, str> {
    let query = url.split_once('?').map(|(_, query)| query);
    let has_mode = query.is_some_and(|q| q.split('&').any(|pair| pair.starts_with("mode=")));
    match query {
        _ if in_memory || has_mode => std::borrow::Cow::Borrowed(url),
        Some("") => format!("{url}mode=rwc").into(),
        Some(_) => format!("{url}&mode=rwc").into(),
        None => format!("{url}?mode=rwc").into(),
    }
}

/// Whether a SQLite URL opens its file read-only (`mode=ro`).
fn read_only(url: &str) -> bool {
    url.split_once('?')
        .is_some_and(|(_, query)| query.split('&').any(|pair| pair == "mode=ro"))
}

/// The lock file migrating processes take turns on: `<database>.migrate.lock`, next to the
/// database (SQLite's own locks are per transaction, and sqlx's migrator spans several).
fn migrate_lock_of(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".migrate.lock");
    PathBuf::from(name)
}

/// The file a SQLite URL names (None for an in-memory database), and whether it is in memory.
fn file_of(url: &str) -> (Option<PathBuf>, bool) {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory =
        path.is_empty() || path == ":memory:" || query.split('&').any(|pair| pair == "mode=memory");
    if in_memory {
        (None, true)
    } else {
        (Some(PathBuf::from(path)), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_memory_databases() {
        let (path, memory) = file_of("sqlite:///var/lib/nac/history.db?mode=rwc");
        assert_eq!(path.as_deref(), Some(Path::new("/var/lib/nac/history.db")));
        assert!(!memory);
        assert_eq!(
            file_of("sqlite:relative.db").0.as_deref(),
            Some(Path::new("relative.db"))
        );
        assert!(file_of("sqlite::memory:").1);
        assert!(file_of("sqlite://x.db?mode=memory&cache=shared").1);
    }

    #[test]
    fn the_migration_lock_sits_next_to_the_database() {
        assert_eq!(
            migrate_lock_of(Path::new("/var/lib/nac/history.db")),
            Path::new("/var/lib/nac/history.db.migrate.lock")
        );
        assert_eq!(
            migrate_lock_of(Path::new("history.db")),
            Path::new("history.db.migrate.lock")
        );
        assert!(read_only("sqlite:///x.db?cache=shared&mode=ro"));
        assert!(!read_only("sqlite:///x.db?mode=rwc"));
        assert!(!read_only("sqlite:///mode=ro.db"));
    }

    #[test]
    fn file_urls_create_their_file_unless_they_say_otherwise() {
        assert_eq!(
            creating_file("sqlite:///var/lib/nac/new.db", false),
            "sqlite:///var/lib/nac/new.db?mode=rwc"
        );
        assert_eq!(
            creating_file("sqlite:new.db", false),
            "sqlite:new.db?mode=rwc"
        );
        assert_eq!(
            creating_file("sqlite://new.db?cache=shared", false),
            "sqlite://new.db?cache=shared&mode=rwc"
        );
        assert_eq!(
            creating_file("sqlite://new.db?", false),
            "sqlite://new.db?mode=rwc"
        );
        for kept in ["sqlite://x.db?mode=ro", "sqlite://x.db?mode=rwc"] {
            assert_eq!(creating_file(kept, false), kept);
        }
        assert_eq!(creating_file("sqlite::memory:", true), "sqlite::memory:");
    }
}
