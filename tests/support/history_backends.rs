//! One history-store suite run against both backends: a real PostgreSQL server (a throwaway
//! cluster per test binary, a fresh database per test) and SQLite (a file in a temporary
//! directory per test). `both_backends!` turns each scenario into `postgres::<scenario>` and
//! `sqlite::<scenario>` tests. The including file declares `mod postgres_support` (from
//! `support/postgres.rs`) before this module.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use nac::history::{Backend, SharedHistory};

use crate::postgres_support::PgCluster;

/// A store plus what must live as long as it (the SQLite file's directory).
pub struct Opened {
    pub store: SharedHistory,
    _dir: Option<tempfile::TempDir>,
}

pub async fn open_postgres() -> Opened {
    let url = PgCluster::shared().fresh_database();
    let store = nac::history::open(&url).await.unwrap();
    assert_eq!(store.backend(), Backend::Postgres);
    Opened { store, _dir: None }
}

pub async fn open_sqlite() -> Opened {
    let dir = tempfile::tempdir().unwrap();
    let url = nac::history::sqlite_url_for(&dir.path().join("history.db"));
    let store = nac::history::open(&url).await.unwrap();
    assert_eq!(store.backend(), Backend::Sqlite);
    Opened {
        store,
        _dir: Some(dir),
    }
}

/// `both_backends!(scenario, ...)`: each `async fn scenario(store: SharedHistory)` of the
/// including file becomes a PostgreSQL test and a SQLite test.
macro_rules! both_backends {
    ($($scenario:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let opened = $crate::history_backends::open_postgres().await;
                    super::$scenario(opened.store.clone()).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let opened = $crate::history_backends::open_sqlite().await;
                    super::$scenario(opened.store.clone()).await;
                }
            )*
        }
    };
}
pub(crate) use both_backends;
