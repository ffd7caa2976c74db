//! The installed `kubectl` as the oracle: the Secret we build for a token must be, as JSON, the
//! Secret `kubectl create secret generic ... --dry-run=client -o json` prints for the same data,
//! and we must read kubectl's JSON and YAML back to the same Secret.
//!
//! In CI (`CI=true`) a missing kubectl fails the test; elsewhere it prints a skip notice.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{BootstrapToken, KubeadmToken, SecretObject};
use serde_json::Value;

fn kubectl_available() -> bool {
    let found = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required in CI (the interop test runs the real client)"
        );
        eprintln!("SKIPPED: kubectl not found on PATH; the kubectl interop test did not run");
    }
    found
}

fn kubectl_secret(secret: &SecretObject, output: &str) -> Vec<u8> {
    let mut cmd = Command::new("kubectl");
    cmd.args([
        "create",
        "secret",
        "generic",
        secret.name(),
        "-n",
        secret.namespace(),
        &format!("--type={}", secret.secret_type()),
        "--dry-run=client",
        "-o",
        output,
    ]);
    for (k, v) in secret.data_map().unwrap() {
        cmd.arg(format!(
            "--from-literal={k}={}",
            std::str::from_utf8(v).unwrap()
        ));
    }
    // No cluster is involved: client-side dry run only.
    cmd.env("KUBECONFIG", "/dev/null");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn tokens() -> Vec<KubeadmToken> {
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let mut seed = 7u8;
    let mut rng = |b: &mut [u8]| {
        for x in b {
            seed = seed.wrapping_mul(73).wrapping_add(41);
            *x = seed;
        }
    };
    let mut out = Vec::new();
    let fixed: BootstrapToken = "abcdef.0123456789abcdef".parse().unwrap();
    out.push(KubeadmToken::new(Some(fixed)).with_defaults());
    let mut t = KubeadmToken::new(Some(BootstrapToken::generate_with(&mut rng).unwrap()));
    t.description = "node pool 2 — ünïcode, commas, spaces".into();
    t.ttl = Some(Duration::ZERO);
    t.usages = vec!["signing".into()];
    out.push(t);
    let mut t = KubeadmToken::new(Some(BootstrapToken::generate_with(&mut rng).unwrap()));
    t.expires = Some(now + Duration::from_secs(90 * 86_400));
    t.usages = vec!["authentication".into(), "signing".into()];
    t.groups = vec![
        "system:bootstrappers:worker".into(),
        "system:bootstrappers:kubeadm:default-node-token".into(),
    ];
    out.push(t);
    out
}

fn normalise(mut v: Value) -> Value {
    // kubectl prints `"creationTimestamp": null`, which a Secret without one also means.
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|_, x| !x.is_null());
    }
    v
}

#[cfg(feature = "yaml")]
#[test]
fn our_secret_equals_kubectls() {
    if !kubectl_available() {
        return;
    }
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    for kt in tokens() {
        let ours = kt.to_secret_object(now).unwrap();
        let theirs_json = kubectl_secret(&ours, "json");
        let theirs: Value = normalise(serde_json::from_slice(&theirs_json).unwrap());
        let mine: Value = serde_json::from_str(&ours.to_json().unwrap()).unwrap();
        assert_eq!(mine, theirs, "JSON differs for {}", ours.name());
        // And we read kubectl's output back to the same Secret.
        assert_eq!(SecretObject::from_json(&theirs_json).unwrap(), ours);
        let theirs_yaml = kubectl_secret(&ours, "yaml");
        assert_eq!(SecretObject::from_yaml(&theirs_yaml).unwrap(), ours);
    }
}
