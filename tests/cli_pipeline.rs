//! The CI pipeline path, as a shell runs it, on the emulator and on the real kube-apiserver
//! (each case `NAME::emulator` and `NAME::real`): `nac demo` (its own emulator, or installed
//! into the real control plane with `--kubeconfig`), then the `nac backup` / `nac restore`
//! commands and `scripts/ci-backup.sh` as the ci-bot service account and alice (token in
//! `NAC_TOKEN`, server in `NAC_SERVER`), checking exit codes, output formats, logs, a restore,
//! and that another tenant is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/demo.rs"]
mod demo;
mod support;
use support::cluster::TestCluster;

use std::process::{Command, Output};

fn nac(server: &str, token: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nac"))
        .args(args)
        .env("NAC_SERVER", format!("http://{server}"))
        .env("NAC_TOKEN", token)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn ci_bot_backs_up_team_a_and_waits_for_completion(cluster: TestCluster) {
    // On the real server the demo is installed into the control plane as its admin; on the
    // emulator `nac demo` starts its own (the case's emulator stays unused).
    let admin_kubeconfig = cluster.kubeconfig("demo-admin", &cluster.user_token("admin"));
    let extra: Vec<String> = admin_kubeconfig
        .map(|path| vec!["--kubeconfig".to_string(), path.display().to_string()])
        .unwrap_or_default();
    // The pipeline is a shell's: blocking processes, one after the other.
    tokio::task::block_in_place(|| pipeline(&extra));
}

fn pipeline(extra: &[String]) {
    let xdg = tempfile::tempdir().unwrap();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let demo = demo::start(xdg.path(), &extra);
    let (server, ci_token) = demo::gateway_and_token(&demo.banner, "ci-bot");

    // The pipeline's step: create and wait; exit 0 means Completed.
    let out = nac(
        &server,
        &ci_token,
        &[
            "backup",
            "create",
            "ci-1",
            "-n",
            "team-a",
            "--wait",
            "--timeout",
            "2m",
            "-o",
            "json",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(object["metadata"]["name"], "ci-1");
    assert_eq!(
        object["status"]["veleroBackup"]["status"]["phase"],
        "Completed"
    );
    assert!(stderr.contains("backup team-a/ci-1 completed"), "{stderr}");
    assert!(!stderr.contains(&ci_token), "the token never prints");

    // The documented pipeline step, as a shell runs it: `scripts/ci-backup.sh team-a NAME`.
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_nac"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci-backup.sh"))
        .args(["team-a", "from-shell"])
        .env("PATH", path)
        .env("NAC_SERVER", format!("http://{server}"))
        .env("NAC_TOKEN", &ci_token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("backup team-a/from-shell completed"),
        "{}",
        text(&out.stdout)
    );

    // Retrying the same step with the same idempotency key does not make a second backup.
    for _ in 0..2 {
        let out = nac(
            &server,
            &ci_token,
            &[
                "backup",
                "create",
                "ci-2",
                "-n",
                "team-a",
                "--idempotency-key",
                "run-42",
                "-o",
                "name",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim(), "ci-2");
    }

    // A separate wait step: the exit code reflects the outcome.
    let out = nac(
        &server,
        &ci_token,
        &["backup", "wait", "ci-2", "-n", "team-a", "--timeout", "2m"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // alice (namespace admin) lists and reads the log; the token comes from NAC_TOKEN.
    let (_, alice) = demo::gateway_and_token(&demo.banner, "alice");
    let out = nac(
        &server,
        &alice,
        &["backup", "list", "-n", "team-a", "-o", "name"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names = text(&out.stdout);
    assert!(
        ["ci-1", "ci-2", "from-shell"]
            .iter()
            .all(|n| names.lines().any(|l| l == *n)),
        "{names}"
    );
    let out = nac(&server, &alice, &["backup", "logs", "ci-1", "-n", "team-a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).is_empty(), "the Velero log is printed");

    // ci-bot reads its own backup's log too (what scripts/ci-backup.sh does after a partial
    // failure): its role lets it create and read NonAdminDownloadRequests in team-a.
    let out = nac(
        &server,
        &ci_token,
        &["backup", "logs", "ci-1", "-n", "team-a"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).is_empty(), "the Velero log is printed");

    // ci-bot may not delete backups (that takes `patch` on nonadminbackups, which would also
    // let it rewrite any backup's spec): the refusal names the missing permission, and the
    // backup stays.
    let out = nac(
        &server,
        &ci_token,
        &["backup", "delete", "ci-2", "-n", "team-a"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("403")
            && stderr.contains("patch nonadminbackups")
            && stderr.contains("namespace team-a")
            && stderr.contains("nac-nonadmin-backup-creator"),
        "{stderr}"
    );
    let out = nac(
        &server,
        &ci_token,
        &["backup", "get", "ci-2", "-n", "team-a", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let kept: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(kept["spec"]["deleteBackup"], true, "{kept}");

    // alice restores from it and waits: exit 0 when the restore completed.
    let out = nac(
        &server,
        &alice,
        &[
            "restore",
            "create",
            "undo-1",
            "-n",
            "team-a",
            "--from-backup",
            "ci-1",
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("restore team-a/undo-1 completed"));

    // A spec the policy refuses answers at once, naming the field, with a non-zero exit.
    let spec = xdg.path().join("spec.yaml");
    std::fs::write(&spec, "includedNamespaces: [team-b]\n").unwrap();
    let out = nac(
        &server,
        &ci_token,
        &[
            "backup",
            "create",
            "bad",
            "-n",
            "team-a",
            "--from-file",
            spec.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("includedNamespaces"),
        "{}",
        text(&out.stderr)
    );

    // bob is refused in team-a, and the answer names none of team-a's backups.
    let (_, bob) = demo::gateway_and_token(&demo.banner, "bob");
    for args in [
        &["backup", "list", "-n", "team-a"][..],
        &["backup", "get", "ci-1", "-n", "team-a"][..],
        &["backup", "create", "x", "-n", "team-a"][..],
    ] {
        let out = nac(&server, &bob, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(!all.contains("ci-1") || args.contains(&"ci-1"), "{all}");
        assert!(!all.contains("ci-2"), "{all}");
    }

    // The demo serves the controllers' metrics; they counted the reconciles of those backups.
    let metrics_address = demo
        .banner
        .lines()
        .find(|l| l.contains("NAC controllers"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("http://")))
        .and_then(|u| u.strip_prefix("http://"))
        .and_then(|u| u.strip_suffix("/metrics"))
        .expect("controller metrics URL in the banner")
        .to_string();
    let mut stream = std::net::TcpStream::connect(&metrics_address).unwrap();
    std::io::Write::write_all(&mut stream, b"GET /metrics HTTP/1.0\r\nHost: demo\r\n\r\n").unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    assert!(
        answer.contains("nac_reconciles_total{controller=\"nonadminbackup\"}"),
        "{answer}"
    );

    // A bad token is refused (401) with exit 1, and the token is not echoed.
    let out = nac(&server, "not-a-token", &["backup", "list", "-n", "team-a"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!text(&out.stderr).contains("not-a-token"));
}

on_both_servers!(ci_bot_backs_up_team_a_and_waits_for_completion);
