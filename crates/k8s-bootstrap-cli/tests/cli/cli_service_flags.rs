//! The services' duration flags (`controllers`, `forward-proxy`): a negative or zero duration is
//! a usage error (exit 2) that names the flag and says why, before anything starts; a negative
//! one is not taken for an unknown flag (clap's "use `-- -1`").
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code fails loudly"
)]

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap()
}

fn refused(args: &[&str], flag: &str, value: &str, why: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(&format!(
            "invalid value '{value}' for '{flag} <DURATION>': {why}"
        )),
        "{args:?}: {err}"
    );
    assert!(!err.contains("-- -1"), "{args:?}: {err}");
}

#[test]
fn controllers_durations_are_positive() {
    for flag in [
        "--leader-elect-lease-duration",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
    ] {
        refused(
            &["controllers", flag, "-1s"],
            flag,
            "-1s",
            "must be positive",
        );
        refused(
            &["controllers", flag, "0s"],
            flag,
            "0s",
            "must be longer than 0s",
        );
    }
}

#[test]
fn forward_proxy_durations_are_positive() {
    let base = [
        "forward-proxy",
        "--forward=127.0.0.1:1",
        "--issuer=https://kubernetes.default.svc",
        "--audience=a/b",
        "--public-key-file=/nonexistent/key.pem",
    ];
    for flag in [
        "--request-timeout",
        "--max-connection-duration",
        "--reload-interval",
        "--audience-refresh-interval",
    ] {
        for (value, why) in [
            ("-1s", "must be positive"),
            ("0s", "must be longer than 0s"),
        ] {
            let mut args = base.to_vec();
            args.extend([flag, value]);
            refused(&args, flag, value, why);
        }
    }
}
