//! A real S3-compatible server for tests (`s3s-fs`, which checks SigV4 signatures and keeps
//! objects as files), which a test can take down and bring back on the same port with the same
//! buckets, and a listener that counts who knocks on its port while it is down.
//! `scripts/test.sh` installs `s3s-fs`; without it [`S3Server::start`] says why and gives `None`.
//!
//! `s3s-fs` keeps each object's metadata in a file named after the base64 of bucket and key, so
//! keys longer than about 170 bytes fail there (500, "File name too long") though S3 takes 1,024:
//! tests using it keep namespace and backup names short.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "AK";
pub const SECRET_KEY: &str = "SK";

/// A running (or stopped) `s3s-fs`; killed when dropped.
pub struct S3Server {
    binary: PathBuf,
    child: Option<Child>,
    pub port: u16,
    pub root: tempfile::TempDir,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn find_s3s_fs() -> Option<PathBuf> {
    let home_bin = std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo/bin"));
    let path_dirs = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(home_bin)
        .map(|dir| dir.join("s3s-fs"))
        .find(|candidate| candidate.is_file())
}

impl S3Server {
    /// Starts `s3s-fs` on a free port with the given bucket directories; `None` (after a line
    /// saying so) when it is not installed.
    pub fn start(buckets: &[&str]) -> Option<S3Server> {
        let Some(binary) = find_s3s_fs() else {
            println!("SKIPPED: s3s-fs not installed (scripts/test.sh installs it)");
            return None;
        };
        // The port was free a moment ago; another process grabbing it in between makes the
        // server exit, so try a few.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let root = tempfile::tempdir().unwrap();
            for bucket in buckets {
                std::fs::create_dir(root.path().join(bucket)).unwrap();
            }
            let mut server = S3Server {
                binary: binary.clone(),
                child: None,
                port,
                root,
            };
            if server.spawn() {
                return Some(server);
            }
        }
        panic!("s3s-fs did not start");
    }

    /// The endpoint, as a BSL's `s3Url` names it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.root.path().join(bucket)
    }

    /// Kills the server: its port refuses connections until [`S3Server::resume`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port with the same buckets and objects.
    pub fn resume(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        // The port may still be held for a moment by what listened on it meanwhile.
        while !self.spawn() {
            assert!(
                Instant::now() < deadline,
                "s3s-fs did not start again on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn spawn(&mut self) -> bool {
        let mut child = Command::new(&self.binary)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(self.root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start s3s-fs");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                self.child = Some(child);
                return true;
            }
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

/// A listener on a stopped server's port that accepts each connection and closes it at once
/// (the client sees the store unreachable) and counts them: how often clients try while the
/// store is down. Stops listening when dropped.
pub struct KnockCounter {
    knocks: Arc<AtomicU64>,
    /// When each came, from the listener's start.
    times: Arc<std::sync::Mutex<Vec<Duration>>>,
    task: tokio::task::JoinHandle<()>,
}

impl KnockCounter {
    pub async fn listen(port: u16) -> KnockCounter {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                Ok(listener) => break listener,
                Err(error) => {
                    assert!(Instant::now() < deadline, "binding port {port}: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let knocks = Arc::new(AtomicU64::new(0));
        let times = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counted, timed, start) = (knocks.clone(), times.clone(), Instant::now());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::Relaxed);
                timed.lock().unwrap().push(start.elapsed());
                drop(stream);
            }
        });
        KnockCounter {
            knocks,
            times,
            task,
        }
    }

    /// The attempts per whole second since the listener started (`[3, 0, 1, ...]`).
    pub fn per_second(&self) -> Vec<usize> {
        let times = self.times.lock().unwrap();
        let last = times.last().map_or(0, |t| t.as_secs() as usize);
        let mut counts = vec![0; last + 1];
        for t in times.iter() {
            counts[t.as_secs() as usize] += 1;
        }
        counts
    }

    pub fn knocks(&self) -> u64 {
        self.knocks.load(Ordering::Relaxed)
    }
}

impl Drop for KnockCounter {
    fn drop(&mut self) {
        self.task.abort();
    }
}
