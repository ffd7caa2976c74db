//! Minting (claims layout, key id, cache) and offline service-account token verification.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Error, Issuer, KeyProblem, KeySet, Minter, ServiceAccountVerifier,
    SigningKey, Validation, verify,
};
use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;
use signature::Signer as _;

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jwt.jsonl"
));
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn key_field(kid: &str, field: &str) -> String {
    VECTORS
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "key" && v["kid"] == kid)
        .unwrap()[field]
        .as_str()
        .unwrap()
        .to_owned()
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn b64d(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

#[test]
fn minted_tokens_have_the_kubernetes_layout_and_verify_with_the_reference_public_keys() {
    for (kid, alg) in [
        ("ec-p256", Algorithm::Es256),
        ("ec-p384", Algorithm::Es384),
        ("ed25519", Algorithm::EdDsa),
    ] {
        let key = SigningKey::from_pkcs8_pem(&key_field(kid, "private_pem")).unwrap();
        assert_eq!(key.algorithm(), alg);
        // kid = base64url(SHA-256(SPKI DER)) of the public key, as kube-apiserver computes it.
        let pem = key_field(kid, "public_pem");
        let (_, der) = pem_rfc7468::decode_vec(pem.as_bytes()).unwrap();
        assert_eq!(key.key_id(), b64(&sha2::Sha256::digest(&der)));
        assert_eq!(key.key_id().len(), 43);
        assert_eq!(key.public_key_pem().unwrap().trim(), pem.trim());

        let token = key
            .sign(
                &Issuer::new(ISSUER),
                "jane",
                &Audience::new("kube-system/dashboard"),
                now(),
                Duration::from_secs(60),
            )
            .unwrap();
        let parts: Vec<&str> = token.expose_secret().split('.').collect();
        let header = String::from_utf8(b64d(parts[0])).unwrap();
        assert_eq!(
            header,
            format!(r#"{{"alg":"{alg}","kid":"{}"}}"#, key.key_id())
        );
        let payload = String::from_utf8(b64d(parts[1])).unwrap();
        assert_eq!(
            payload,
            format!(
                r#"{{"aud":["kube-system/dashboard"],"exp":1750000060,"iat":1750000000,"iss":"{ISSUER}","nbf":1750000000,"sub":"jane"}}"#
            )
        );
        let keys = KeySet::from_pem(&pem, alg).unwrap();
        let v = Validation::new(Issuer::new(ISSUER), Audience::new("kube-system/dashboard"));
        let claims = verify(token.expose_secret(), &keys, &v, now()).unwrap();
        assert_eq!(claims.subject(), "jane");
        assert_eq!(claims.algorithm(), alg);
        assert_eq!(
            claims.expires_at().unwrap(),
            now() + Duration::from_secs(60)
        );
        assert_eq!(
            verify(
                token.expose_secret(),
                &keys,
                &v,
                now() + Duration::from_secs(60)
            )
            .err(),
            Some(Error::Expired)
        );
        // The JWKS from the reference keys selects the key by kid only when the kids match;
        // a kid-named public key set verifies the token.
        let named = key.public_key_set().unwrap();
        assert!(verify(token.expose_secret(), &named, &v, now()).is_ok());
    }
}

#[test]
fn rsa_private_keys_are_refused_and_garbage_is_an_error() {
    #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
    assert_eq!(
        SigningKey::from_pkcs8_pem(&key_field("rsa-rs256", "private_pem")).err(),
        Some(Error::UnsupportedKey)
    );
    #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
    {
        // With ring or aws-lc-rs, RSA keys mint RS256 tokens that verify with the reference public key.
        let key = SigningKey::from_pkcs8_pem(&key_field("rsa-rs256", "private_pem")).unwrap();
        assert_eq!(key.algorithm(), Algorithm::Rs256);
        let pem = key_field("rsa-rs256", "public_pem");
        assert_eq!(key.public_key_pem().unwrap().trim(), pem.trim());
        let token = key
            .sign(
                &Issuer::new(ISSUER),
                "jane",
                &Audience::new("ns/svc"),
                now(),
                Duration::from_secs(60),
            )
            .unwrap();
        let keys = KeySet::from_pem(&pem, Algorithm::Rs256).unwrap();
        let v = Validation::new(Issuer::new(ISSUER), Audience::new("ns/svc"));
        assert_eq!(
            verify(token.expose_secret(), &keys, &v, now())
                .unwrap()
                .subject(),
            "jane"
        );
    }
    assert_eq!(
        SigningKey::from_pkcs8_pem("not a key").err(),
        Some(Error::InvalidKey(KeyProblem::PrivateKey))
    );
    assert_eq!(
        SigningKey::from_pkcs8_pem(&key_field("ec-p256", "public_pem")).err(),
        Some(Error::InvalidKey(KeyProblem::PrivateKey))
    );
}

#[test]
fn minter_cache_hands_back_fresh_tokens_and_is_bounded() {
    let key = SigningKey::from_pkcs8_pem(&key_field("ec-p256", "private_pem")).unwrap();
    let mut minter = Minter::new(key, Issuer::new(ISSUER)).cache_capacity(3);
    let a = minter
        .mint("jane", &Audience::new("ns/svc"), now())
        .unwrap();
    // Within half the lifetime: the same token.
    assert_eq!(
        minter
            .mint(
                "jane",
                &Audience::new("ns/svc"),
                now() + Duration::from_secs(29)
            )
            .unwrap(),
        a
    );
    // Past half the lifetime: a new token.
    let b = minter
        .mint(
            "jane",
            &Audience::new("ns/svc"),
            now() + Duration::from_secs(30),
        )
        .unwrap();
    assert_ne!(b, a);
    // Different user or audience: different tokens.
    assert_ne!(
        minter.mint("joe", &Audience::new("ns/svc"), now()).unwrap(),
        a
    );
    assert_ne!(
        minter
            .mint("jane", &Audience::new("ns/other"), now())
            .unwrap(),
        a
    );
    for i in 0..10 {
        minter
            .mint(&format!("u{i}"), &Audience::new("ns/svc"), now())
            .unwrap();
        assert!(minter.cached() <= 3);
    }
    let mut uncached = Minter::new(
        SigningKey::from_pkcs8_pem(&key_field("ed25519", "private_pem")).unwrap(),
        Issuer::new(ISSUER),
    )
    .cache_capacity(0)
    .ttl(Duration::from_secs(10));
    uncached
        .mint("jane", &Audience::new("ns/svc"), now())
        .unwrap();
    assert_eq!(uncached.cached(), 0);
    for bad in ["", "a\r\nb", "a\0"] {
        assert_eq!(
            minter.mint(bad, &Audience::new("ns/svc"), now()).err(),
            Some(Error::InvalidInput("user"))
        );
    }
    assert_eq!(
        minter.mint("jane", &Audience::new(""), now()).err(),
        Some(Error::InvalidInput("audience"))
    );
}

/// A bound service-account token as kube-apiserver writes it (ES256, sorted keys, aud array).
fn sa_token(payload: &str) -> String {
    use p256::pkcs8::DecodePrivateKey as _;
    let key =
        p256::ecdsa::SigningKey::from_pkcs8_pem(&key_field("ec-p256", "private_pem")).unwrap();
    let input = format!(
        "{}.{}",
        b64(br#"{"alg":"ES256","kid":"ec-p256"}"#),
        b64(payload.as_bytes())
    );
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

const SA_PAYLOAD: &str = r#"{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":1750003600,"iat":1750000000,"iss":"https://kubernetes.default.svc.cluster.local","jti":"8f2c1d4e-1111-2222-3333-444455556666","kubernetes.io":{"namespace":"kube-system","node":{"name":"node-1","uid":"n-uid"},"pod":{"name":"dashboard-7d9","uid":"p-uid"},"serviceaccount":{"name":"dashboard","uid":"sa-uid"},"warnafter":1750000600},"nbf":1750000000,"sub":"system:serviceaccount:kube-system:dashboard"}"#;

fn sa_verifier() -> ServiceAccountVerifier {
    let jwks = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/jwt_jwks.json"
    ));
    ServiceAccountVerifier::new(
        KeySet::from_jwks(jwks).unwrap(),
        &[Issuer::new(ISSUER), Issuer::new("https://other.issuer")],
        &[],
    )
}

#[test]
fn service_account_tokens_give_the_kubernetes_user() {
    let token = sa_verifier().verify(&sa_token(SA_PAYLOAD), now()).unwrap();
    assert_eq!(
        token.user_name(),
        "system:serviceaccount:kube-system:dashboard"
    );
    assert_eq!(token.namespace(), "kube-system");
    assert_eq!(token.service_account_name(), "dashboard");
    assert_eq!(token.uid(), Some("sa-uid"));
    assert_eq!(
        token.groups(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated"
        ]
    );
    let extra = token.extra();
    let get = |k: &str| extra.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(
        get("authentication.kubernetes.io/pod-name"),
        Some("dashboard-7d9")
    );
    assert_eq!(get("authentication.kubernetes.io/pod-uid"), Some("p-uid"));
    assert_eq!(
        get("authentication.kubernetes.io/node-name"),
        Some("node-1")
    );
    assert_eq!(get("authentication.kubernetes.io/node-uid"), Some("n-uid"));
    assert_eq!(
        get("authentication.kubernetes.io/credential-id"),
        Some("JTI=8f2c1d4e-1111-2222-3333-444455556666")
    );
    let k = token.claims().kubernetes().unwrap();
    assert_eq!(k.warn_after_unix(), Some(1_750_000_600));
    assert!(k.secret().is_none());
    assert!(!token.is_stale(now()));
    assert!(token.is_stale(now() + Duration::from_secs(601)));
}

#[test]
fn service_account_leeway_is_sixty_seconds() {
    let v = sa_verifier();
    let t = sa_token(SA_PAYLOAD);
    let exp = UNIX_EPOCH + Duration::from_secs(1_750_003_600);
    assert!(v.verify(&t, exp + Duration::from_secs(59)).is_ok());
    assert_eq!(
        v.verify(&t, exp + Duration::from_secs(60)).err(),
        Some(Error::Expired)
    );
    let nbf = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    assert!(v.verify(&t, nbf - Duration::from_secs(60)).is_ok());
    assert_eq!(
        v.verify(&t, nbf - Duration::from_secs(61)).err(),
        Some(Error::NotYetValid)
    );
}

#[test]
fn service_account_rejections() {
    let v = sa_verifier();
    let wrong_sub = SA_PAYLOAD.replace(
        "system:serviceaccount:kube-system:dashboard",
        "system:admin",
    );
    assert_eq!(
        v.verify(&sa_token(&wrong_sub), now()).err(),
        Some(Error::InvalidClaim("sub"))
    );
    let no_k8s = r#"{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":1750003600,"iat":1750000000,"iss":"https://kubernetes.default.svc.cluster.local","nbf":1750000000,"sub":"x"}"#;
    assert_eq!(
        v.verify(&sa_token(no_k8s), now()).err(),
        Some(Error::MissingClaim("kubernetes.io"))
    );
    let bad_ns = SA_PAYLOAD.replace(r#""namespace":"kube-system""#, r#""namespace":7"#);
    assert_eq!(
        v.verify(&sa_token(&bad_ns), now()).err(),
        Some(Error::InvalidClaim("kubernetes.io"))
    );
    let wrong_aud = SA_PAYLOAD.replace(
        r#""aud":["https://kubernetes.default.svc.cluster.local"]"#,
        r#""aud":["vault"]"#,
    );
    assert_eq!(
        v.verify(&sa_token(&wrong_aud), now()).err(),
        Some(Error::WrongAudience)
    );
    let wrong_iss = SA_PAYLOAD.replace(
        r#""iss":"https://kubernetes.default.svc.cluster.local""#,
        r#""iss":"https://evil""#,
    );
    assert_eq!(
        v.verify(&sa_token(&wrong_iss), now()).err(),
        Some(Error::WrongIssuer)
    );
    // Legacy Secret-based token: no exp, no aud.
    let legacy = r#"{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"default","sub":"system:serviceaccount:default:x"}"#;
    assert!(v.verify(&sa_token(legacy), now()).is_err());
    // A second accepted issuer.
    let other = SA_PAYLOAD.replace(
        r#""iss":"https://kubernetes.default.svc.cluster.local""#,
        r#""iss":"https://other.issuer""#,
    );
    assert!(v.verify(&sa_token(&other), now()).is_ok());
}

/// A signed service-account token for `namespace` and `name`, with the matching `sub`.
fn sa_token_for(namespace: &str, name: &str) -> String {
    let payload = serde_json::json!({
        "aud": [ISSUER],
        "exp": 1_750_003_600,
        "iat": 1_750_000_000,
        "iss": ISSUER,
        "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": "u"}},
        "nbf": 1_750_000_000,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    });
    sa_token(&payload.to_string())
}

#[test]
fn service_account_names_that_cannot_be_split_again_are_refused() {
    let v = sa_verifier();
    // What kube-apiserver could have built: accepted.
    for (ns, name) in [("kube-system", "dashboard"), ("a", "my.sa"), ("ns-1", "x")] {
        let token = v.verify(&sa_token_for(ns, name), now()).unwrap();
        assert_eq!(token.namespace(), ns);
        assert_eq!(token.service_account_name(), name);
    }
    // `system:serviceaccount:bar:baz:x` could be (bar, baz:x) or (bar:baz, x); trailing
    // spaces, upper case, empty or over-long names are never valid object names.
    let long_ns = "n".repeat(64);
    let long_name = "s".repeat(254);
    for (ns, name) in [
        ("bar:baz", "x"),
        ("bar", "baz:x"),
        ("kube-system ", "dashboard"),
        ("kube-system", "dashboard "),
        (" kube-system", "dashboard"),
        ("Kube-System", "dashboard"),
        ("kube-system", "Dashboard"),
        ("kube.system", "dashboard"),
        ("kube-system", "dash_board"),
        ("-ns", "dashboard"),
        (long_ns.as_str(), "dashboard"),
        ("kube-system", long_name.as_str()),
    ] {
        assert_eq!(
            v.verify(&sa_token_for(ns, name), now()).err(),
            Some(Error::InvalidClaim("kubernetes.io")),
            "{ns:?} {name:?}"
        );
    }
}
