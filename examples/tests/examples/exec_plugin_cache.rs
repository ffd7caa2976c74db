//! The `exec-plugin` example's opt-in on-disk cache (the crate's `CacheKey`/`CacheEntry`
//! format): a second run answers from the cache, the file is private, and another identity
//! (different cluster) gets its own entry.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use exec_credential::{ApiVersion, Cluster, ExecCredential, ExecCredentialSpec};

fn run_plugin(cache: &Path, record: &Path, server: &str) -> String {
    let req = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(Cluster::new(server)), false),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_exec-plugin"))
        .env("KUBERNETES_EXEC_INFO", req.to_exec_info())
        .env("EXEC_PLUGIN_CACHE_DIR", cache)
        .env("EXEC_PLUGIN_RECORD", record)
        .env("EXEC_PLUGIN_EXPIRES_IN", "3600")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resp = ExecCredential::from_plugin_output(&out.stdout).unwrap();
    assert_eq!(resp.api_version(), ApiVersion::V1);
    resp.status()
        .unwrap()
        .bearer_token()
        .unwrap()
        .expose_secret()
        .to_owned()
}

#[test]
fn second_run_answers_from_the_private_cache() {
    let dir = std::env::temp_dir().join(format!("exec-plugin-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("cache");
    let record = dir.join("record");

    assert_eq!(
        run_plugin(&cache, &record, "https://a:6443"),
        "exec-token-1"
    );
    // Same identity: the cached token, not a new one.
    assert_eq!(
        run_plugin(&cache, &record, "https://a:6443"),
        "exec-token-1"
    );
    // Another cluster is another identity.
    assert_eq!(
        run_plugin(&cache, &record, "https://b:6443"),
        "exec-token-3"
    );

    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    for e in entries {
        let mode = std::fs::metadata(&e).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", e.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
