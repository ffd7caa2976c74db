//! The `jws-demo` binary end to end, and the real `kubectl` reading the kubeconfig it signs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::process::Command;

const KUBECONFIG: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../crates/clusterinfo/tests/vectors/bench_kubeconfig.yaml"
));

#[test]
fn demo_signs_verifies_and_rejects_tampering() {
    let out = Command::new(env!("CARGO_BIN_EXE_jws-demo"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected_jws =
        jws_detached::sign(KUBECONFIG.as_bytes(), "07401b", b"f395accd246ae52d").unwrap();
    for line in [
        "kubeconfig: 2048 bytes, server https://control-plane.example.internal:6443, one CA certificate".to_string(),
        "token: id 07401b, secret HmacKey(<redacted>)".to_string(),
        format!("signed: jws-kubeconfig-07401b: {expected_jws}"),
        r#"  protected header {"alg":"HS256","kid":"07401b"}, payload segment empty (detached), 43-character HS256 signature"#.to_string(),
        "verified (Kubernetes mode: byte-identical to what kubeadm join recomputes)".to_string(),
        "prepared payload: signed and verified jws-kubeconfig-9a08jv".to_string(),
        "rejected: kubeconfig with a different server URL: signature does not match".to_string(),
        "rejected: kubeconfig with one extra trailing newline: signature does not match".to_string(),
        "rejected: signature checked with the wrong token secret: signature does not match".to_string(),
        "rejected: signature presented for another token id: protected header is not the canonical Kubernetes header for the expected kid".to_string(),
        "rejected: full compact JWS instead of the detached form: payload segment is not empty: a detached JWS has the form header..signature".to_string(),
        "rejected: signing with an empty token secret: HMAC key is empty".to_string(),
        "jws-demo: all checks passed".to_string(),
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in:\n{stdout}");
    }
    assert!(stdout.contains("rejected: signature with one character changed: "));
    // The token secret is never printed.
    assert!(!stdout.contains("f395accd246ae52d"), "{stdout}");
}

/// The signed content is a kubeconfig the real client reads: kubectl sees the same cluster.
#[test]
fn kubectl_reads_the_signed_kubeconfig() {
    let path = std::env::temp_dir().join(format!("jws-demo-{}.kubeconfig", std::process::id()));
    std::fs::write(&path, KUBECONFIG).unwrap();
    let out = Command::new("kubectl")
        .args([
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ])
        .arg("--kubeconfig")
        .arg(&path)
        .output()
        .expect("kubectl must be installed: the interop test runs the real client");
    std::fs::remove_file(&path).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "https://control-plane.example.internal:6443"
    );
}
