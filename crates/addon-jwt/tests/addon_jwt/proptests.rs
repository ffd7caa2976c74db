//! Property tests: sign→verify round trips (ES256, EdDSA, HS256 signed per case; every
//! algorithm, RSA included, through a pool of tokens signed once), any one-character change to a token
//! fails, and no parser panics on arbitrary input.

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Decision, Issuer, KeySet, STRIPPED_IDENTITY_HEADERS, Sidecar, SigningKey,
    Validation, verify,
};
use base64::Engine as _;
use hmac::Mac as _;
use proptest::prelude::*;
use serde_json::Value;

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jwt.jsonl"
));
const ISS: &str = "https://apiserver.example";
const HMAC_KEY: &[u8] = b"proptest-shared-secret-0123456789abcdef";

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

struct Fixture {
    signers: Vec<SigningKey>,
    keys: KeySet,
    /// Tokens signed once per algorithm: (audience, user, token).
    pool: Vec<(String, String, String)>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let signers: Vec<SigningKey> = ["ec-p256", "ec-p384", "ed25519"]
            .iter()
            .map(|kid| SigningKey::from_pkcs8_pem(&key_field(kid, "private_pem")).unwrap())
            .collect();
        let mut keys = KeySet::new();
        for s in &signers {
            keys.extend(s.public_key_set().unwrap()).unwrap();
        }
        let mut rsa = Vec::new();
        for (kid, alg) in [
            ("rsa-rs256", Algorithm::Rs256),
            ("rsa-ps256", Algorithm::Ps256),
        ] {
            use rsa::pkcs8::DecodePrivateKey as _;
            let (_, der) =
                pem_rfc7468::decode_vec(key_field(kid, "private_pem").as_bytes()).unwrap();
            rsa.push((alg, rsa::RsaPrivateKey::from_pkcs8_der(&der).unwrap()));
            let set = KeySet::from_pem(&key_field(kid, "public_pem"), alg).unwrap();
            keys.extend(set.with_key_id(kid).unwrap()).unwrap();
        }
        keys.extend(
            KeySet::from_hmac_secret(HMAC_KEY)
                .unwrap()
                .with_key_id("hs")
                .unwrap(),
        )
        .unwrap();
        let now = 1_750_000_000;
        let mut pool = Vec::new();
        for i in 0..4 {
            let user = format!("system:serviceaccount:ns{i}:user-{i}");
            let aud = format!("ns{i}/svc");
            for s in &signers {
                let t = s
                    .sign(
                        &Issuer::new(ISS),
                        &user,
                        &Audience::new(&aud),
                        at(now),
                        Duration::from_secs(60),
                    )
                    .unwrap();
                pool.push((aud.clone(), user.clone(), t.expose_secret().to_owned()));
            }
            for (alg, key) in &rsa {
                pool.push((
                    aud.clone(),
                    user.clone(),
                    rsa_token(*alg, key, &user, &aud, now),
                ));
            }
            pool.push((aud.clone(), user.clone(), hs256_token(&user, &aud, now)));
        }
        for (aud, user, token) in &pool {
            let claims = verify(token, &keys, &validation(aud), at(now)).unwrap();
            assert_eq!(claims.subject(), user);
        }
        Fixture {
            signers,
            keys,
            pool,
        }
    })
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn user() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:@._-]{1,40}"
}

fn audience() -> impl Strategy<Value = String> {
    "[a-z0-9-]{1,20}/[a-z0-9-]{1,20}"
}

fn now_secs() -> impl Strategy<Value = u64> {
    1_000_000_000u64..4_000_000_000u64
}

fn claims_json(user: &str, aud: &str, now: u64) -> String {
    serde_json::json!({
        "iss": ISS, "sub": user, "aud": [aud], "exp": now + 60, "nbf": now, "iat": now
    })
    .to_string()
}

fn hs256_token(user: &str, aud: &str, now: u64) -> String {
    let input = format!(
        "{}.{}",
        b64(br#"{"alg":"HS256","kid":"hs"}"#),
        b64(claims_json(user, aud, now).as_bytes())
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(HMAC_KEY).unwrap();
    mac.update(input.as_bytes());
    format!("{input}.{}", b64(&mac.finalize().into_bytes()))
}

fn rsa_token(alg: Algorithm, key: &rsa::RsaPrivateKey, user: &str, aud: &str, now: u64) -> String {
    use signature::{SignatureEncoding as _, Signer as _};
    let kid = if alg == Algorithm::Rs256 {
        "rsa-rs256"
    } else {
        "rsa-ps256"
    };
    let header = format!(r#"{{"alg":"{alg}","kid":"{kid}"}}"#);
    let input = format!(
        "{}.{}",
        b64(header.as_bytes()),
        b64(claims_json(user, aud, now).as_bytes())
    );
    let sig = if alg == Algorithm::Rs256 {
        let k = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(key.clone());
        k.sign(input.as_bytes()).to_vec()
    } else {
        // PSS needs a salt: derive it deterministically for the test from the input.
        use rsa::signature::RandomizedSigner as _;
        let k = rsa::pss::SigningKey::<sha2::Sha256>::new(key.clone());
        let mut rng = DetRng(seed(input.as_bytes()));
        k.sign_with_rng(&mut rng, input.as_bytes()).to_vec()
    };
    format!("{input}.{}", b64(&sig))
}

/// A deterministic byte stream for the PSS salt (test only).
struct DetRng([u8; 32]);

fn seed(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}

impl signature::rand_core::RngCore for DetRng {
    fn next_u32(&mut self) -> u32 {
        signature::rand_core::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        signature::rand_core::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        use sha2::Digest as _;
        for chunk in dest.chunks_mut(32) {
            self.0 = sha2::Sha256::digest(self.0).into();
            chunk.copy_from_slice(&self.0[..chunk.len()]);
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), signature::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl signature::rand_core::CryptoRng for DetRng {}

fn validation(aud: &str) -> Validation {
    Validation::new(Issuer::new(ISS), Audience::new(aud)).algorithms(&Algorithm::ALL)
}

fn at(now: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(now)
}

/// Header names around the identity headers the sidecar strips: the listed ones (a `*` filled
/// in), their neighbours, and an extra name, with up to three more letters, each character's
/// case and `-`/`_` picked at random.
fn identity_like_name() -> impl Strategy<Value = String> {
    let mut bases: Vec<String> = STRIPPED_IDENTITY_HEADERS
        .iter()
        .map(|n| n.replace('*', ""))
        .collect();
    bases.extend(
        [
            "X-Forwarded-For",
            "X-Remote",
            "Impersonate",
            "X-Auth-Request",
            "Remote",
            "X-Tenant",
            "Accept",
        ]
        .map(str::to_owned),
    );
    (
        prop::sample::select(bases),
        "[a-z]{0,3}",
        prop::collection::vec(any::<bool>(), 40),
    )
        .prop_map(|(base, tail, flips)| {
            format!("{base}{tail}")
                .chars()
                .zip(flips.into_iter().chain(std::iter::repeat(false)))
                .map(|(c, flip)| match (c, flip) {
                    ('-', true) => '_',
                    (c, true) => c.to_ascii_uppercase(),
                    (c, false) => c.to_ascii_lowercase(),
                })
                .collect()
        })
}

/// The reference rule: the name, lower case with `-` for `_`, is a listed name, or starts
/// with a listed prefix (or with the extra `x-tenant-`).
fn reference_stripped(name: &str) -> bool {
    let folded = name.to_ascii_lowercase().replace('_', "-");
    STRIPPED_IDENTITY_HEADERS
        .iter()
        .chain(&["X-Tenant-*"])
        .any(|listed| {
            let listed = listed.to_ascii_lowercase();
            match listed.strip_suffix('*') {
                Some(prefix) => folded.starts_with(prefix),
                None => folded == listed,
            }
        })
}

const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

proptest! {
    #[test]
    fn proptest_verify_never_panics(s in "\\PC*") {
        let f = fixture();
        let _ = verify(&s, &f.keys, &validation("a/b"), at(1_750_000_000));
    }

    #[test]
    fn proptest_token_shaped_garbage_never_panics(h in "[A-Za-z0-9_-]{0,80}", p in "[A-Za-z0-9_-]{0,200}", s in "[A-Za-z0-9_=-]{0,120}") {
        let f = fixture();
        let token = format!("{h}.{p}.{s}");
        prop_assert!(verify(&token, &f.keys, &validation("a/b"), at(1_750_000_000)).is_err());
    }

    #[test]
    fn proptest_json_headers_never_panic(header in "\\PC{0,120}", payload in "\\PC{0,200}") {
        let f = fixture();
        let token = format!("{}.{}.AAAA", b64(header.as_bytes()), b64(payload.as_bytes()));
        prop_assert!(verify(&token, &f.keys, &validation("a/b"), at(1_750_000_000)).is_err());
    }

    #[test]
    fn proptest_key_loaders_never_panic(s in "\\PC*", bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = KeySet::from_jwks(&s);
        let _ = KeySet::from_pem(&s, Algorithm::Rs256);
        let _ = KeySet::from_spki_der(&bytes, Algorithm::Es256);
        let _ = SigningKey::from_pkcs8_pem(&s);
        let _ = SigningKey::from_pkcs8_der(&bytes);
    }

    #[test]
    fn proptest_sidecar_never_forwards_spoofed_users(names in prop::collection::vec("[A-Za-z_-]{1,24}", 0..8),
                                                     values in prop::collection::vec("\\PC{0,30}", 8)) {
        let f = fixture();
        let sidecar = Sidecar::new(f.keys.clone(), validation("a/b"));
        let mut headers: Vec<(String, String)> = names.into_iter().zip(values).collect();
        headers.push(("x_Authenticated-USER".to_owned(), "admin".to_owned()));
        match sidecar.decide(headers, at(1_750_000_000)) {
            Decision::Reject(r) => prop_assert_eq!(r.status(), 403),
            other => prop_assert!(false, "forwarded without a token: {:?}", other),
        }
    }

    #[test]
    fn proptest_sidecar_strips_identity_headers(names in prop::collection::vec(identity_like_name(), 0..12),
                                                 user in user()) {
        let f = fixture();
        let sidecar = Sidecar::new(f.keys.clone(), validation("a/b")).strip_headers(["X-Tenant-*"]).unwrap();
        let now = 1_750_000_000;
        let auth = format!("Bearer {}", hs256_token(&user, "a/b", now));
        let mut headers = vec![("authorization", auth.as_str())];
        headers.extend(names.iter().map(|n| (n.as_str(), "system:masters")));
        let Decision::Forward(fwd) = sidecar.decide(headers.clone(), at(now)) else {
            panic!("rejected: {names:?}");
        };
        let mut expected: Vec<&str> = names.iter().map(String::as_str).filter(|n| !reference_stripped(n)).collect();
        expected.push("X-Authenticated-User");
        let forwarded: Vec<&str> = fwd.headers().map(|(n, _)| n).collect();
        prop_assert_eq!(&forwarded, &expected);
        // In place, the same names are left (in lower case; the map groups equal names).
        #[cfg(feature = "http")]
        {
        let mut map = http::HeaderMap::new();
        for (n, v) in &headers {
            map.append(http::HeaderName::from_bytes(n.as_bytes()).unwrap(), v.parse().unwrap());
        }
        prop_assert!(sidecar.decide_header_map(&mut map, at(now)).is_ok());
        let mut left: Vec<String> = map.keys().map(|k| k.as_str().to_owned()).collect();
        left.sort();
        let mut want: Vec<String> = expected.iter().map(|n| n.to_ascii_lowercase()).collect();
        want.sort();
        want.dedup();
        prop_assert_eq!(left, want);
        }
    }

    #[test]
    fn proptest_sign_verify_round_trip(which in prop::sample::select(vec![0usize, 2, 3]), user in user(), aud in audience(), now in now_secs()) {
        let f = fixture();
        let token = if which < 3 {
            f.signers[which].sign(&Issuer::new(ISS), &user, &Audience::new(&aud), at(now), Duration::from_secs(60)).unwrap().expose_secret().to_owned()
        } else {
            hs256_token(&user, &aud, now)
        };
        let claims = verify(&token, &f.keys, &validation(&aud), at(now + 30)).unwrap();
        prop_assert_eq!(claims.subject(), user.as_str());
        prop_assert!(verify(&token, &f.keys, &validation(&aud), at(now + 60)).is_err());
    }

    #[test]
    fn proptest_any_one_character_change_fails(token in any::<prop::sample::Index>(),
                                               pos in any::<prop::sample::Index>(), ch in any::<prop::sample::Index>()) {
        let f = fixture();
        let (aud, _, token) = &f.pool[token.index(f.pool.len())];
        let now = 1_750_000_000;
        let mut bytes = token.clone().into_bytes();
        let i = pos.index(bytes.len());
        let alphabet: Vec<u8> = B64URL.iter().copied().chain(*b".=+/ ").filter(|c| *c != bytes[i]).collect();
        bytes[i] = alphabet[ch.index(alphabet.len())];
        let tampered = String::from_utf8(bytes).unwrap();
        prop_assert!(verify(&tampered, &f.keys, &validation(aud), at(now)).is_err());
    }
}

/// What `remove_hop_by_hop` is held to: each `Connection` token (of the values that are visible
/// ASCII) made a header name and removed, then each [`addon_jwt::HOP_BY_HOP_HEADERS`] name
/// removed, when any of those is present.
#[cfg(feature = "http")]
fn remove_hop_by_hop_reference(headers: &mut http::HeaderMap) {
    if !headers
        .keys()
        .any(|name| addon_jwt::HOP_BY_HOP_HEADERS.contains(&name.as_str()))
    {
        return;
    }
    let named: Vec<http::HeaderName> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| http::HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in addon_jwt::HOP_BY_HOP_HEADERS {
        headers.remove(name);
    }
}

/// A header name: a hop-by-hop one, one a `Connection` value may name, or any.
#[cfg(feature = "http")]
fn response_header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(addon_jwt::HOP_BY_HOP_HEADERS.to_vec()).prop_map(str::to_owned),
        prop::sample::select(vec![
            "content-type",
            "x-per-hop",
            "x_per_hop",
            "date",
            "server"
        ])
        .prop_map(str::to_owned),
        "[a-z][a-z0-9_-]{0,6}",
    ]
}

/// A `Connection` value: names in any case with blanks around them, empty tokens, and now and
/// then a byte that is not visible ASCII.
#[cfg(feature = "http")]
fn connection_value() -> impl Strategy<Value = Vec<u8>> {
    let token = (
        response_header_name(),
        any::<bool>(),
        prop::sample::select(vec!["", " ", "\t", "  "]),
        prop::sample::select(vec!["", " ", "\t"]),
    )
        .prop_map(|(name, upper, before, after)| {
            let name = if upper {
                name.to_ascii_uppercase()
            } else {
                name
            };
            format!("{before}{name}{after}")
        });
    (prop::collection::vec(token, 0..4), any::<bool>()).prop_map(|(tokens, obs_text)| {
        let mut value = tokens.join(",").into_bytes();
        if obs_text {
            value.extend_from_slice(b", caf\xe9");
        }
        value
    })
}

#[cfg(feature = "http")]
proptest! {
    /// Responses with any mix of hop-by-hop headers, `Connection` values and other headers come
    /// out of `remove_hop_by_hop` as out of the reference, order of values included.
    #[test]
    fn proptest_remove_hop_by_hop_matches_the_reference(
        headers in prop::collection::vec((response_header_name(), "[a-z0-9]{0,3}"), 0..8),
        connections in prop::collection::vec(connection_value(), 0..3),
    ) {
        let mut map = http::HeaderMap::new();
        for (name, value) in &headers {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        for value in &connections {
            map.append(http::header::CONNECTION, http::HeaderValue::from_bytes(value).unwrap());
        }
        let mut expected = map.clone();
        remove_hop_by_hop_reference(&mut expected);
        addon_jwt::remove_hop_by_hop(&mut map);
        prop_assert_eq!(map, expected);
    }
}
