//! Every line of `vectors/rfc3339.jsonl` (Go's `time.Parse(time.RFC3339, s)`) through
//! `status.expirationTimestamp`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{ApiVersion, Error, ExecCredential};

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/rfc3339.jsonl"
));

fn instant(secs: i64, nanos: u32) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
            + Duration::from_nanos(u64::from(nanos))
    }
}

fn output_with_expiry(ts: &str) -> String {
    format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"t","expirationTimestamp":{}}}}}"#,
        serde_json::to_string(ts).unwrap()
    )
}

#[test]
fn every_rfc3339_vector_matches_go() {
    let mut n = 0;
    for line in VECTORS.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = v["input"].as_str().unwrap();
        let parsed = ExecCredential::from_plugin_output(output_with_expiry(input).as_bytes());
        if v["ok"].as_bool().unwrap() {
            let cred = parsed.unwrap_or_else(|e| panic!("{input:?} should parse: {e}"));
            let want = instant(
                v["unix_seconds"].as_i64().unwrap(),
                v["nanos"].as_u64().unwrap() as u32,
            );
            assert_eq!(cred.status().unwrap().expiration(), Some(want), "{input:?}");
        } else {
            match parsed {
                Err(Error::InvalidExpiration { reason }) => {
                    assert!(
                        !reason.contains(input) || input.is_empty(),
                        "error echoes input: {reason}"
                    )
                }
                other => panic!("{input:?} must be rejected, got {other:?}"),
            }
        }
        n += 1;
    }
    assert!(n >= 60, "only {n} vectors");
}

#[test]
fn go_zero_time_means_never_expires() {
    let c =
        ExecCredential::from_plugin_output(output_with_expiry("0001-01-01T00:00:00Z").as_bytes())
            .unwrap();
    assert_eq!(c.status().unwrap().expiration(), None);
    // The same instant written with an offset is also the zero time.
    let c = ExecCredential::from_plugin_output(
        output_with_expiry("0001-01-01T01:00:00+01:00").as_bytes(),
    )
    .unwrap();
    assert_eq!(c.status().unwrap().expiration(), None);
    let c =
        ExecCredential::from_plugin_output(output_with_expiry("0001-01-01T00:00:01Z").as_bytes())
            .unwrap();
    assert!(c.status().unwrap().expiration().is_some());
}

#[test]
fn expiry_is_written_in_whole_utc_seconds() {
    let c = ExecCredential::from_plugin_output(
        output_with_expiry("2024-01-02T03:04:05.999+01:00").as_bytes(),
    )
    .unwrap();
    let out = ExecCredential::response(ApiVersion::V1, c.status().unwrap().clone()).to_json();
    assert!(
        out.contains(r#""expirationTimestamp":"2024-01-02T02:04:05Z""#),
        "{out}"
    );
}
