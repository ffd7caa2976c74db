//! Property tests: serde round trips, "never panics" on arbitrary plugin output, secrets never
//! echoed, and state-machine invariants under arbitrary event sequences.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, ClientKey, Cluster, CredentialState, ExecAuthenticator, ExecConfig,
    ExecCredential, ExecCredentialSpec, ExecCredentialStatus, InteractiveMode, RunResult, Token,
    sanitize_install_hint,
};
use proptest::prelude::*;

/// Year 0001 .. 9999, whole seconds (the wire format has no fractions).
fn instant() -> impl Strategy<Value = SystemTime> {
    (-62_135_596_799i64..253_402_300_799).prop_map(|s| {
        if s >= 0 {
            UNIX_EPOCH + Duration::from_secs(s as u64)
        } else {
            UNIX_EPOCH - Duration::from_secs(s.unsigned_abs())
        }
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn cluster() -> impl Strategy<Value = Cluster> {
    (
        "\\PC{0,40}",
        "\\PC{0,10}",
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..64),
        "\\PC{0,10}",
        any::<bool>(),
        prop::option::of(json_value().prop_filter("null is no extension", |v| !v.is_null())),
    )
        .prop_map(|(server, tls, insecure, ca, proxy, nocomp, config)| {
            let mut c = Cluster::new(server).with_certificate_authority_data(ca);
            c.tls_server_name = tls;
            c.insecure_skip_tls_verify = insecure;
            c.proxy_url = proxy;
            c.disable_compression = nocomp;
            c.config = config;
            c
        })
}

fn version() -> impl Strategy<Value = ApiVersion> {
    prop_oneof![Just(ApiVersion::V1), Just(ApiVersion::V1Beta1)]
}

fn status() -> impl Strategy<Value = ExecCredentialStatus> {
    (
        prop::option::of("\\PC{1,40}"),
        prop::option::of(("\\PC{1,40}", "\\PC{1,40}")),
        prop::option::of(instant()),
    )
        .prop_map(|(token, pair, exp)| {
            let mut s = ExecCredentialStatus::default();
            if let Some(t) = token {
                s = s.token(Token::new(t));
            }
            if let Some((c, k)) = pair {
                s = s.client_certificate(c, ClientKey::new(k));
            }
            if let Some(e) = exp {
                s = s.expires_at(e);
            }
            s
        })
}

proptest! {
    #[test]
    fn proptest_request_round_trips(v in version(), c in prop::option::of(cluster()), interactive in any::<bool>()) {
        let req = ExecCredential::request(v, ExecCredentialSpec::new(c, interactive));
        let info = req.to_exec_info();
        prop_assert!(info.ends_with('\n'));
        prop_assert_eq!(ExecCredential::from_exec_info(&info).unwrap(), req.clone());
        // serde_json's own entry point agrees.
        prop_assert_eq!(serde_json::from_str::<ExecCredential>(&info).unwrap(), req);
    }

    #[test]
    fn proptest_response_round_trips(v in version(), s in status()) {
        let resp = ExecCredential::response(v, s);
        let out = resp.to_stdout();
        prop_assert_eq!(ExecCredential::from_plugin_output(out.as_bytes()).unwrap(), resp);
    }

    #[test]
    fn proptest_plugin_output_never_panics_on_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = ExecCredential::from_plugin_output(&data);
    }

    #[test]
    fn proptest_plugin_output_never_panics_on_text(text in "\\PC{0,256}") {
        let _ = ExecCredential::from_plugin_output(text.as_bytes());
        let _ = ExecCredential::from_exec_info(&text);
    }

    #[test]
    fn proptest_plugin_output_never_panics_on_mutations(
        pos in any::<prop::sample::Index>(),
        insert in "\\PC{0,8}",
        cut in 0usize..16,
    ) {
        let good = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-02T03:04:05Z","clientCertificateData":"c","clientKeyData":"k"}}"#;
        let mut bytes = good.as_bytes().to_vec();
        let at = pos.index(bytes.len());
        let end = (at + cut).min(bytes.len());
        bytes.splice(at..end, insert.bytes());
        if let Ok(c) = ExecCredential::from_plugin_output(&bytes) {
            let _ = c.into_credential(ApiVersion::V1, UNIX_EPOCH);
        }
    }

    #[test]
    fn proptest_errors_never_echo_the_token(token in "[A-Za-z0-9]{24,40}", shape in 0usize..6) {
        let out = match shape {
            0 => format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":"{token}"}}"#),
            1 => format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":["{token}"]}}}}"#),
            2 => format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"{token}","status":{{"token":"x"}}}}"#),
            3 => format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"{token}","expirationTimestamp":"{token}"}}}}"#),
            4 => format!("status: [{token}\n"),
            _ => format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"{token}","token":"{token}"}}}}"#),
        };
        let e = ExecCredential::from_plugin_output(out.as_bytes()).unwrap_err();
        prop_assert!(!e.to_string().contains(&token), "{}", e);
        let dbg = format!("{e:?}");
        prop_assert!(!dbg.contains(&token));
    }

    #[test]
    fn proptest_install_hint_sanitising_leaves_no_controls(hint in any::<String>()) {
        let clean = sanitize_install_hint(&hint);
        prop_assert!(clean.chars().all(|c| !c.is_control() || ('\t'..='\r').contains(&c)));
        if hint.chars().all(|c| c.is_alphanumeric() || c == ' ') {
            prop_assert_eq!(clean, hint);
        }
    }

    #[test]
    fn proptest_authenticator_invariants(ops in prop::collection::vec((0u8..5, 0u64..400, 0u8..4), 1..40)) {
        let mut a = ExecAuthenticator::new(
            ExecConfig::new("p", ApiVersion::V1, InteractiveMode::Never),
            Cluster::new("https://x"),
        ).unwrap();
        let base = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut pending: Option<exec_credential::RunId> = None;
        let mut last_id = None;
        for (op, dt, variant) in ops {
            let now = base + Duration::from_secs(dt);
            match op {
                0 | 1 => match a.credential(now) {
                    Ok(CredentialState::Ready(c)) => {
                        prop_assert!(!c.is_expired(now));
                        last_id = Some(c.id());
                    }
                    Ok(CredentialState::Pending(id)) => {
                        if let Some(p) = pending { prop_assert_eq!(p, id); }
                        pending = Some(id);
                    }
                    // After a failed run: nothing in flight, and the wait ends in the future.
                    Err(exec_credential::Error::RunBackoff { retry_at, .. }) => {
                        prop_assert!(pending.is_none());
                        prop_assert!(retry_at > now);
                        prop_assert_eq!(a.next_run_allowed_at(now), Some(retry_at));
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                    _ => unreachable!(),
                },
                2 => {
                    if let Some(id) = last_id
                        && let Some(run) = a.handle_unauthorized(now, id).unwrap() {
                            prop_assert!(pending.is_none());
                            pending = Some(run);
                        }
                }
                _ => {
                    // At most one run is ever queued per in-flight id.
                    let mut runs = 0;
                    while let Some(action) = a.poll_action() {
                        if let Action::RunPlugin(run) = action {
                            runs += 1;
                            prop_assert_eq!(Some(run.id()), pending);
                        }
                    }
                    prop_assert!(runs <= 1);
                    if let Some(id) = pending.take() {
                        let exp = 1_700_000_000 + dt + u64::from(variant) * 100;
                        let stdout = format!(
                            r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"t{variant}","expirationTimestamp":"{}"}}}}"#,
                            rfc3339(exp)
                        );
                        let result = if variant == 3 {
                            RunResult::Exited { code: 1, stdout: b"", stderr: b"" }
                        } else {
                            RunResult::Exited { code: 0, stdout: stdout.as_bytes(), stderr: b"" }
                        };
                        if let Ok(c) = a.handle_run_result(now, id, result) {
                            last_id = Some(c.id());
                        }
                        prop_assert!(a.handle_run_result(now, id, RunResult::NotFound).is_err());
                    }
                }
            }
        }
    }
}

fn rfc3339(unix: u64) -> String {
    let days = unix / 86_400;
    let rem = unix % 86_400;
    // 2023-11-14 is day 19675 since the epoch; the test stays within a few days of it.
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
