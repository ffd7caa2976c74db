//! Replays every checked-in seed of the `fuzz/` targets through the same entry points and the
//! same assertions, so `cargo test` covers the corpus without a fuzzer.

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::fs;
use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jws_detached::{PreparedPayload, sign, verify, verify_kubernetes};

const KID: &str = "abcdef";
const KEY: &[u8] = b"0123456789abcdef";

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "fuzz",
        "corpus",
        target,
    ]
    .iter()
    .collect();
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "corpus {target} has {} files",
        files.len()
    );
    files.iter().map(|p| fs::read(p).unwrap()).collect()
}

fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    }
}

#[test]
fn replay_jws_detached_verify() {
    let mut accepted = 0;
    for data in corpus("jws_detached_verify") {
        let (detached, content) = split(&data);
        let Ok(detached) = std::str::from_utf8(detached) else {
            continue;
        };
        let standards = verify(detached, content, KID, KEY);
        let kubernetes = verify_kubernetes(detached, content, KID, KEY);
        if kubernetes.is_ok() {
            assert!(standards.is_ok());
            assert_eq!(sign(content, KID, KEY).unwrap(), detached);
        }
        accepted += usize::from(standards.is_ok());
    }
    assert!(accepted > 0, "the corpus holds valid signatures");
}

#[test]
fn replay_jws_detached_verify_kubernetes() {
    let mut accepted = 0;
    for data in corpus("jws_detached_verify_kubernetes") {
        let (detached, content) = split(&data);
        let Ok(detached) = std::str::from_utf8(detached) else {
            continue;
        };
        let direct = verify_kubernetes(detached, content, KID, KEY);
        let prepared =
            PreparedPayload::new(content).and_then(|p| p.verify_kubernetes(detached, KID, KEY));
        assert_eq!(direct, prepared);
        if direct.is_ok() {
            assert_eq!(sign(content, KID, KEY).unwrap(), detached);
            accepted += 1;
        }
    }
    assert!(accepted > 0, "the corpus holds valid signatures");
}

#[test]
fn replay_jws_detached_verify_header_json() {
    let mut accepted = 0;
    for header in corpus("jws_detached_verify_header_json") {
        let h = URL_SAFE_NO_PAD.encode(&header);
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(KEY).unwrap();
        mac.update(h.as_bytes());
        mac.update(b".");
        let jws = format!(
            "{h}..{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        );
        if verify(&jws, b"", KID, KEY).is_ok() {
            let v: serde_json::Value = serde_json::from_slice(&header).unwrap();
            assert_eq!(v["alg"], "HS256");
            assert_eq!(v["kid"], KID);
            accepted += 1;
        }
    }
    assert!(accepted > 0, "the corpus holds accepted headers");
}
