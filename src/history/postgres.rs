//! The Postgres history store (production): an sqlx pool that fails fast when the server is
//! away, migrations from `migrations/postgres`, and every operation from [`SqlCore`].

use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

use super::sql::{SqlCore, sql_history_store};
use super::{Backend, HistoryError};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// Connections per store: the recorder writes on one, gateway reads use the rest.
const MAX_CONNECTIONS: u32 = 10;
/// How long connecting, or waiting for a free connection, may take: short, so an outage
/// surfaces as [`HistoryError::Unavailable`] within seconds instead of hanging requests.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The history store on Postgres.
#[derive(Debug, Clone)]
pub struct PostgresHistoryStore {
    core: SqlCore,
}

impl PostgresHistoryStore {
    /// Connects to `postgres://…` (one connection is opened now, so a wrong URL or an
    /// unreachable server is reported here). Does not migrate.
    pub async fn connect(url: &str) -> Result<Self, HistoryError> {
        if Backend::from_url(url)? != Backend::Postgres {
            return Err(HistoryError::UnsupportedUrl(super::redact_url(url)));
        }
        let options = AnyPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .idle_timeout(Duration::from_secs(300));
        let core = SqlCore::connect(url, Backend::Postgres, options, &MIGRATOR).await?;
        Ok(Self { core })
    }

    /// The shared SQL implementation (the benchmark's one-row-at-a-time baseline is there).
    pub fn core(&self) -> &SqlCore {
        &self.core
    }
}

sql_history_store!(PostgresHistoryStore);
