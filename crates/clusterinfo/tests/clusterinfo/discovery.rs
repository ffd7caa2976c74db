//! The discovery state machine driven with scripted responses.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime};

use crate::fixtures::*;
use clusterinfo::{
    Action, Discovered, Discovery, Error, FetchTrust, FileDiscoveryConfig, Pin, PinSet, Refresh,
    Response, TokenDiscoveryConfig,
};

fn pins() -> PinSet {
    PinSet::from_iter([Pin::from_certificate_pem(ca_pem().as_bytes()).unwrap()])
}

fn config() -> TokenDiscoveryConfig {
    TokenDiscoveryConfig::new("127.0.0.1:6443", TOKEN.parse().unwrap())
        .unwrap()
        .with_pins(pins())
}

/// What a scripted server answers.
enum Reply {
    Ok(String),
    Status(u16, &'static str),
    Transport(&'static str),
}

/// Drive to completion, answering each fetch from `script` (the last reply repeats) and
/// sleeping exactly until each `WakeAt`. Returns the outcome, the fetches and the end time.
type Outcome = (
    Result<Box<Discovered>, Error>,
    Vec<(String, FetchTrust)>,
    SystemTime,
);

fn drive(mut d: Discovery, start: SystemTime, script: &[Reply]) -> Outcome {
    let mut now = start;
    let mut fetches = Vec::new();
    for _ in 0..10_000 {
        match d.poll_action() {
            Some(Action::Fetch(req)) => {
                let reply = script.get(fetches.len()).or(script.last()).unwrap();
                fetches.push((req.url().to_owned(), req.trust().clone()));
                let response = match reply {
                    Reply::Ok(body) => Response::Http {
                        status: 200,
                        body: body.as_bytes(),
                    },
                    Reply::Status(code, body) => Response::Http {
                        status: *code,
                        body: body.as_bytes(),
                    },
                    Reply::Transport(e) => Response::TransportError(e),
                };
                d.handle_response(now, response);
            }
            Some(Action::WakeAt(at)) => {
                assert!(at > now);
                now = at;
                d.handle_timeout(now);
            }
            Some(Action::Done(found)) => return (Ok(found), fetches, now),
            Some(Action::Failed(e)) => return (Err(e), fetches, now),
            Some(other) => panic!("{other:?}"),
            None => panic!("stalled"),
        }
    }
    panic!("did not finish");
}

#[test]
fn token_discovery_with_pin_fetches_twice_and_returns_cluster_info_server() {
    let served = served_default();
    let (res, fetches, end) = drive(
        config().start(now()).unwrap(),
        now(),
        &[Reply::Ok(served.clone()), Reply::Ok(served)],
    );
    let found = res.unwrap();
    assert_eq!(end, now(), "no waiting on success");
    assert_eq!(fetches.len(), 2);
    let url = "https://127.0.0.1:6443/api/v1/namespaces/kube-public/configmaps/cluster-info";
    assert_eq!(
        fetches[0],
        (url.to_owned(), FetchTrust::DangerousNoVerification)
    );
    let FetchTrust::CaBundle(bundle) = &fetches[1].1 else {
        panic!("{:?}", fetches[1].1)
    };
    assert_eq!(bundle.as_pem(), ca_pem());
    assert_eq!(found.cluster_info().server(), "https://127.0.0.1:6443");
    assert_eq!(
        found.kubeconfig(),
        Some(cluster_info().to_kubeconfig_yaml().as_str())
    );
    assert_eq!(found.endpoint(), Some("127.0.0.1:6443"));
}

#[test]
fn the_result_uses_the_cluster_info_server_not_the_endpoint() {
    let info = clusterinfo::ClusterInfo::new(
        "https://cp.example.com:6443",
        clusterinfo::CaBundle::from_pem(ca_pem().as_bytes()).unwrap(),
    )
    .unwrap();
    let served = served(&info.to_kubeconfig_yaml(), &[("abcdef", TOKEN_SECRET)]);
    let (res, fetches, _) = drive(config().start(now()).unwrap(), now(), &[Reply::Ok(served)]);
    assert!(
        fetches
            .iter()
            .all(|(u, _)| u.starts_with("https://127.0.0.1:6443/"))
    );
    assert_eq!(
        res.unwrap().cluster_info().server(),
        "https://cp.example.com:6443"
    );
}

/// Hostile-input catalogue #47.
#[test]
fn no_pins_without_opt_in_is_an_error() {
    let cfg = TokenDiscoveryConfig::new("127.0.0.1:6443", TOKEN.parse().unwrap()).unwrap();
    let err = cfg.start(now()).unwrap_err();
    assert_eq!(err, Error::NoPins);
    // No kubeadm configuration file to point at: the message says what is missing and leaves
    // the knob's name (a flag, a method) to the caller.
    assert_eq!(
        err.to_string(),
        "using token-based discovery without a CA pin can be unsafe: pin the cluster CA's public \
         key, or skip its verification explicitly"
    );
}

#[test]
fn unsafe_skip_trusts_the_jws_alone_with_one_fetch() {
    let cfg = TokenDiscoveryConfig::new("127.0.0.1:6443", TOKEN.parse().unwrap())
        .unwrap()
        .dangerous_skip_ca_verification();
    let (res, fetches, _) = drive(
        cfg.start(now()).unwrap(),
        now(),
        &[Reply::Ok(served_default())],
    );
    assert!(res.is_ok());
    assert_eq!(fetches.len(), 1);
    // Pins given with the unsafe flag are still enforced.
    let cfg = config().dangerous_skip_ca_verification();
    let (res, fetches, _) = drive(
        cfg.start(now()).unwrap(),
        now(),
        &[Reply::Ok(served_default())],
    );
    assert!(res.is_ok());
    assert_eq!(fetches.len(), 2);
}

/// Hostile-input catalogue #48.
#[test]
fn a_different_second_kubeconfig_is_rejected() {
    let first = served_default();
    let mut other = cluster_info();
    other.set_tls_server_name(Some("x".into()));
    let second = served(&other.to_kubeconfig_yaml(), &[("abcdef", TOKEN_SECRET)]);
    let (res, _, _) = drive(
        config().start(now()).unwrap(),
        now(),
        &[Reply::Ok(first), Reply::Ok(second)],
    );
    let err = res.unwrap_err();
    assert_eq!(err, Error::SecondFetchDiffers);
    assert_eq!(
        err.to_string(),
        "the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first"
    );
}

#[test]
fn wrong_pin_is_rejected_with_kubeadms_message() {
    let cfg = config().with_pins(PinSet::from_iter([Pin::from_certificate_pem(
        other_ca_pem().as_bytes(),
    )
    .unwrap()]));
    let (res, fetches, _) = drive(
        cfg.start(now()).unwrap(),
        now(),
        &[Reply::Ok(served_default())],
    );
    assert!(matches!(res.unwrap_err(), Error::NotPinned { .. }));
    assert_eq!(
        fetches.len(),
        1,
        "no TLS-verified fetch after a pin mismatch"
    );
}

#[test]
fn wrong_token_secret_is_a_bad_signature() {
    let cfg =
        TokenDiscoveryConfig::new("127.0.0.1:6443", "abcdef.0000000000000000".parse().unwrap())
            .unwrap()
            .with_pins(pins());
    let (res, _, _) = drive(
        cfg.start(now()).unwrap(),
        now(),
        &[Reply::Ok(served_default())],
    );
    assert_eq!(res.unwrap_err(), Error::BadSignature);
}

#[test]
fn polling_retries_until_the_timeout_and_returns_the_last_error() {
    let cfg = config()
        .with_timeout(Duration::from_secs(60))
        .with_retry_interval(Duration::from_secs(5));
    let no_sig = served(
        &cluster_info().to_kubeconfig_yaml(),
        &[("ghijkl", "ghijklmnopqrstuv")],
    );
    let script = [
        Reply::Transport("connection refused"),
        Reply::Status(403, r#"{"kind":"Status","message":"forbidden"}"#),
        Reply::Ok(no_sig),
    ];
    let (res, fetches, end) = drive(cfg.start(now()).unwrap(), now(), &script);
    let err = res.unwrap_err();
    let Error::TimedOut { last } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        **last,
        Error::SignatureNotFound {
            token_id: "abcdef".into()
        }
    );
    assert_eq!(
        last.to_string(),
        "could not find a JWS signature in the cluster-info ConfigMap for token ID \"abcdef\": the token may have been deleted, have expired or be mistyped, or the cluster's bootstrap signer has not signed for it yet"
    );
    // Attempts at 0, 5, ..., 55 s: twelve, and no attempt at or after the deadline.
    assert_eq!(fetches.len(), 12);
    assert_eq!(end, now() + Duration::from_secs(55));
}

#[test]
fn the_poll_stops_once_the_key_appears_even_if_empty() {
    let mut cm = clusterinfo::ClusterInfoConfigMap::new(cluster_info().to_kubeconfig_yaml());
    let mut data = cm.data().clone();
    data.insert("jws-kubeconfig-abcdef".into(), String::new());
    cm.set_data(data);
    let script = [Reply::Status(500, "oops"), Reply::Ok(cm.to_json())];
    let (res, fetches, _) = drive(config().start(now()).unwrap(), now(), &script);
    assert_eq!(
        res.unwrap_err(),
        Error::TokenNotValidForCluster {
            token_id: "abcdef".into()
        }
    );
    assert_eq!(fetches.len(), 2);
}

#[test]
fn equivalent_endpoints_are_tried_in_order_before_waiting() {
    let cfg = config()
        .with_endpoint("127.0.0.2:6443")
        .unwrap()
        .with_endpoint("[::1]:6443")
        .unwrap();
    let script = [
        Reply::Transport("refused"),
        Reply::Transport("refused"),
        Reply::Ok(served_default()),
        Reply::Ok(served_default()),
    ];
    let (res, fetches, end) = drive(cfg.start(now()).unwrap(), now(), &script);
    let found = res.unwrap();
    assert_eq!(end, now(), "all endpoints tried before any wait");
    let hosts: Vec<&str> = fetches
        .iter()
        .map(|(u, _)| u.split('/').nth(2).unwrap())
        .collect();
    assert_eq!(
        hosts,
        [
            "127.0.0.1:6443",
            "127.0.0.2:6443",
            "[::1]:6443",
            "[::1]:6443"
        ]
    );
    assert_eq!(found.endpoint(), Some("[::1]:6443"));
}

#[test]
fn bad_endpoints_are_rejected() {
    for e in [
        "",
        "127.0.0.1",
        "https://127.0.0.1:6443",
        "a:b:c",
        "host:99999",
        "[::1",
    ] {
        assert!(
            TokenDiscoveryConfig::new(e, TOKEN.parse().unwrap()).is_err(),
            "{e}"
        );
    }
}

/// Arbitrary and hostile server responses: every one ends in a typed error, never a panic.
#[test]
fn hostile_responses_fail_cleanly() {
    let huge = "x".repeat(clusterinfo::MAX_RESPONSE_BYTES + 1);
    let deep_yaml = format!("x: {}1{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep = served(&deep_yaml, &[("abcdef", TOKEN_SECRET)]);
    let creds = served(
        &format!(
            "{}users:\n- name: x\n  user:\n    token: {TOKEN}\n",
            cluster_info()
                .to_kubeconfig_yaml()
                .replace("users: null\n", "")
        ),
        &[("abcdef", TOKEN_SECRET)],
    );
    let cfg = || config().with_timeout(Duration::from_secs(10));
    for body in [huge, "{".to_owned(), "null".to_owned(), deep, creds] {
        let (res, _, _) = drive(cfg().start(now()).unwrap(), now(), &[Reply::Ok(body)]);
        let err = res.unwrap_err();
        assert!(!format!("{err} {err:?}").contains("0123456789abcdef"));
    }
}

#[test]
fn early_wake_ups_are_reissued() {
    let mut d = config().start(now()).unwrap();
    assert!(d.last_error().is_none());
    let Some(Action::Fetch(_)) = d.poll_action() else {
        panic!()
    };
    d.handle_response(now(), Response::TransportError("refused"));
    let Some(Action::WakeAt(at)) = d.poll_action() else {
        panic!()
    };
    // Why it waits, for a progress line.
    let why = d.last_error().unwrap().to_string();
    assert!(why.contains("refused"), "{why}");
    d.handle_timeout(now());
    assert!(matches!(d.poll_action(), Some(Action::WakeAt(t)) if t == at));
    d.handle_timeout(at);
    assert!(matches!(d.poll_action(), Some(Action::Fetch(_))));
    assert!(d.poll_action().is_none());
}

#[test]
fn file_discovery_without_refresh_is_immediate_and_rejects_credentials() {
    let mut d = FileDiscoveryConfig::new()
        .start_file(cluster_info().to_client_kubeconfig_yaml().as_bytes(), now())
        .unwrap();
    assert!(matches!(d.poll_action(), Some(Action::Done(_))));
    let with_token = format!(
        "{}users:\n- name: u\n  user:\n    token: {TOKEN}\n",
        cluster_info()
            .to_kubeconfig_yaml()
            .replace("users: null\n", "")
    );
    let err = FileDiscoveryConfig::new()
        .start_file(with_token.as_bytes(), now())
        .unwrap_err();
    assert_eq!(
        err,
        Error::CredentialsPresent {
            field: "users[0].user.token".into()
        }
    );
}

#[test]
fn file_refresh_follows_kubeadms_rules() {
    let no_ca = b"clusters:\n- name: c\n  cluster:\n    server: https://10.9.9.9:6443\n";
    let cfg = || {
        FileDiscoveryConfig::new()
            .with_refresh(Refresh::FromClusterInfo)
            .with_timeout(Duration::from_secs(30))
    };
    // Forbidden: the file as-is.
    let (res, fetches, _) = drive(
        cfg().start_file(no_ca, now()).unwrap(),
        now(),
        &[Reply::Status(403, "{}")],
    );
    assert_eq!(
        res.unwrap().cluster_info().server(),
        "https://10.9.9.9:6443"
    );
    assert_eq!(
        fetches[0],
        (
            "https://10.9.9.9:6443/api/v1/namespaces/kube-public/configmaps/cluster-info"
                .to_owned(),
            FetchTrust::SystemRoots
        )
    );
    // Usable cluster-info: CA copied, server kept with a warning.
    let (res, _, _) = drive(
        cfg().start_file(no_ca, now()).unwrap(),
        now(),
        &[Reply::Ok(served_default())],
    );
    let found = res.unwrap();
    assert_eq!(found.cluster_info().server(), "https://10.9.9.9:6443");
    assert_eq!(found.cluster_info().ca_bundle().unwrap().as_pem(), ca_pem());
    assert_eq!(found.warnings().len(), 1);
    // Other errors retry until the timeout.
    let (res, fetches, _) = drive(
        cfg().start_file(no_ca, now()).unwrap(),
        now(),
        &[Reply::Transport("refused")],
    );
    assert!(matches!(res.unwrap_err(), Error::TimedOut { .. }));
    assert_eq!(fetches.len(), 6);
}

#[test]
fn https_url_discovery_requires_https_and_200() {
    assert_eq!(
        FileDiscoveryConfig::new()
            .start_https("http://example.com/kubeconfig", now())
            .unwrap_err(),
        Error::NotHttps
    );
    let d = FileDiscoveryConfig::new()
        .start_https("https://example.com/kubeconfig", now())
        .unwrap();
    let (res, fetches, _) = drive(d, now(), &[Reply::Status(404, "")]);
    assert_eq!(
        res.unwrap_err().to_string(),
        "error trying to fetch discovery kubeconfig over HTTPS from https://example.com/kubeconfig, received status 404"
    );
    assert_eq!(fetches[0].1, FetchTrust::SystemRoots);
    let d = FileDiscoveryConfig::new()
        .start_https("https://example.com/kubeconfig", now())
        .unwrap();
    let (res, _, _) = drive(d, now(), &[Reply::Ok(cluster_info().to_kubeconfig_yaml())]);
    assert_eq!(
        res.unwrap().cluster_info().server(),
        "https://127.0.0.1:6443"
    );
}

#[test]
fn debug_output_never_shows_the_token_secret() {
    let cfg = config();
    let d = config().start(now()).unwrap();
    for shown in [format!("{cfg:?}"), format!("{d:?}")] {
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains("abcdef"), "the public token id may show");
    }
}

/// Hostile-input catalogue #44 in discovery: with pins, a signed cluster-info without CA data
/// (or with empty CA data) fails after the first fetch; it never falls back to a second fetch
/// trusting the system roots.
#[test]
fn pinned_discovery_without_ca_data_fails_after_one_fetch() {
    let no_ca = clusterinfo::ClusterInfo::with_trust(
        "https://127.0.0.1:6443",
        clusterinfo::Trust::SystemRoots,
    )
    .unwrap()
    .to_kubeconfig_yaml();
    let empty_ca = cluster_info().to_kubeconfig_yaml().replace(
        &format!(
            "certificate-authority-data: {}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca_pem())
        ),
        "certificate-authority-data: \"\"",
    );
    assert!(empty_ca.contains("certificate-authority-data: \"\"\n"));
    for kubeconfig in [no_ca, empty_ca] {
        let body = served(&kubeconfig, &[("abcdef", TOKEN_SECRET)]);
        let (res, fetches, _) = drive(config().start(now()).unwrap(), now(), &[Reply::Ok(body)]);
        assert_eq!(res.unwrap_err(), Error::NoCertificates);
        assert_eq!(fetches.len(), 1);
    }
}

/// Hostile-input catalogue #45 in discovery: a two-certificate bundle whose second
/// certificate is pinned passes, and the second fetch trusts the whole bundle.
#[test]
fn pin_on_the_second_certificate_of_the_bundle_passes() {
    let bundle_pem = format!("{}{}", other_ca_pem(), ca_pem());
    let info = clusterinfo::ClusterInfo::new(
        "https://127.0.0.1:6443",
        clusterinfo::CaBundle::from_pem(bundle_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let body = served(&info.to_kubeconfig_yaml(), &[("abcdef", TOKEN_SECRET)]);
    let (res, fetches, _) = drive(
        config().start(now()).unwrap(),
        now(),
        &[Reply::Ok(body.clone()), Reply::Ok(body)],
    );
    let found = res.unwrap();
    assert_eq!(
        found.cluster_info().ca_bundle().unwrap().as_pem(),
        bundle_pem
    );
    let FetchTrust::CaBundle(trusted) = &fetches[1].1 else {
        panic!("{:?}", fetches[1].1)
    };
    assert_eq!(trusted.as_pem(), bundle_pem);
    // Pinning only the first (other) CA works the same way.
    let other = PinSet::from_iter([Pin::from_certificate_pem(other_ca_pem().as_bytes()).unwrap()]);
    let body = served(&info.to_kubeconfig_yaml(), &[("abcdef", TOKEN_SECRET)]);
    let (res, _, _) = drive(
        TokenDiscoveryConfig::new("127.0.0.1:6443", TOKEN.parse().unwrap())
            .unwrap()
            .with_pins(other)
            .start(now())
            .unwrap(),
        now(),
        &[Reply::Ok(body)],
    );
    res.unwrap();
}
