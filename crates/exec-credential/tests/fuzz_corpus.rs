//! Replays every checked-in fuzz seed through the same entry points as the fuzz targets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{ApiVersion, CacheEntry, CacheKey, Error, ExecCredential};

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus")).join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds for {target}");
    out
}

#[test]
fn plugin_output_seeds() {
    let mut accepted = 0;
    for (path, data) in seeds("exec_credential_plugin_output") {
        let Ok(cred) = ExecCredential::from_plugin_output(&data) else {
            continue;
        };
        let json = cred.to_json();
        let again = match ExecCredential::from_plugin_output(json.as_bytes()) {
            Ok(a) => a,
            Err(Error::InvalidExpiration { .. }) => continue,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        assert_eq!(again.to_json(), json, "{}", path.display());
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for v in [ApiVersion::V1, ApiVersion::V1Beta1] {
            if let Ok(c) = cred.clone().into_credential(v, now) {
                assert!(c.token().is_some() || c.client_identity().is_some());
                accepted += 1;
            }
        }
    }
    assert!(
        accepted >= 5,
        "the corpus holds valid credentials ({accepted})"
    );
}

#[test]
fn exec_info_seeds() {
    let mut accepted = 0;
    for (path, data) in seeds("exec_credential_exec_info") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        let Ok(req) = ExecCredential::from_exec_info(text) else {
            continue;
        };
        let info = req.to_exec_info();
        let again = ExecCredential::from_exec_info(&info).unwrap();
        assert_eq!(again.to_exec_info(), info, "{}", path.display());
        accepted += 1;
    }
    assert!(accepted >= 4);
}

#[test]
fn cache_entry_seeds() {
    let key = CacheKey::builder().part("user", b"fuzz").finish();
    let mut accepted = 0;
    for (_, data) in seeds("exec_credential_cache_entry") {
        if let Ok(entry) = CacheEntry::from_json(&data, &key) {
            let json = entry.to_json();
            assert_eq!(
                CacheEntry::from_json(json.as_bytes(), &key)
                    .unwrap()
                    .to_json(),
                json
            );
            accepted += 1;
        }
    }
    assert_eq!(accepted, 1);
}
