//! The plugin author's side: reading `KUBERNETES_EXEC_INFO` as kubectl writes it and printing
//! what clients accept; the opt-in cache format.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{
    ApiVersion, CacheEntry, CacheKey, ClientKey, Cluster, Error, ExecCredential,
    ExecCredentialSpec, ExecCredentialStatus, Token,
};

/// What kubectl v1.32 passes without cluster info (observed).
const KUBECTL_PLAIN: &str = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{\"interactive\":false}}\n";

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[test]
fn reads_kubectl_exec_info_and_round_trips_it_byte_for_byte() {
    let req = ExecCredential::from_exec_info(KUBECTL_PLAIN).unwrap();
    assert_eq!(req.api_version(), ApiVersion::V1);
    assert!(!req.may_prompt());
    assert!(req.cluster().is_none());
    assert_eq!(req.to_exec_info(), KUBECTL_PLAIN);
    let beta = KUBECTL_PLAIN
        .replace("/v1\"", "/v1beta1\"")
        .replace("false", "true");
    let req = ExecCredential::from_exec_info(&beta).unwrap();
    assert_eq!(req.api_version(), ApiVersion::V1Beta1);
    assert!(req.may_prompt());
    assert_eq!(req.to_exec_info(), beta);
}

#[test]
fn cluster_fields_use_kubernetes_names_and_omit_empties() {
    let mut cluster = Cluster::new("https://k.example:6443");
    cluster.tls_server_name = "k.internal".into();
    cluster.insecure_skip_tls_verify = true;
    cluster.certificate_authority_data = b"CA".to_vec();
    cluster.proxy_url = "socks5://p:1080".into();
    cluster.disable_compression = true;
    cluster.config = Some(serde_json::json!({"b": 1, "a": [true]}));
    let req = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(cluster.clone()), true),
    );
    let json = req.to_json();
    assert_eq!(
        json,
        r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"server":"https://k.example:6443","tls-server-name":"k.internal","insecure-skip-tls-verify":true,"certificate-authority-data":"Q0E=","proxy-url":"socks5://p:1080","disable-compression":true,"config":{"a":[true],"b":1}},"interactive":true}}"#
    );
    assert_eq!(
        ExecCredential::from_exec_info(&json).unwrap().cluster(),
        Some(&cluster)
    );
    // Empty fields are omitted; config is always written, null without an extension.
    let bare = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(Cluster::new("https://x")), false),
    );
    assert_eq!(
        bare.to_json(),
        r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"server":"https://x","config":null},"interactive":false}}"#
    );
}

#[test]
fn response_is_exactly_what_clients_accept() {
    let status = ExecCredentialStatus::with_token(Token::new("tok"))
        .client_certificate("CERT", ClientKey::new("KEY"))
        .expires_at(t(1_700_000_000) + Duration::from_millis(900));
    let req = ExecCredential::from_exec_info(KUBECTL_PLAIN).unwrap();
    let out = req.respond(status).to_stdout();
    assert_eq!(
        out,
        "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{\"interactive\":false},\"status\":{\"expirationTimestamp\":\"2023-11-14T22:13:20Z\",\"token\":\"tok\",\"clientCertificateData\":\"CERT\",\"clientKeyData\":\"KEY\"}}\n"
    );
    let back = ExecCredential::from_plugin_output(out.as_bytes()).unwrap();
    let s = back.status().unwrap();
    assert_eq!(s.bearer_token().unwrap().expose_secret(), "tok");
    assert_eq!(s.client_certificate_data(), Some("CERT"));
    assert_eq!(s.client_key_data().unwrap().expose_secret(), "KEY");
    assert_eq!(s.expiration(), Some(t(1_700_000_000)));
}

#[test]
fn missing_exec_info_falls_back_to_a_default_request() {
    let req = ExecCredential::from_exec_info_or(None, ApiVersion::V1Beta1).unwrap();
    assert_eq!(req.api_version(), ApiVersion::V1Beta1);
    assert!(!req.may_prompt());
    assert!(ExecCredential::from_exec_info_or(Some("{}"), ApiVersion::V1).is_err());
}

#[test]
fn exec_info_limits_and_garbage() {
    let big = format!(
        "{}{}",
        KUBECTL_PLAIN.trim_end(),
        " ".repeat(exec_credential::MAX_EXEC_INFO_BYTES)
    );
    assert!(matches!(
        ExecCredential::from_exec_info(&big),
        Err(Error::OutputTooLarge { .. })
    ));
    for bad in [
        "",
        "null",
        "[]",
        "\"x\"",
        "{\"kind\":\"ExecCredential\"}",
        "kind: ExecCredential",
    ] {
        assert!(ExecCredential::from_exec_info(bad).is_err(), "{bad}");
    }
}

#[test]
fn go_escaping_of_html_characters() {
    let req = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(Cluster::new("https://x/?a=<b>&c\u{2028}")), false),
    );
    let json = req.to_json();
    assert!(
        json.contains(r#""server":"https://x/?a=\u003cb\u003e\u0026c\u2028""#),
        "{json}"
    );
    assert_eq!(ExecCredential::from_exec_info(&json).unwrap(), req);
}

#[test]
fn cache_key_covers_every_identity_input() {
    let req = |server: &str, ca: &[u8], config: Option<serde_json::Value>| {
        let mut c = Cluster::new(server).with_certificate_authority_data(ca.to_vec());
        c.config = config;
        ExecCredential::request(ApiVersion::V1, ExecCredentialSpec::new(Some(c), false))
    };
    let base = CacheKey::for_request(
        &req("https://a", b"ca", None),
        &["x".into()],
        &[("user", "u")],
    );
    let variants = [
        CacheKey::for_request(
            &req("https://b", b"ca", None),
            &["x".into()],
            &[("user", "u")],
        ),
        CacheKey::for_request(
            &req("https://a", b"cb", None),
            &["x".into()],
            &[("user", "u")],
        ),
        CacheKey::for_request(
            &req("https://a", b"ca", Some(serde_json::json!(1))),
            &["x".into()],
            &[("user", "u")],
        ),
        CacheKey::for_request(
            &req("https://a", b"ca", None),
            &["y".into()],
            &[("user", "u")],
        ),
        CacheKey::for_request(
            &req("https://a", b"ca", None),
            &["x".into(), String::new()],
            &[("user", "u")],
        ),
        CacheKey::for_request(
            &req("https://a", b"ca", None),
            &["x".into()],
            &[("user", "v")],
        ),
        CacheKey::for_request(
            &req("https://a", b"ca", None),
            &["x".into()],
            &[("usr", "u")],
        ),
        CacheKey::for_request(
            &ExecCredential::request(
                ApiVersion::V1Beta1,
                ExecCredentialSpec::new(
                    Some(Cluster::new("https://a").with_certificate_authority_data(b"ca".to_vec())),
                    false,
                ),
            ),
            &["x".into()],
            &[("user", "u")],
        ),
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(*v, base, "variant {i}");
    }
    // Interactivity is not identity.
    let interactive = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(
            Some(Cluster::new("https://a").with_certificate_authority_data(b"ca".to_vec())),
            true,
        ),
    );
    assert_eq!(
        CacheKey::for_request(&interactive, &["x".into()], &[("user", "u")]),
        base
    );
    assert_eq!(base.to_hex().len(), 64);
    // Length prefixes keep parts apart.
    assert_ne!(
        CacheKey::builder().part("a", b"bc").finish(),
        CacheKey::builder().part("ab", b"c").finish()
    );
}

#[test]
fn cache_entries_are_expiry_aware_and_bound_to_their_key() {
    let key = CacheKey::builder().part("user", b"u").finish();
    let other = CacheKey::builder().part("user", b"v").finish();
    let resp = ExecCredential::response(
        ApiVersion::V1,
        ExecCredentialStatus::with_token(Token::new("CANARY-cached")).expires_at(t(1000)),
    );
    let file = CacheEntry::new(key, resp.clone()).to_json();
    let entry = CacheEntry::from_json(file.as_bytes(), &key).unwrap();
    assert_eq!(entry.response(), &resp);
    assert!(
        entry
            .fresh_response(t(900), Duration::from_secs(100))
            .is_some()
    );
    assert!(
        entry
            .fresh_response(t(901), Duration::from_secs(100))
            .is_none()
    );
    assert!(entry.fresh_response(t(2000), Duration::ZERO).is_none());
    assert_eq!(
        CacheEntry::from_json(file.as_bytes(), &other).unwrap_err(),
        Error::CacheKeyMismatch
    );
    assert!(!format!("{entry:?}").contains("CANARY"));
    let e = CacheEntry::from_json(b"{\"version\":1,\"key\":\"CANARY\"", &key).unwrap_err();
    assert!(!e.to_string().contains("CANARY"));
    let forever = CacheEntry::new(
        key,
        ExecCredential::response(
            ApiVersion::V1,
            ExecCredentialStatus::with_token(Token::new("t")),
        ),
    );
    assert!(
        forever
            .fresh_response(t(u32::MAX.into()), Duration::from_secs(60))
            .is_some()
    );
}
