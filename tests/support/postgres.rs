//! A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` in a temporary directory,
//! `pg_ctl start` on a free loopback port with trust authentication and fsync off, one fresh
//! database per test. Needs the server binaries (`apt-get install postgresql`; scripts/test.sh
//! installs them); without them it panics saying so.
//!
//! Use it with `#[path = "support/postgres.rs"] mod postgres_support;`. [`PgCluster::shared`]
//! serves a whole test binary; a test that stops the server ([`PgCluster::stop`]) must start
//! its own with [`PgCluster::start`] so it does not pull the database from under the others.
//!
//! initdb refuses to run as root, so as root the directory is handed to the `postgres` user and
//! `initdb`/`pg_ctl` run through `runuser -u postgres --`. A watchdog shell (in its own process
//! group) stops the server and removes the directory when the test process exits, however it
//! exits, since a `static` cluster is never dropped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A running throwaway cluster; stopped and deleted when dropped.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    as_postgres_user: bool,
    watchdog: Option<Child>,
}

static SHARED: OnceLock<PgCluster> = OnceLock::new();
static NEXT_DATABASE: AtomicUsize = AtomicUsize::new(0);

const INSTALL_HINT: &str = "PostgreSQL server binaries (initdb, pg_ctl) not found under \
     /usr/lib/postgresql/*/bin, in $NAC_TEST_PG_BIN or via pg_config: install them with \
     `sudo apt-get install -y postgresql` (scripts/test.sh does it for you)";

/// The directory holding `initdb` and `pg_ctl`: `$NAC_TEST_PG_BIN`, else the newest
/// /usr/lib/postgresql/<version>/bin, else `pg_config --bindir`.
pub fn find_bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("NAC_TEST_PG_BIN").map(PathBuf::from) {
        return has_tools(&dir).then_some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_tools(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    has_tools(&dir).then_some(dir)
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

impl PgCluster {
    /// The cluster shared by every test of this binary (started on first use).
    pub fn shared() -> &'static PgCluster {
        SHARED.get_or_init(PgCluster::start)
    }

    /// Starts a new cluster of its own (initdb + start, a few seconds).
    pub fn start() -> PgCluster {
        let bin = find_bin_dir().unwrap_or_else(|| panic!("{INSTALL_HINT}"));
        let as_postgres_user = running_as_root();
        let root = tempfile::Builder::new()
            .prefix("nac-pg-")
            .tempdir()
            .expect("temporary directory for PostgreSQL")
            .keep();
        std::fs::create_dir_all(root.join("sock")).unwrap();
        if as_postgres_user {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&root)
                .status()
                .expect("chown");
            assert!(
                status.success(),
                "running as root, the test cluster's directory must belong to the `postgres` \
                 user (initdb refuses root), but `chown postgres {}` failed: is there a \
                 `postgres` user? (installing the postgresql package creates it)",
                root.display()
            );
        }
        let mut cluster = PgCluster {
            bin,
            root,
            port: 0,
            as_postgres_user,
            watchdog: None,
        };
        // Before anything can fail: the directory goes away whatever happens next.
        cluster.watchdog = cluster.spawn_watchdog();
        let data = cluster.data_dir();
        let out = cluster
            .tool("initdb")
            .arg("-D")
            .arg(&data)
            .args(["--auth=trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
            .args(["--locale=C"])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Another process may take the port between picking and binding it: try a few.
        let mut last_error = String::new();
        for _ in 0..5 {
            cluster.port = free_port();
            match cluster.pg_ctl_start() {
                Ok(()) => return cluster,
                Err(e) => last_error = e,
            }
        }
        panic!("could not start the test PostgreSQL: {last_error}");
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` (user `postgres`, no password: trust authentication).
    pub fn url_for(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a database with a unique name and returns its URL.
    pub fn fresh_database(&self) -> String {
        let n = NEXT_DATABASE.fetch_add(1, Ordering::Relaxed);
        let name = format!("t_{}_{n}", std::process::id());
        let mut last = String::new();
        // Concurrent CREATE DATABASE may briefly contend for template1: retry.
        for attempt in 0..10 {
            let out = Command::new(self.bin.join("psql"))
                .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U"])
                .args([
                    "postgres",
                    "-d",
                    "postgres",
                    "-p",
                    &self.port.to_string(),
                    "-c",
                ])
                .arg(format!("CREATE DATABASE {name}"))
                .stdin(Stdio::null())
                .output()
                .expect("run psql");
            if out.status.success() {
                return self.url_for(&name);
            }
            last = String::from_utf8_lossy(&out.stderr).to_string();
            std::thread::sleep(Duration::from_millis(100 * (attempt + 1)));
        }
        panic!("CREATE DATABASE {name} failed: {last}");
    }

    /// Stops the server (`pg_ctl stop -m fast`), keeping its data and port.
    pub fn stop(&self) {
        let out = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["stop", "-m", "fast", "-w"])
            .output()
            .expect("run pg_ctl stop");
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server again on the same port after [`PgCluster::stop`].
    pub fn start_again(&self) {
        if let Err(e) = self.pg_ctl_start() {
            panic!("could not restart the test PostgreSQL: {e}");
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// A command for a server tool, run as `postgres` when we are root.
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut cmd = if self.as_postgres_user {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        // The `postgres` user may not be able to enter our working directory.
        cmd.current_dir(&self.root).stdin(Stdio::null());
        cmd
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let options = format!(
            "-k {} -h 127.0.0.1 -p {} -F -c max_connections=300 -c shared_buffers=64MB",
            self.root.join("sock").display(),
            self.port
        );
        // The log file keeps the server's output off our pipes (`output()` would wait on them).
        let out = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-o")
            .arg(options)
            .arg("-l")
            .arg(self.root.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .map_err(|e| format!("run pg_ctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            let log = std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default();
            Err(format!(
                "pg_ctl start failed: {}{}\n{log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// A shell that waits for this process to exit, then stops the server and removes the
    /// directory: the cleanup of clusters kept in a `static` (never dropped).
    fn spawn_watchdog(&self) -> Option<Child> {
        let pg_ctl = self.bin.join("pg_ctl");
        let stop = if self.as_postgres_user {
            "runuser -u postgres -- \"$3\" -D \"$2/data\" stop -m immediate -w"
        } else {
            "\"$3\" -D \"$2/data\" stop -m immediate -w"
        };
        let script = format!(
            "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; \
             rm -rf \"$2\""
        );
        // Its own process group: killing the test's group (Ctrl-C, a timeout) must not take
        // the cleanup down with it. The server is safe too: pg_ctl starts it in a new session.
        Command::new("sh")
            .process_group(0)
            .arg("-c")
            .arg(script)
            .arg("nac-pg-watchdog")
            .arg(std::process::id().to_string())
            .arg(&self.root)
            .arg(pg_ctl)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["stop", "-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
