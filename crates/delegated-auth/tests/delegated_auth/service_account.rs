//! Offline verification of projected service-account tokens: OIDC discovery and key set,
//! the user and extra kube-apiserver gives, audience binding, expiry, hostile documents.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests"
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use delegated_auth::{
    BearerToken, Error, MAX_DISCOVERY_BYTES, OidcDiscovery, ServiceAccountAuthenticator,
};
use p256::ecdsa::signature::Signer as _;
use proptest::prelude::*;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const AUD: &str = "https://metrics.example";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn key() -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap()
}

fn jwks() -> String {
    let point = key().verifying_key().to_encoded_point(false);
    format!(
        r#"{{"keys":[{{"use":"sig","kty":"EC","kid":"k1","crv":"P-256","alg":"ES256","x":"{}","y":"{}"}}]}}"#,
        b64(point.x().unwrap()),
        b64(point.y().unwrap())
    )
}

fn discovery() -> OidcDiscovery {
    OidcDiscovery::from_json(
        format!(
            r#"{{"issuer":"{ISSUER}","jwks_uri":"https://10.96.0.1:443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}}"#
        )
        .as_bytes(),
    )
    .unwrap()
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn token(payload: &serde_json::Value) -> BearerToken {
    let input = format!(
        "{}.{}",
        b64(br#"{"alg":"ES256","kid":"k1"}"#),
        b64(payload.to_string().as_bytes())
    );
    let sig: p256::ecdsa::Signature = key().sign(input.as_bytes());
    BearerToken::new(format!("{input}.{}", b64(&sig.to_bytes()))).unwrap()
}

fn payload(aud: &str) -> serde_json::Value {
    serde_json::json!({
        "aud": [aud], "exp": 1_750_003_600, "iat": 1_750_000_000, "nbf": 1_750_000_000,
        "iss": ISSUER, "jti": "j-1",
        "kubernetes.io": {"namespace": "monitoring",
            "node": {"name": "node-1", "uid": "n-uid"},
            "pod": {"name": "prometheus-0", "uid": "p-uid"},
            "serviceaccount": {"name": "prometheus", "uid": "sa-uid"}},
        "sub": "system:serviceaccount:monitoring:prometheus"
    })
}

fn authenticator() -> ServiceAccountAuthenticator {
    ServiceAccountAuthenticator::new(&discovery(), jwks().as_bytes(), &[AUD.to_owned()]).unwrap()
}

#[test]
fn a_projected_token_gives_the_kubernetes_user() {
    let user = authenticator()
        .authenticate(&token(&payload(AUD)), now())
        .unwrap();
    assert_eq!(user.name, "system:serviceaccount:monitoring:prometheus");
    assert_eq!(user.uid.as_deref(), Some("sa-uid"));
    assert_eq!(
        user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated"
        ]
    );
    let extra = |k: &str| user.extra[&format!("authentication.kubernetes.io/{k}")].clone();
    assert_eq!(extra("pod-name"), ["prometheus-0"]);
    assert_eq!(extra("pod-uid"), ["p-uid"]);
    assert_eq!(extra("node-name"), ["node-1"]);
    assert_eq!(extra("node-uid"), ["n-uid"]);
    assert_eq!(extra("credential-id"), ["JTI=j-1"]);
}

#[test]
fn refused_offline() {
    let a = authenticator();
    // Another audience (the API server's own): audience confusion.
    assert!(matches!(
        a.authenticate(&token(&payload(ISSUER)), now()),
        Err(Error::Jwt(_))
    ));
    // Expired, beyond the 60-second leeway.
    assert!(
        a.authenticate(
            &token(&payload(AUD)),
            now() + Duration::from_secs(3600 + 61)
        )
        .is_err()
    );
    assert!(
        a.authenticate(
            &token(&payload(AUD)),
            now() + Duration::from_secs(3600 + 59)
        )
        .is_ok()
    );
    // Another issuer.
    let mut p = payload(AUD);
    p["iss"] = "https://evil.example".into();
    assert!(a.authenticate(&token(&p), now()).is_err());
    // A tampered payload.
    let t = token(&payload(AUD));
    let mut parts: Vec<String> = t.expose_secret().split('.').map(str::to_owned).collect();
    let mut p = payload(AUD);
    p["sub"] = "system:serviceaccount:kube-system:admin".into();
    parts[1] = b64(p.to_string().as_bytes());
    assert!(
        a.authenticate(&BearerToken::new(parts.join(".")).unwrap(), now())
            .is_err()
    );
    // Not a JWT.
    assert!(
        a.authenticate(&BearerToken::new("abc".to_owned()).unwrap(), now())
            .is_err()
    );
}

#[test]
fn configuration_is_checked() {
    assert!(ServiceAccountAuthenticator::new(&discovery(), jwks().as_bytes(), &[]).is_err());
    assert!(
        ServiceAccountAuthenticator::new(&discovery(), jwks().as_bytes(), &[String::new()])
            .is_err()
    );
    assert!(ServiceAccountAuthenticator::new(&discovery(), b"{}", &[AUD.to_owned()]).is_err());
    assert!(ServiceAccountAuthenticator::new(&discovery(), b"\xff", &[AUD.to_owned()]).is_err());
    let huge = vec![b' '; 1024 * 1024];
    assert!(matches!(
        ServiceAccountAuthenticator::new(&discovery(), &huge, &[AUD.to_owned()]),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn hostile_discovery_documents() {
    for bad in [
        &br#"{}"#[..],
        br#"{"issuer":"","jwks_uri":"https://x/jwks"}"#,
        br#"{"issuer":"https://x"}"#,
        br#"{"issuer":"https://x","jwks_uri":"http://x/jwks"}"#,
        br#"{"issuer":"https://x","jwks_uri":"file:///etc/passwd"}"#,
        br#"{"issuer":1,"jwks_uri":"https://x"}"#,
        br#"{"issuer":"https://x","issuer":"https://y","jwks_uri":"https://x"}"#,
        b"[]",
        b"",
        b"{",
    ] {
        assert!(
            OidcDiscovery::from_json(bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    let huge = vec![b' '; MAX_DISCOVERY_BYTES + 1];
    assert!(matches!(
        OidcDiscovery::from_json(&huge),
        Err(Error::TooLarge { .. })
    ));
    let d = discovery();
    assert_eq!(
        (d.issuer(), d.jwks_uri()),
        (ISSUER, "https://10.96.0.1:443/openid/v1/jwks")
    );
}

proptest! {
    #[test]
    fn discovery_never_panics(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = OidcDiscovery::from_json(&body);
    }
}
