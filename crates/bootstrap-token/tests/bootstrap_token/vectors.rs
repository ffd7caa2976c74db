//! Agreement with the reference vectors produced by Go (`vectors/regex.jsonl`,
//! `vectors/rfc3339.jsonl`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bootstrap_token::{
    AuthOutcome, BootstrapToken, ExpirationStatus, ExtraGroup, TokenId, authenticate,
    parse_expiration, parse_expiration_with_offset, parse_secret_name,
};
use serde_json::Value;

fn lines(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn input(v: &Value) -> Vec<u8> {
    let bytes = STANDARD.decode(v["input_b64"].as_str().unwrap()).unwrap();
    if let Some(s) = v["input"].as_str() {
        assert_eq!(s.as_bytes(), &bytes[..], "input and input_b64 disagree");
    }
    bytes
}

fn instant(secs: i64, nanos: u32) -> SystemTime {
    let base = if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    };
    base + Duration::from_nanos(u64::from(nanos))
}

#[test]
fn regex_vectors_agree_with_go() {
    let vectors = lines("regex.jsonl");
    assert!(vectors.len() > 200);
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for v in &vectors {
        let name = v["pattern_name"].as_str().unwrap();
        *seen.entry(name.to_owned()).or_default() += 1;
        let bytes = input(v);
        let expected = v["match"].as_bool().unwrap();
        let subs: Vec<&str> = v["submatches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let ctx = format!("{name} {:?}", String::from_utf8_lossy(&bytes));
        match name {
            "token" => {
                let parsed = BootstrapToken::from_bytes(&bytes);
                assert_eq!(parsed.is_ok(), expected, "{ctx}");
                if let Ok(t) = parsed {
                    assert_eq!(t.to_string(), subs[0], "{ctx}");
                    assert_eq!(t.id().as_str(), subs[1], "{ctx}");
                    assert_eq!(t.secret().expose_secret(), subs[2], "{ctx}");
                }
                if let Ok(s) = std::str::from_utf8(&bytes) {
                    assert_eq!(s.parse::<BootstrapToken>().is_ok(), expected, "{ctx}");
                    // The authenticator's own (non-copying) parser agrees too.
                    let outcome = authenticate(s, UNIX_EPOCH, |_| {
                        Ok::<_, ()>(None::<&bootstrap_token::SecretObject>)
                    })
                    .unwrap();
                    assert_eq!(
                        outcome != AuthOutcome::NotABootstrapToken,
                        expected,
                        "{ctx}"
                    );
                }
            }
            "token_id" => {
                let parsed = TokenId::from_bytes(&bytes);
                assert_eq!(parsed.is_ok(), expected, "{ctx}");
                if let Ok(id) = parsed {
                    assert_eq!(id.as_str(), subs[1], "{ctx}");
                }
            }
            "group" => {
                let ok = std::str::from_utf8(&bytes).is_ok_and(ExtraGroup::is_valid);
                assert_eq!(ok, expected, "{ctx}");
                if let Ok(s) = std::str::from_utf8(&bytes) {
                    let parsed = s.parse::<ExtraGroup>();
                    assert_eq!(parsed.is_ok(), expected, "{ctx}");
                    if let Ok(g) = parsed {
                        assert_eq!(g.as_str(), subs[0]);
                    }
                }
            }
            "secret_name" => {
                let id = std::str::from_utf8(&bytes).ok().and_then(parse_secret_name);
                assert_eq!(id.is_some(), expected, "{ctx}");
                if let Some(id) = id {
                    assert_eq!(id.as_str(), subs[1], "{ctx}");
                    assert_eq!(id.secret_name(), subs[0], "{ctx}");
                }
            }
            other => panic!("unknown pattern {other}"),
        }
    }
    for name in ["token", "token_id", "group", "secret_name"] {
        assert!(
            seen.get(name).copied().unwrap_or(0) > 10,
            "{name}: {seen:?}"
        );
    }
}

#[test]
fn rfc3339_vectors_agree_with_go() {
    let vectors = lines("rfc3339.jsonl");
    assert!(vectors.len() > 50);
    // Far before year 0000, so every parseable expiration is still in the future.
    let long_ago = UNIX_EPOCH - Duration::from_secs(70_000_000_000);
    let mut accepted = 0;
    for v in &vectors {
        let bytes = input(v);
        let ctx = format!("{:?}", String::from_utf8_lossy(&bytes));
        let status = ExpirationStatus::at(&bytes, long_ago);
        if v["ok"].as_bool().unwrap() {
            accepted += 1;
            let at = instant(
                v["unix_seconds"].as_i64().unwrap(),
                u32::try_from(v["nanos"].as_u64().unwrap()).unwrap(),
            );
            let s = std::str::from_utf8(&bytes).unwrap();
            assert_eq!(parse_expiration(s).unwrap(), at, "{ctx}");
            let (t, offset) = parse_expiration_with_offset(s).unwrap();
            assert_eq!(t, at, "{ctx}");
            assert_eq!(
                i64::from(offset),
                v["offset_seconds"].as_i64().unwrap(),
                "{ctx}"
            );
            assert!(
                matches!(status, ExpirationStatus::Valid { at: a, .. } if a == at),
                "{ctx}"
            );
            // Expired at exactly the instant, valid one nanosecond before.
            assert!(ExpirationStatus::at(&bytes, at).is_expired(), "{ctx}");
            assert!(!ExpirationStatus::at(&bytes, at - Duration::from_nanos(1)).is_expired());
        } else {
            if let Ok(s) = std::str::from_utf8(&bytes) {
                assert!(parse_expiration(s).is_err(), "{ctx} must be rejected");
            }
            if bytes.is_empty() {
                // GetExpiration never parses an empty value: it means "never expires".
                assert_eq!(status, ExpirationStatus::Never);
                continue;
            }
            // Unparseable means expired, whatever the time.
            assert_eq!(status, ExpirationStatus::Unparseable, "{ctx}");
            assert!(status.is_expired());
        }
    }
    assert!(accepted > 10);
}
