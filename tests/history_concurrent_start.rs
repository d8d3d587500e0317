//! Several processes starting together on one history store (issue 22): the controller, gateway
//! replicas and `nac migrate` Jobs all migrate at startup, and on a fresh store or an older one
//! every one of them must come up, with each migration applied exactly once. Real `nac migrate`
//! processes against a SQLite file and a throwaway PostgreSQL database, plus concurrent
//! in-process opens.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/postgres.rs"]
mod postgres_support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use postgres_support::PgCluster;
use sqlx::Row;

/// Processes started together per round.
const PROCESSES: usize = 6;
/// Rounds per test: the race is a matter of milliseconds, so one round may miss it.
const ROUNDS: usize = 5;

/// The number of migration files of a backend (`migrations/<backend>`).
fn migration_files(backend: &str) -> i64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend);
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count() as i64
}

/// Starts `PROCESSES` `nac migrate` on `url` at once (all spawned before any is waited for)
/// and returns their outputs.
fn migrate_together(url: &str) -> Vec<Output> {
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_nac"))
                .args(["migrate", "--database-url", url])
                .env_remove("NAC_DATABASE_URL")
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn nac migrate")
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait for nac migrate"))
        .collect()
}

fn assert_all_succeeded(outputs: &[Output], round: usize) {
    for (i, out) in outputs.iter().enumerate() {
        assert!(
            out.status.success(),
            "round {round}, process {i} of {PROCESSES}: nac migrate exited with {}\n\
             stdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
    }
}

/// Each migration recorded once, all successful, and the newest schema in place.
async fn assert_sqlite_schema_complete(url: &str) {
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let row = sqlx::query("SELECT COUNT(*), COALESCE(SUM(success), 0) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    let (count, successes): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(count, migration_files("sqlite"), "migrations recorded");
    assert_eq!(successes, count, "every recorded migration succeeded");
    // The last migration's column and the second one's table are there.
    sqlx::query("SELECT namespace_uid FROM operations LIMIT 1")
        .fetch_optional(&pool)
        .await
        .unwrap();
    sqlx::query("SELECT COUNT(*) FROM manifests")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn sqlite_processes_starting_together_on_a_fresh_file_all_come_up() {
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let url = nac::history::sqlite_url_for(&dir.path().join("history.db"));
        assert_all_succeeded(&migrate_together(&url), round);
        assert_sqlite_schema_complete(&url).await;
    }
}

#[tokio::test]
async fn sqlite_processes_starting_together_on_an_older_store_all_come_up() {
    let migrator = sqlx::migrate!("migrations/sqlite");
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let url = nac::history::sqlite_url_for(&dir.path().join("history.db"));
        // A store left by a release that knew only the first migration.
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        migrator.run_to(1, &pool).await.unwrap();
        let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(applied, 1);
        pool.close().await;

        assert_all_succeeded(&migrate_together(&url), round);
        assert_sqlite_schema_complete(&url).await;
    }
}

/// Each migration recorded once, all successful, and the newest schema in place.
async fn assert_postgres_schema_complete(url: &str) {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .unwrap();
    let row = sqlx::query("SELECT COUNT(*), COUNT(*) FILTER (WHERE success) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    let (count, successes): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!(count, migration_files("postgres"), "migrations recorded");
    assert_eq!(successes, count, "every recorded migration succeeded");
    sqlx::query("SELECT namespace_uid FROM operations LIMIT 1")
        .fetch_optional(&pool)
        .await
        .unwrap();
    sqlx::query("SELECT COUNT(*) FROM manifests")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn postgres_processes_starting_together_on_a_fresh_database_all_come_up() {
    for round in 0..ROUNDS {
        let url = PgCluster::shared().fresh_database();
        assert_all_succeeded(&migrate_together(&url), round);
        assert_postgres_schema_complete(&url).await;
    }
}

#[tokio::test]
async fn postgres_processes_starting_together_on_an_older_database_all_come_up() {
    let migrator = sqlx::migrate!("migrations/postgres");
    for round in 0..ROUNDS {
        let url = PgCluster::shared().fresh_database();
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        migrator.run_to(1, &pool).await.unwrap();
        pool.close().await;

        assert_all_succeeded(&migrate_together(&url), round);
        assert_postgres_schema_complete(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_opens_joined_in_one_process_all_succeed() {
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let url = nac::history::sqlite_url_for(&dir.path().join("history.db"));
        let opened = futures::future::join_all((0..PROCESSES).map(|_| {
            let url = url.clone();
            // Each on its own task, so they really run at the same time.
            tokio::spawn(async move { nac::history::open(&url).await })
        }))
        .await;
        for (i, result) in opened.into_iter().enumerate() {
            if let Err(e) = result.unwrap() {
                panic!("round {round}, open {i} of {PROCESSES}: {e}");
            }
        }
        assert_sqlite_schema_complete(&url).await;
    }
}
