//! Starting the real `nac demo` binary for a test and reading its banner (gateway address,
//! demo users' tokens).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running demo, killed when dropped.
pub struct Demo {
    pub child: Child,
    pub banner: String,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `nac demo` on free ports with its data under `xdg` and waits for its banner.
pub fn start(xdg: &Path, extra: &[&str]) -> Demo {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nac"))
        .args([
            "demo",
            "--apiserver-listen",
            "127.0.0.1:0",
            "--gateway-listen",
            "127.0.0.1:0",
        ])
        .args(extra)
        .env("XDG_DATA_HOME", xdg)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut banner = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        banner.push_str(&line);
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    // Keep draining stdout so the demo never blocks on a full pipe.
    std::thread::spawn(move || for _ in reader.lines() {});
    assert!(
        banner.contains("Press Ctrl-C"),
        "demo did not start: {banner}"
    );
    Demo { child, banner }
}

/// The gateway's `host:port` and a user's token, from the demo's banner.
pub fn gateway_and_token(banner: &str, user: &str) -> (String, String) {
    let address = banner
        .lines()
        .find(|l| l.contains("NAC gateway"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("http://")))
        .and_then(|url| url.strip_prefix("http://"))
        .expect("gateway URL in the banner")
        .to_string();
    let token = banner
        .lines()
        .skip_while(|l| !l.starts_with("Gateway tokens"))
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(user)).then(|| words.next().map(str::to_string))?
        })
        .expect("the user's token in the banner");
    (address, token)
}
