//! Runs the `addon-proxy` demo: a hyper forward proxy built on `addon_jwt::Sidecar` in front of
//! a loopback dashboard, over real sockets. Every scenario must behave as the demo expects.

#[test]
fn addon_proxy_accepts_good_tokens_and_rejects_the_rest() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_addon-proxy"))
        .output()
        .expect("the demo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for line in [
        "ok   good token: 200 hello, jane (user headers: 1, credential seen: false)",
        "ok   expired token: 403",
        "ok   wrong audience: 403",
        "ok   forged signature: 403",
        "ok   spoofed X-Authenticated-User with a good token: 200 hello, jane (user headers: 1, credential seen: false)",
        "ok   spoofed X-Authenticated-User without a token: 403",
        "ok   two Authorization headers: 403",
        "ok   concurrent clients: 8 users x 4 requests, forged tokens between",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    // The proxy logs why it rejected, and never the token.
    assert!(
        stderr.contains("proxy: forbidden: invalid token: token has expired"),
        "{stderr}"
    );
    assert!(
        stderr.contains("proxy: forbidden: invalid token: token audience is not accepted"),
        "{stderr}"
    );
    assert!(
        stderr.contains("proxy: forbidden: invalid token: signature verification failed"),
        "{stderr}"
    );
    assert!(!stderr.contains("eyJ"), "a token reached the log: {stderr}");
}
