//! Workspace-wide secret hygiene: canary secrets are fed through the failure paths of every
//! crate's public API, and no `Display`, `Debug` (plain and `{:#?}`), or error `source()` chain
//! (walked to the end) may contain them.
//!
//! Canaries, each recognisable on sight:
//! - bootstrap token `canary.zq9canaryzq9cana` (the ID `canary` is public; the secret half
//!   `zq9canaryzq9cana` is not), plus malformed tokens around it (`ZQ9CANA...` uppercase, extra
//!   characters);
//! - the HMAC key `CANARY-KEY-...`;
//! - the exec-plugin token `CANARY-EXEC-...`;
//! - PKCS#8 private keys (P-256 and Ed25519, generated with `rcgen`), checked as the PEM body and
//!   every 16-character run of its base64;
//! - exec-plugin client keys (`clientKeyData`, the fixtures of `crates/exec-credential/tests/data`);
//! - bearer JWTs (the whole token, its payload and its signature segment);
//! - kubeconfig user credentials (`CANARY-KUBECONFIG-...`).
//!
//! Logging: none of the library crates depends on `log` or `tracing` (they are sans-IO and emit
//! nothing; `no_library_crate_can_log` checks the manifests), so there are no log lines to
//! capture and the returned values are the whole observable output.
//!
//! Covered per crate (error variants reached with secret-bearing input, and values whose `Debug`
//! is checked):
//! - `jws-detached`: `sign`, `verify`, `verify_kubernetes`, `PreparedPayload::{new, sign, verify,
//!   verify_kubernetes}`, `HmacKey::new`: `EmptyKey`, `EmptyKid`, `KidTooLong`, `ContentTooLarge`,
//!   `TooLong`, `SegmentCount`, `PayloadNotDetached`, `InvalidBase64` (header and signature),
//!   `SignatureLength`, `HeaderTooLong`, `InvalidHeader` (`NotUtf8`, `NotObject`, `Syntax`,
//!   `TrailingData`, `DuplicateMember`, `TooDeep`, `WrongType`), `NonCanonicalHeader`,
//!   `MissingHeaderParameter`, `UnsupportedAlgorithm`, `KidMismatch`, `CriticalHeader`,
//!   `UnencodedPayload`, `BadSignature`; `Debug` of `HmacKey` and `PreparedPayload`.
//!   (`InvalidKey` is unreachable: HMAC accepts every key length.)
//! - `bootstrap-token`: `BootstrapToken`/`TokenSecret`/`TokenId` parsing (`InvalidToken`,
//!   `InvalidTokenSecret`, `InvalidTokenId`), `parse_delete_argument`, `SecretObject::{from_json,
//!   from_yaml}` (`Json`, `Yaml`, `InvalidBase64`, `DuplicateDataKey`, `InvalidDataKey`,
//!   `NotASecret`, `DocumentTooLarge`, `DataTooLarge`), `BootstrapTokenSecret::try_from`
//!   (`WrongSecretType`, `InvalidSecretName`, `InvalidToken`, `MissingData`, `TokenIdMismatch`,
//!   `DeletionPending`, `InvalidExpiration`), `KubeadmToken::{validate,
//!   from_json, from_secret}` (`Validation`), `authenticate` (every `RejectReason` reachable with a
//!   presented or stored canary secret), `cleaner_action`, `cleanup_plan`; `Debug` of
//!   `BootstrapToken`, `TokenSecret`, `SecretObject`, `BootstrapTokenSecret`, `KubeadmToken`,
//!   `AuthOutcome`. `BootstrapToken`'s `Display` prints the token on purpose (it is how a token is
//!   handed to an operator) and is the one exception.
//! - `clusterinfo`: `ClusterInfo::parse` on kubeconfigs carrying credentials
//!   (`CredentialsPresent` names the field, never the value) and malformed ones
//!   (`KubeconfigSyntax`, `InvalidField`, `TooLarge`), `ClusterInfoConfigMap::{from_json,
//!   verify}` (`ConfigMapSyntax`, `InvalidConfigMap`, `MissingKubeconfig`, `SignatureNotFound`,
//!   `TokenNotValidForCluster`, `BadSignature`, `TooLarge`), `reconcile` with canary token Secrets
//!   (valid, malformed, expired, non-signing), `TokenDiscoveryConfig`/`Discovery` (`NoPins`,
//!   `BadSignature` through `TimedOut`'s source chain, `Fetch`); `Debug` of the config, the
//!   state machine, its actions and `Reconciled`.
//! - `exec-credential`: `ExecCredential::{from_plugin_output, from_plugin_output_with_limit,
//!   from_exec_info, into_credential}` and `ExecAuthenticator::handle_run_result` on invalid plugin
//!   stdout holding the token (`UnsupportedApiVersion`, `WrongKind`, `MissingApiVersion`,
//!   `ApiVersionMismatch`, `Decode` (JSON and YAML: status as a string, token of the wrong type,
//!   non-UTF-8, trailing garbage, duplicate fields), `MissingStatus`, `NoCredential`,
//!   `PartialKeyPair`, `InvalidExpiration`, `OutputTooLarge`), client keys
//!   (`InvalidKeyPair` for mismatched, garbled, truncated, encrypted keys;
//!   `InvalidLeafCertificate`), stderr holding the token (`PluginFailed`, `PluginKilled`), the
//!   state machine (`UnknownRun`, `PluginTimedOut`, `PluginNotFound`, `SpawnFailed`,
//!   `PolicyDenied`, `RunBackoff`, with the token in the plugin's environment),
//!   `CacheEntry::from_json` (`CacheKeyMismatch`, `Decode`, `OutputTooLarge`); `Debug` of `Token`,
//!   `ClientKey`,
//!   `ExecCredential`, `ExecCredentialStatus`, `Credential`, `ClientIdentity`, `CacheEntry`,
//!   `ExecAuthenticator`, `Action`, `PluginRun`, `ExecConfig` and `Cluster` with secret
//!   arguments (`--client-secret=…`), env values and cluster extension values.
//! - `addon-jwt`: `SigningKey::{from_pkcs8_pem, from_pkcs8_der}` on generated, truncated,
//!   bit-flipped, relabelled and mismatched keys (`InvalidKey(PrivateKey)`, `UnsupportedKey`),
//!   `KeySet::{from_pem, from_jwks}` fed private keys (`InvalidKey`, `InvalidJwks`), `verify`,
//!   `verify_jws` and `ServiceAccountVerifier::verify` on minted tokens gone wrong (`BadSignature`,
//!   `UnknownKeyId`, `NoMatchingKey`, `AlgorithmNotAllowed`, `WrongAudience`, `WrongIssuer`,
//!   `Expired`, `NotYetValid`, `Malformed`, `Base64`, `Json`, `TooLarge`), `Sidecar::decide` rejections for each of them and for malformed
//!   `Authorization` headers; `Debug` of `SigningKey`, `Minter` (with its token cache),
//!   `KeySet` (HMAC canary), `BearerToken`, `Sidecar` (with its verified cache), `Forward`.
//!
//! Constant-time comparison is not timed here (no timed tests); what the API shows is checked:
//! the secret types implement equality by value, equal for equal secrets, unequal for secrets
//! differing in the first byte, the last byte or the length.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt::Debug;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;

// ---------------------------------------------------------------------------------------------
// Canaries and the leak checker.

/// The public half of the canary bootstrap token.
const TOKEN_ID: &str = "canary";
/// The secret half: 16 characters of `[a-z0-9]`.
const TOKEN_SECRET: &str = "zq9canaryzq9cana";
/// The whole canary bootstrap token.
const TOKEN: &str = "canary.zq9canaryzq9cana";
/// The canary HMAC key.
const HMAC_KEY: &str = "CANARY-KEY-7d41c0a9e3b2f516";
/// The canary HMAC key grown to the 32 bytes `addon-jwt` requires of an HS256 secret; it
/// contains [`HMAC_KEY`], so every check for that canary also finds this one.
const ADDON_HMAC_KEY: &str = "CANARY-KEY-7d41c0a9e3b2f516-addon-jwt";
/// The canary exec-plugin token.
const EXEC_TOKEN: &str = "CANARY-EXEC-5e8b1f2a9c04d7e3";
/// Canary kubeconfig credential values.
const KUBECONFIG_SECRET: &str = "CANARY-KUBECONFIG-c3f0a1e9";

/// Substrings that must never show up anywhere: any fragment of the canary token secret (also
/// uppercased, as in malformed tokens), and every uppercase canary.
const ALWAYS: &[&str] = &["zq9cana", "ZQ9CANA", "Zq9canA", "CANARY"];

const CERT1: &str = include_str!("../../../crates/exec-credential/tests/data/client1.crt");
const KEY1: &str = include_str!("../../../crates/exec-credential/tests/data/client1.key");
const KEY1_SEC1: &str = include_str!("../../../crates/exec-credential/tests/data/client1.sec1.key");
const KEY1_ENCRYPTED: &str =
    include_str!("../../../crates/exec-credential/tests/data/client1.encrypted.key");
const KEY2: &str = include_str!("../../../crates/exec-credential/tests/data/client2.key");
const CERT2: &str = include_str!("../../../crates/exec-credential/tests/data/client2.crt");
const ED25519_CERT: &str = include_str!("../../../crates/exec-credential/tests/data/ed25519.crt");
const ED25519_KEY: &str = include_str!("../../../crates/exec-credential/tests/data/ed25519.key");

/// 2024-01-02T03:04:05Z.
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

/// The base64 body of a PEM document (all lines between the armour, joined).
fn pem_body(pem: &str) -> String {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && !l.contains(':'))
        .map(str::trim)
        .collect()
}

/// Every 16-character run of the PEM body: none may appear in output.
fn pem_runs(pem: &str) -> Vec<String> {
    let body: Vec<char> = pem_body(pem).chars().collect();
    assert!(body.len() >= 16, "not a PEM document");
    body.windows(16).map(|w| w.iter().collect()).collect()
}

/// Asserts that `text` contains none of [`ALWAYS`] nor `extra`.
fn assert_text_clean(what: &str, text: &str, extra: &[String]) {
    for needle in ALWAYS
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
    {
        assert!(!text.contains(needle), "{what} leaks {needle:?}:\n{text}");
    }
}

/// Asserts that `Debug` (plain and alternate) of `value` is clean.
fn assert_debug_clean<T: Debug + ?Sized>(what: &str, value: &T, extra: &[String]) {
    assert_text_clean(what, &format!("{value:?}"), extra);
    assert_text_clean(what, &format!("{value:#?}"), extra);
}

/// Asserts that the error, and every error of its `source()` chain, is clean in `Display` and
/// `Debug`. Returns the chain's length so callers can assert that a chain was really walked.
fn assert_error_clean(what: &str, err: &(dyn StdError + 'static), extra: &[String]) -> usize {
    let mut depth = 0;
    let mut current = Some(err);
    while let Some(e) = current {
        let level = format!("{what} (source level {depth})");
        assert_text_clean(&level, &e.to_string(), extra);
        assert_text_clean(&level, &format!("{e:#}"), extra);
        assert_debug_clean(&level, e, extra);
        depth += 1;
        assert!(depth < 64, "{what}: source chain does not end");
        current = e.source();
    }
    depth
}

/// The variant name of an error, from its `Debug`.
fn variant(err: &dyn Debug) -> String {
    format!("{err:?}")
        .split([' ', '(', '{'])
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Asserts that every name of `expected` is in `seen`.
fn assert_reached(what: &str, seen: &std::collections::BTreeSet<String>, expected: &[&str]) {
    for v in expected {
        assert!(
            seen.contains(*v),
            "{what}: {v} not reached; reached {seen:?}"
        );
    }
}

#[test]
fn the_checker_catches_leaks() {
    let cases: [(&str, Vec<String>); 5] = [
        ("token secret zq9canaryzq9cana", vec![]),
        ("upper ZQ9CANARYZQ9CANA", vec![]),
        ("key CANARY-KEY-1", vec![]),
        ("pem run MIGHAgEAMBMGByqG", pem_runs(KEY1)),
        ("custom needle", vec!["needle".to_owned()]),
    ];
    for (text, extra) in cases {
        let caught = std::panic::catch_unwind(|| assert_text_clean("self-test", text, &extra));
        assert!(caught.is_err(), "{text:?} passed the checker");
    }
    assert_text_clean("self-test", "canary abcdef", &[]);
    // The source chain is walked: a clean outer error with a leaking source is caught.
    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("outer")
        }
    }
    impl std::fmt::Display for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("inner CANARY-EXEC-1")
        }
    }
    impl StdError for Outer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }
    impl StdError for Inner {}
    let caught = std::panic::catch_unwind(|| assert_error_clean("self-test", &Outer(Inner), &[]));
    assert!(caught.is_err(), "source chain not walked");
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn b64std(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------------
// Logging.

#[test]
fn no_library_crate_can_log() {
    for krate in [
        "jws-detached",
        "bootstrap-token",
        "clusterinfo",
        "exec-credential",
        "addon-jwt",
    ] {
        let path = format!(
            "{}/../crates/{krate}/Cargo.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let manifest = std::fs::read_to_string(&path).unwrap();
        for line in manifest.lines() {
            let name = line.split(['=', ' ', '.']).next().unwrap_or("").trim();
            assert!(
                !matches!(
                    name,
                    "log" | "tracing" | "tracing-core" | "slog" | "env_logger"
                ),
                "{krate} depends on a logging crate ({line}): capture its log lines here"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// jws-detached.

mod jws {
    use super::*;
    use jws_detached::{Error, HmacKey, PreparedPayload, sign, verify, verify_kubernetes};

    const CONTENT: &[u8] = b"apiVersion: v1\nkind: Config\n";

    fn keys() -> [&'static [u8]; 2] {
        [HMAC_KEY.as_bytes(), TOKEN_SECRET.as_bytes()]
    }

    /// A detached JWS with the given raw header and a well-formed signature made under `key`
    /// for another header. Header checks come before the MAC, so header errors are reached.
    fn with_header(header: &[u8], key: &[u8]) -> String {
        let good = sign(CONTENT, TOKEN_ID, key).unwrap();
        let sig = good.rsplit('.').next().unwrap();
        format!("{}..{sig}", b64url(header))
    }

    fn extra(jws: &str) -> Vec<String> {
        let sig = jws.rsplit('.').next().unwrap_or("").to_owned();
        let mut out = vec![HMAC_KEY.to_owned(), TOKEN_SECRET.to_owned()];
        if sig.len() >= 16 {
            out.push(sig);
        }
        out
    }

    #[test]
    fn every_error_path_is_clean() {
        for key in keys() {
            let good = sign(CONTENT, TOKEN_ID, key).unwrap();
            assert!(verify_kubernetes(&good, CONTENT, TOKEN_ID, key).is_ok());
            let (head, sig) = good.split_once("..").unwrap();
            let mut flipped: Vec<char> = sig.chars().collect();
            flipped[0] = if flipped[0] == 'A' { 'B' } else { 'A' };
            let flipped: String = flipped.into_iter().collect();
            let other_key = [key, b"-other"].concat();
            let cases: Vec<(&str, String, &[u8], &str, Error)> = vec![
                (
                    "wrong content",
                    good.clone(),
                    b"other".as_slice(),
                    TOKEN_ID,
                    Error::BadSignature,
                ),
                (
                    "wrong kid",
                    good.clone(),
                    CONTENT,
                    "abcdef",
                    Error::KidMismatch,
                ),
                (
                    "mutated signature",
                    format!("{head}..{flipped}"),
                    CONTENT,
                    TOKEN_ID,
                    Error::BadSignature,
                ),
                (
                    "wrong alg",
                    with_header(br#"{"alg":"HS512","kid":"canary"}"#, key),
                    CONTENT,
                    TOKEN_ID,
                    Error::UnsupportedAlgorithm,
                ),
                (
                    "no alg",
                    with_header(br#"{"kid":"canary"}"#, key),
                    CONTENT,
                    TOKEN_ID,
                    Error::MissingHeaderParameter { name: "alg" },
                ),
                (
                    "crit",
                    with_header(br#"{"alg":"HS256","kid":"canary","crit":["x"]}"#, key),
                    CONTENT,
                    TOKEN_ID,
                    Error::CriticalHeader,
                ),
                (
                    "b64 false",
                    with_header(br#"{"alg":"HS256","kid":"canary","b64":false}"#, key),
                    CONTENT,
                    TOKEN_ID,
                    Error::UnencodedPayload,
                ),
                (
                    "secret-bearing header member",
                    with_header(
                        format!(
                            r#"{{"alg":"HS256","kid":"canary","x":"{HMAC_KEY}{TOKEN_SECRET}"}}"#
                        )
                        .as_bytes(),
                        key,
                    ),
                    CONTENT,
                    "other1",
                    Error::KidMismatch,
                ),
            ];
            for (what, jws, content, kid, expected) in cases {
                let err = verify(&jws, content, kid, key).unwrap_err();
                assert_eq!(err, expected, "{what}");
                assert_error_clean(what, &err, &extra(&jws));
                let err = PreparedPayload::new(content)
                    .unwrap()
                    .verify(&jws, kid, key)
                    .unwrap_err();
                assert_error_clean(what, &err, &extra(&jws));
                let err = verify_kubernetes(&jws, content, kid, key).unwrap_err();
                assert_error_clean(what, &err, &extra(&jws));
                let err = PreparedPayload::new(content)
                    .unwrap()
                    .verify_kubernetes(&jws, kid, key)
                    .unwrap_err();
                assert_error_clean(what, &err, &extra(&jws));
            }
            // Wrong key: the signature of the right key must not be echoed, nor either key.
            let err = verify(&good, CONTENT, TOKEN_ID, &other_key).unwrap_err();
            assert_eq!(err, Error::BadSignature);
            assert_error_clean("wrong key", &err, &extra(&good));
            // Non-canonical header (Kubernetes mode only).
            let spaced = with_header(br#"{"kid":"canary","alg":"HS256"}"#, key);
            let err = verify(&spaced, CONTENT, TOKEN_ID, key).unwrap_err();
            assert_eq!(err, Error::BadSignature);
            assert_error_clean("reordered header", &err, &extra(&spaced));
            let err = verify_kubernetes(&spaced, CONTENT, TOKEN_ID, key).unwrap_err();
            assert_eq!(err, Error::NonCanonicalHeader);
            assert_error_clean("non-canonical", &err, &extra(&spaced));
        }
    }

    #[test]
    fn structural_and_header_errors_are_clean() {
        let key = HMAC_KEY.as_bytes();
        let good = sign(CONTENT, TOKEN_ID, key).unwrap();
        let sig = good.rsplit('.').next().unwrap();
        let header = |h: &[u8]| b64url(h);
        let inputs: Vec<String> = vec![
            format!("{HMAC_KEY}.{TOKEN_SECRET}"),
            format!("{HMAC_KEY}..{TOKEN_SECRET}.x"),
            format!("{}.{}.{sig}", header(b"{}"), b64url(HMAC_KEY.as_bytes())),
            format!("{HMAC_KEY}!..{sig}"),
            format!("{}..{sig}=", header(br#"{"alg":"HS256","kid":"canary"}"#)),
            format!(
                "{}..{}",
                header(br#"{"alg":"HS256","kid":"canary"}"#),
                b64url(HMAC_KEY.as_bytes())
            ),
            format!(
                "{}..{sig}",
                b64url(&[0xff, 0xfe, b'C', b'A', b'N', b'A', b'R', b'Y'])
            ),
            format!("{}..{sig}", header(format!(r#"["{HMAC_KEY}"]"#).as_bytes())),
            format!(
                "{}..{sig}",
                header(format!(r#"{{"alg":"{HMAC_KEY}"#).as_bytes())
            ),
            format!(
                "{}..{sig}",
                header(format!(r#"{{"alg":"HS256"}}"{HMAC_KEY}""#).as_bytes())
            ),
            format!(
                "{}..{sig}",
                header(format!(r#"{{"x":"{HMAC_KEY}","x":"{TOKEN_SECRET}"}}"#).as_bytes())
            ),
            format!(
                "{}..{sig}",
                header(
                    format!(
                        r#"{{"x":{}"{HMAC_KEY}"{}}}"#,
                        "[".repeat(64),
                        "]".repeat(64)
                    )
                    .as_bytes()
                )
            ),
            format!(
                "{}..{sig}",
                header(format!(r#"{{"alg":["{HMAC_KEY}"]}}"#).as_bytes())
            ),
            format!(
                "{}..{sig}",
                header(format!(r#"{{"alg":"HS256","kid":"{}"}}"#, HMAC_KEY.repeat(80)).as_bytes())
            ),
            format!("{}..{sig}", HMAC_KEY.repeat(200_000)),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for input in &inputs {
            for err in [
                verify(input, CONTENT, TOKEN_ID, key).unwrap_err(),
                verify_kubernetes(input, CONTENT, TOKEN_ID, key).unwrap_err(),
            ] {
                seen.insert(
                    format!("{err:?}")
                        .split([' ', '(', '{'])
                        .next()
                        .unwrap()
                        .to_owned(),
                );
                assert_error_clean("structural", &err, &[sig.to_owned()]);
            }
        }
        for variant in [
            "SegmentCount",
            "PayloadNotDetached",
            "InvalidBase64",
            "SignatureLength",
            "InvalidHeader",
            "TooLong",
            "HeaderTooLong",
        ] {
            assert!(seen.contains(variant), "{variant} not reached: {seen:?}");
        }
        // Argument errors.
        for err in [
            sign(CONTENT, TOKEN_ID, b"").unwrap_err(),
            sign(CONTENT, "", key).unwrap_err(),
            sign(CONTENT, &HMAC_KEY.repeat(100), key).unwrap_err(),
            sign(&HMAC_KEY.repeat(200_000).into_bytes(), TOKEN_ID, key).unwrap_err(),
            PreparedPayload::new(&HMAC_KEY.repeat(200_000).into_bytes()).unwrap_err(),
            PreparedPayload::new(CONTENT)
                .unwrap()
                .sign(TOKEN_ID, b"")
                .unwrap_err(),
            HmacKey::new(b"").unwrap_err(),
        ] {
            assert_error_clean("argument", &err, &[]);
        }
    }

    #[test]
    fn values_redact_and_compare_by_value() {
        let key = HmacKey::new(HMAC_KEY.as_bytes()).unwrap();
        assert_debug_clean("HmacKey", &key, &[]);
        assert_eq!(key.expose_secret(), HMAC_KEY.as_bytes());
        assert_debug_clean(
            "PreparedPayload",
            &PreparedPayload::new(HMAC_KEY.as_bytes()).unwrap(),
            &[],
        );
        let same = HmacKey::try_from(HMAC_KEY).unwrap();
        let first = HmacKey::new(&[b"X", &HMAC_KEY.as_bytes()[1..]].concat()).unwrap();
        let last =
            HmacKey::new(&[&HMAC_KEY.as_bytes()[..HMAC_KEY.len() - 1], b"X"].concat()).unwrap();
        let shorter = HmacKey::new(&HMAC_KEY.as_bytes()[..HMAC_KEY.len() - 1]).unwrap();
        assert_eq!(key, same);
        assert_ne!(key, first);
        assert_ne!(key, last);
        assert_ne!(key, shorter);
    }
}

// ---------------------------------------------------------------------------------------------
// bootstrap-token.

mod bootstrap {
    use super::*;
    use bootstrap_token::{
        AuthOutcome, BootstrapToken, BootstrapTokenSecret, KubeadmToken, RejectReason,
        SecretObject, TokenId, TokenSecret, authenticate, cleaner_action, cleanup_plan,
        parse_delete_argument,
    };

    pub(super) fn secret_with(pairs: &[(&str, &str)]) -> SecretObject {
        let mut data: BTreeMap<String, Vec<u8>> = [
            ("token-id", TOKEN_ID),
            ("token-secret", TOKEN_SECRET),
            ("usage-bootstrap-authentication", "true"),
            ("usage-bootstrap-signing", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
        .collect();
        for (k, v) in pairs {
            if v.is_empty() {
                data.remove(*k);
            } else {
                data.insert((*k).to_owned(), v.as_bytes().to_vec());
            }
        }
        SecretObject::new(
            "bootstrap-token-canary",
            "kube-system",
            "bootstrap.kubernetes.io/token",
            Some(data),
        )
    }

    const MALFORMED: &[&str] = &[
        "canary.ZQ9CANARYZQ9CANA",
        "canary.Zq9canaryzq9canA",
        "canary.zq9canaryzq9canaX",
        "canary.zq9canaryzq9can",
        "canary.zq9canaryzq9cana\n",
        " canary.zq9canaryzq9cana",
        "canary:zq9canaryzq9cana",
        "CANARY.zq9canaryzq9cana",
        "canary..zq9canaryzq9cana",
        "canary.zq9canaryzq9cana.zq9canaryzq9cana",
        "zq9canaryzq9cana",
        "ZQ9CANARYZQ9CANA",
    ];

    #[test]
    fn malformed_tokens_are_never_echoed() {
        for input in MALFORMED {
            let mut errors = vec![];
            if let Err(e) = input.parse::<BootstrapToken>() {
                errors.push(e);
            }
            if let Err(e) = BootstrapToken::from_bytes(input.as_bytes()) {
                errors.push(e);
            }
            if let Err(e) = input.parse::<TokenSecret>() {
                errors.push(e);
            }
            if let Err(e) = TokenSecret::from_bytes(input.as_bytes()) {
                errors.push(e);
            }
            if let Err(e) = input.parse::<TokenId>() {
                errors.push(e);
            }
            if let Err(e) = parse_delete_argument(input) {
                errors.push(e);
            }
            assert!(errors.len() >= 4, "{input:?} accepted too often");
            for e in &errors {
                assert_error_clean("token parse", e, &[]);
            }
            // Presented to the authenticator against the canary Secret.
            let stored = secret_with(&[]);
            let out = authenticate(input, now(), |_| Ok::<_, ()>(Some(&stored))).unwrap();
            assert!(out.authenticated().is_none(), "{input:?} authenticated");
            assert_debug_clean("AuthOutcome", &out, &[]);
            if let AuthOutcome::Rejected { reason, .. } = &out {
                assert_text_clean("RejectReason", &reason.to_string(), &[]);
            }
        }
    }

    #[test]
    fn values_redact_the_secret() {
        let token: BootstrapToken = TOKEN.parse().unwrap();
        assert_debug_clean("BootstrapToken", &token, &[]);
        assert_debug_clean("TokenSecret", token.secret(), &[]);
        // Display prints the token on purpose: it is the one way to hand it over.
        assert_eq!(token.to_string(), TOKEN);
        let s = secret_with(&[("description", "d"), ("expiration", "2099-01-01T00:00:00Z")]);
        assert_debug_clean("SecretObject", &s, &[]);
        let model = BootstrapTokenSecret::try_from(&s).unwrap();
        assert_debug_clean("BootstrapTokenSecret", &model, &[]);
        let kt = KubeadmToken::from_model(&model);
        assert_debug_clean("KubeadmToken", &kt, &[]);
        let out = authenticate(TOKEN, now(), |_| Ok::<_, ()>(Some(&s))).unwrap();
        assert!(out.authenticated().is_some());
        assert_debug_clean("AuthOutcome", &out, &[]);
        assert_debug_clean("cleaner_action", &cleaner_action(&s, now()), &[]);
        let far = now() + Duration::from_secs(200 * 365 * 86_400);
        assert_debug_clean("cleanup_plan", &cleanup_plan([&s], far), &[]);
        assert_debug_clean("signing_key", &s.signing_key(now()).map(|(id, _)| id), &[]);
        // Parsed back from JSON and YAML, still redacted.
        let json = s.to_json().unwrap();
        assert!(json.contains(&b64std(TOKEN_SECRET.as_bytes())));
        assert_debug_clean(
            "from_json",
            &SecretObject::from_json(json.as_bytes()).unwrap(),
            &[],
        );
    }

    #[test]
    fn presented_and_stored_secrets_never_reach_rejections() {
        // Every rejection that a stored canary Secret can cause, for the canary token and for a
        // near miss of it.
        let stored: Vec<(SecretObject, RejectReason)> = vec![
            (
                secret_with(&[("token-secret", "zq9canaryzq9canb")]),
                RejectReason::SecretMismatch,
            ),
            (
                secret_with(&[("token-id", "other1")]),
                RejectReason::TokenIdMismatch,
            ),
            (
                secret_with(&[("expiration", "2000-01-01T00:00:00Z")]),
                RejectReason::Expired,
            ),
            (
                secret_with(&[("expiration", "not-a-time")]),
                RejectReason::UnparseableExpiration,
            ),
            (
                secret_with(&[("usage-bootstrap-authentication", "")]),
                RejectReason::NotForAuthentication,
            ),
            (
                secret_with(&[("auth-extra-groups", "system:bootstrappers:bad!")]),
                RejectReason::InvalidExtraGroups,
            ),
            (
                secret_with(&[]).with_deletion_timestamp("2024-01-01T00:00:00Z"),
                RejectReason::DeletionPending,
            ),
            (
                SecretObject::new(
                    "bootstrap-token-canary",
                    "kube-system",
                    "Opaque",
                    secret_with(&[]).data_map().cloned(),
                ),
                RejectReason::InvalidType,
            ),
            (
                SecretObject::new(
                    "bootstrap-token-canary",
                    "default",
                    "bootstrap.kubernetes.io/token",
                    secret_with(&[]).data_map().cloned(),
                ),
                RejectReason::WrongSecret,
            ),
        ];
        for (secret, expected) in &stored {
            assert_debug_clean("stored Secret", secret, &[]);
            let out = authenticate(TOKEN, now(), |_| Ok::<_, ()>(Some(secret))).unwrap();
            match &out {
                AuthOutcome::Rejected { reason, .. } => assert_eq!(reason, expected),
                other => panic!("{expected:?}: {other:?}"),
            }
            assert_debug_clean("AuthOutcome", &out, &[]);
            if let AuthOutcome::Rejected { reason, .. } = &out {
                assert_text_clean("RejectReason", &reason.to_string(), &[]);
                assert_text_clean("RejectReason", reason.as_str(), &[]);
            }
            assert_debug_clean("cleaner_action", &cleaner_action(secret, now()), &[]);
            if let Err(e) = BootstrapTokenSecret::try_from(secret) {
                assert_error_clean("BootstrapTokenSecret::try_from", &e, &[]);
            }
            if let Err(e) = KubeadmToken::from_secret(secret) {
                assert_error_clean("KubeadmToken::from_secret", &e, &[]);
            }
        }
        let out = authenticate(TOKEN, now(), |_| Ok::<_, ()>(None::<&SecretObject>)).unwrap();
        assert_debug_clean("NotFound", &out, &[]);
    }

    #[test]
    fn secret_documents_never_echo_the_secret() {
        let enc = b64std(TOKEN_SECRET.as_bytes());
        let docs: Vec<String> = vec![
            format!(r#"{{"data":{{"token-secret":"{TOKEN_SECRET}="}}}}"#),
            format!(r#"{{"data":{{"token-secret":"{enc}"}},"kind":"{TOKEN_SECRET}"}}"#),
            format!(r#"{{"data":{{"token-secret":"{enc}"}},"apiVersion":"v2"}}"#),
            format!(r#"{{"data":{{"token-secret":"{enc}","token-secret":"{enc}"}}}}"#),
            format!(r#"{{"data":{{"token secret {TOKEN_SECRET}":"{enc}"}}}}"#),
            format!(r#"{{"stringData":{{"token-secret":["{TOKEN_SECRET}"]}}}}"#),
            format!(
                r#"{{"stringData":{{"token-secret":"{TOKEN_SECRET}"}} trailing {TOKEN_SECRET}"#
            ),
            format!(r#"{{"metadata":{{"name":{{"{TOKEN_SECRET}":1}}}}}}"#),
            format!(r#"{{"data":{{"token-secret":"{enc}"}},"type":{TOKEN_SECRET}}}"#),
            format!(
                "{{\"data\":{{\"token-secret\":\"{}\"}}}}",
                TOKEN_SECRET.repeat(200_000)
            ),
            format!(
                "{{\"data\":{{\"token-secret\":\"{}\"}}}}",
                TOKEN_SECRET.repeat(330_000)
            ),
        ];
        let mut count = 0;
        let mut seen = std::collections::BTreeSet::new();
        for doc in &docs {
            if let Err(e) = SecretObject::from_json(doc.as_bytes()) {
                assert_error_clean("from_json", &e, std::slice::from_ref(&enc));
                seen.insert(variant(&e));
                count += 1;
            }
            if let Err(e) = KubeadmToken::from_json(doc.as_bytes()) {
                assert_error_clean("KubeadmToken::from_json", &e, std::slice::from_ref(&enc));
            }
        }
        assert!(count >= docs.len() - 1, "only {count} documents rejected");
        let yamls: Vec<String> = vec![
            format!("data:\n  token-secret: {TOKEN_SECRET}=\n"),
            format!("data:\n  token-secret: {enc}\n  token-secret: {enc}\n"),
            format!("data: [{TOKEN_SECRET}\n"),
            format!("stringData:\n  token-secret: [{TOKEN_SECRET}]\n"),
            format!("kind: {TOKEN_SECRET}\ndata:\n  token-secret: {enc}\n"),
            format!("data: &a\n  token-secret: {enc}\nx: *{TOKEN_SECRET}\n"),
            format!("stringData:\n  token-secret: {TOKEN_SECRET}\n---\nx: {TOKEN_SECRET}\n"),
        ];
        for doc in &yamls {
            let err = SecretObject::from_yaml(doc.as_bytes()).unwrap_err();
            assert_error_clean("from_yaml", &err, std::slice::from_ref(&enc));
            seen.insert(variant(&err));
        }
        // Model checks on Secrets carrying the canary in odd places.
        let odd = [
            SecretObject::new(
                "bootstrap-token-canary",
                "kube-system",
                "bootstrap.kubernetes.io/token",
                None,
            ),
            SecretObject::new(
                "bootstrap-token-zzzzzz",
                "kube-system",
                "bootstrap.kubernetes.io/token",
                secret_with(&[]).data_map().cloned(),
            ),
            secret_with(&[("token-secret", "")]),
            secret_with(&[("token-secret", "ZQ9CANARYZQ9CANA")]),
            secret_with(&[("token-secret", "zq9canaryzq9canary")]),
            secret_with(&[("expiration", "not-a-time")]),
            secret_with(&[("auth-extra-groups", "not a group")]),
            secret_with(&[("usage-bootstrap-other", "true")]),
            secret_with(&[("token-id", "other1")]),
            secret_with(&[]).with_deletion_timestamp("2024-01-01T00:00:00Z"),
            SecretObject::new(
                "bootstrap-token-canary",
                "kube-system",
                "Opaque",
                secret_with(&[]).data_map().cloned(),
            ),
            SecretObject::new(
                "bootstrap-token-canary",
                "default",
                "bootstrap.kubernetes.io/token",
                secret_with(&[]).data_map().cloned(),
            ),
            SecretObject::new(
                "canary",
                "kube-system",
                "bootstrap.kubernetes.io/token",
                secret_with(&[]).data_map().cloned(),
            ),
        ];
        for s in &odd {
            assert_debug_clean("odd Secret", s, &[]);
            if let Err(e) = BootstrapTokenSecret::try_from(s) {
                assert_error_clean("try_from", &e, &[]);
                seen.insert(variant(&e));
            }
            if let Err(e) = KubeadmToken::from_secret(s) {
                assert_error_clean("from_secret", &e, &[]);
            }
        }
        assert_reached(
            "bootstrap-token",
            &seen,
            &[
                "Json",
                "Yaml",
                "InvalidBase64",
                "DuplicateDataKey",
                "InvalidDataKey",
                "NotASecret",
                "DocumentTooLarge",
                "DataTooLarge",
                "WrongSecretType",
                "InvalidSecretName",
                "InvalidToken",
                "MissingData",
                "TokenIdMismatch",
                "DeletionPending",
                "InvalidExpiration",
            ],
        );
        // kubeadm validation with the canary token.
        let mut kt = KubeadmToken::new(Some(TOKEN.parse().unwrap()));
        kt.usages = vec!["bad-usage".into()];
        kt.groups = vec!["bad group".into()];
        kt.ttl = Some(Duration::from_secs(1));
        kt.expires = Some(now());
        assert_debug_clean("KubeadmToken", &kt, &[]);
        let err = kt.validate("bootstrapTokens[0]").unwrap_err();
        assert!(
            matches!(err, bootstrap_token::Error::Validation(_)),
            "{err:?}"
        );
        assert_error_clean("validate", &err, &[]);
        let mut kt = KubeadmToken::new(Some(TOKEN.parse().unwrap()));
        kt.ttl = Some(Duration::from_secs(1));
        kt.expires = Some(now());
        let err = kt.validate("bootstrapTokens[0]").unwrap_err();
        assert_error_clean("validate", &err, &[]);
    }

    #[test]
    fn secrets_compare_by_value() {
        let a: TokenSecret = TOKEN_SECRET.parse().unwrap();
        let b: TokenSecret = TOKEN_SECRET.parse().unwrap();
        let first: TokenSecret = "aq9canaryzq9cana".parse().unwrap();
        let last: TokenSecret = "zq9canaryzq9canb".parse().unwrap();
        assert_eq!(a, b);
        assert_ne!(a, first);
        assert_ne!(a, last);
        assert!(a.ct_eq_bytes(TOKEN_SECRET.as_bytes()));
        assert!(!a.ct_eq_bytes(b"zq9canaryzq9canb"));
        assert!(!a.ct_eq_bytes(b"zq9canaryzq9can"));
        assert!(!a.ct_eq_bytes(b""));
        let t: BootstrapToken = TOKEN.parse().unwrap();
        assert_eq!(t, TOKEN.parse().unwrap());
        assert_ne!(t, "canary.zq9canaryzq9canb".parse().unwrap());
    }
}

// ---------------------------------------------------------------------------------------------
// clusterinfo.

mod cluster {
    use super::*;
    use bootstrap_token::BootstrapToken;
    use clusterinfo::{
        Action, ClusterInfo, ClusterInfoConfigMap, Error, Response, TokenDiscoveryConfig, reconcile,
    };

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    fn kubeconfig(ca: &str, user: &str) -> String {
        let ca_data = b64std(ca.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: {ca_data}\n    server: https://10.0.0.1:6443\ncontexts: []\ncurrent-context: \"\"\npreferences: {{}}\nusers:{user}\n"
        )
    }

    #[test]
    fn kubeconfig_credentials_are_named_never_shown() {
        let ca = ca_pem();
        let key_data = b64std(KUBECONFIG_SECRET.as_bytes());
        let users = [
            ("token", format!("token: {KUBECONFIG_SECRET}")),
            (
                "password",
                format!("username: admin\n      password: {KUBECONFIG_SECRET}"),
            ),
            ("client-key-data", format!("client-key-data: {key_data}")),
            (
                "client-key",
                format!("client-key: /tmp/{KUBECONFIG_SECRET}"),
            ),
            ("tokenFile", format!("tokenFile: /tmp/{KUBECONFIG_SECRET}")),
            (
                "auth-provider",
                format!(
                    "auth-provider:\n        name: oidc\n        config:\n          id-token: {KUBECONFIG_SECRET}"
                ),
            ),
            (
                "exec",
                format!(
                    "exec:\n        apiVersion: client.authentication.k8s.io/v1\n        command: x\n        env:\n        - name: T\n          value: {KUBECONFIG_SECRET}"
                ),
            ),
        ];
        for (field, user) in users {
            let doc = kubeconfig(&ca, &format!("\n- name: u\n  user:\n      {user}"));
            let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
            assert!(
                matches!(&err, Error::CredentialsPresent { field: f } if f.contains(field) || f.contains("users")),
                "{field}: {err:?}"
            );
            assert_error_clean(field, &err, std::slice::from_ref(&key_data));
            // JSON form too.
        }
        // JSON kubeconfig with a token.
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"Config","clusters":[{{"name":"","cluster":{{"server":"https://10.0.0.1:6443","certificate-authority-data":"{}"}}}}],"users":[{{"name":"u","user":{{"token":"{KUBECONFIG_SECRET}"}}}}]}}"#,
            b64std(ca.as_bytes())
        );
        let err = ClusterInfo::parse(json.as_bytes()).unwrap_err();
        assert!(matches!(err, Error::CredentialsPresent { .. }), "{err:?}");
        assert_error_clean("json token", &err, &[]);
        // Malformed documents around a credential value.
        let mut seen = std::collections::BTreeSet::new();
        let bad = [
            format!("users:\n- user:\n    token: [{KUBECONFIG_SECRET}\n"),
            format!("users: {KUBECONFIG_SECRET}\n"),
            format!("clusters: {KUBECONFIG_SECRET}\n"),
            format!("clusters:\n- cluster:\n    server: {KUBECONFIG_SECRET}\n"),
            format!(
                "clusters:\n- cluster:\n    certificate-authority-data: {KUBECONFIG_SECRET}\n    server: https://x:1\n"
            ),
            format!("a: &x {KUBECONFIG_SECRET}\nb: *y\n"),
            format!("token: {KUBECONFIG_SECRET}\n---\ntoken: {KUBECONFIG_SECRET}\n"),
            format!("{{\"token\": \"{KUBECONFIG_SECRET}\" trailing"),
            format!("token: {}\n", KUBECONFIG_SECRET.repeat(50_000)),
        ];
        for doc in bad {
            let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
            assert_error_clean("malformed kubeconfig", &err, &[]);
            seen.insert(variant(&err));
        }
        assert_reached(
            "ClusterInfo::parse",
            &seen,
            &["KubeconfigSyntax", "InvalidField", "TooLarge"],
        );
    }

    fn signed_configmap(key: &str) -> (String, ClusterInfoConfigMap) {
        let kc = kubeconfig(&ca_pem(), " []");
        let jws = jws_detached::sign(kc.as_bytes(), TOKEN_ID, key.as_bytes()).unwrap();
        let data: BTreeMap<String, String> = [
            ("kubeconfig".to_owned(), kc.clone()),
            (format!("jws-kubeconfig-{TOKEN_ID}"), jws),
        ]
        .into();
        (kc, ClusterInfoConfigMap::from_data(data))
    }

    #[test]
    fn configmap_verification_never_echoes_the_token_or_key() {
        let token: BootstrapToken = TOKEN.parse().unwrap();
        // Signed with the canary token: verifies.
        let (_, good) = signed_configmap(TOKEN_SECRET);
        assert!(good.verify(&token).is_ok());
        assert_debug_clean("ClusterInfoConfigMap", &good, &[]);
        // Signed with the HMAC canary instead: bad signature.
        let (kc, cm) = signed_configmap(HMAC_KEY);
        let err = cm.verify(&token).unwrap_err();
        assert_eq!(err, Error::BadSignature);
        let sig = cm
            .signature(*token.id())
            .unwrap()
            .rsplit('.')
            .next()
            .unwrap()
            .to_owned();
        assert_error_clean("bad signature", &err, &[sig]);
        // Other failures.
        let mut seen = std::collections::BTreeSet::new();
        let mut cases = vec![];
        cases.push(ClusterInfoConfigMap::from_data(
            [(format!("jws-kubeconfig-{TOKEN_ID}"), "not-a-jws".to_owned())].into(),
        ));
        cases.push(ClusterInfoConfigMap::from_data(
            [("kubeconfig".to_owned(), kc.clone())].into(),
        ));
        cases.push(ClusterInfoConfigMap::from_data(
            [
                ("kubeconfig".to_owned(), kc.clone()),
                (format!("jws-kubeconfig-{TOKEN_ID}"), String::new()),
            ]
            .into(),
        ));
        cases.push(ClusterInfoConfigMap::from_data(
            [
                ("kubeconfig".to_owned(), kc.clone()),
                (
                    format!("jws-kubeconfig-{TOKEN_ID}"),
                    "e30..not-a-signature".to_owned(),
                ),
            ]
            .into(),
        ));
        cases.push(ClusterInfoConfigMap::from_data(
            [
                ("kubeconfig".to_owned(), "x".repeat(2 << 20)),
                (
                    format!("jws-kubeconfig-{TOKEN_ID}"),
                    "e30..not-a-signature".to_owned(),
                ),
            ]
            .into(),
        ));
        for cm in &cases {
            assert_debug_clean("ConfigMap", cm, &[]);
            let err = cm.verify(&token).unwrap_err();
            assert_error_clean("verify", &err, &[]);
            seen.insert(variant(&err));
        }
        // JSON ConfigMaps.
        let mut rejected = 0;
        let docs = [
            format!(
                r#"{{"data":{{"kubeconfig":"{TOKEN_SECRET}","jws-kubeconfig-canary":{HMAC_KEY}}}}}"#
            ),
            format!(
                r#"{{"metadata":{{"name":"{TOKEN_SECRET}","namespace":"kube-public"}},"data":{{}}}}"#
            ),
            format!(
                r#"{{"metadata":{{"name":"cluster-info","namespace":"kube-public"}},"data":{{"jws-kubeconfig-canary":["{HMAC_KEY}"]}}}}"#
            ),
            format!(r#"{{"data":{{"kubeconfig":"a","kubeconfig":"{TOKEN_SECRET}"}}}}"#),
            format!(r#"["{HMAC_KEY}"]"#),
            format!(r#"{{"data":{{"x":"{}"}}}}"#, HMAC_KEY.repeat(200_000)),
        ];
        for doc in &docs {
            // (A duplicate `data` key is accepted, last one winning, as `encoding/json` does.)
            if let Err(err) = ClusterInfoConfigMap::from_json(doc.as_bytes()) {
                assert_error_clean("ConfigMap JSON", &err, &[]);
                seen.insert(variant(&err));
                rejected += 1;
            }
        }
        assert!(rejected >= docs.len() - 1, "only {rejected} rejected");
        assert_reached(
            "ClusterInfoConfigMap",
            &seen,
            &[
                "ConfigMapSyntax",
                "InvalidConfigMap",
                "MissingKubeconfig",
                "TokenNotValidForCluster",
                "BadSignature",
                "TooLarge",
            ],
        );
    }

    #[test]
    fn reconcile_with_canary_secrets_keeps_them_out_of_debug() {
        use bootstrap::secret_with;
        let kc = kubeconfig(&ca_pem(), " []");
        let data: BTreeMap<String, String> = [("kubeconfig".to_owned(), kc)].into();
        let secrets = [
            secret_with(&[]),
            secret_with(&[("token-secret", "ZQ9CANARYZQ9CANA")]),
            secret_with(&[("token-secret", "zq9canaryzq9canary")]),
            secret_with(&[("expiration", "2000-01-01T00:00:00Z")]),
            secret_with(&[("usage-bootstrap-signing", "false")]),
        ];
        let out = reconcile(&data, &secrets, now());
        assert!(out.update_needed());
        assert_eq!(out.signed_token_ids().len(), 1);
        assert_debug_clean("Reconciled", &out, &[]);
        // The signature it wrote is the canary token's and verifies.
        let cm = ClusterInfoConfigMap::from_data(out.into_data());
        assert!(cm.verify(&TOKEN.parse().unwrap()).is_ok());
    }

    #[test]
    fn discovery_never_shows_the_token() {
        let token: BootstrapToken = TOKEN.parse().unwrap();
        let config = TokenDiscoveryConfig::new("10.0.0.1:6443", token.clone()).unwrap();
        assert_debug_clean("TokenDiscoveryConfig", &config, &[]);
        let err = config.clone().start(now()).unwrap_err();
        assert_eq!(err, Error::NoPins);
        assert_error_clean("NoPins", &err, &[]);
        let mut d = config
            .dangerous_skip_ca_verification()
            .with_timeout(Duration::from_secs(60))
            .start(now())
            .unwrap();
        assert_debug_clean("Discovery", &d, &[]);
        let mut t = now();
        // Answer every fetch with a ConfigMap signed under the wrong key, then a transport
        // error quoting the token, until discovery gives up.
        let (_, cm) = signed_configmap(HMAC_KEY);
        let body = cm.to_json();
        let mut failed = None;
        let mut rounds = 0;
        while failed.is_none() {
            rounds += 1;
            assert!(rounds < 1000, "discovery does not end");
            match d.poll_action() {
                Some(Action::Fetch(req)) => {
                    assert_debug_clean("FetchRequest", &req, &[]);
                    if rounds % 2 == 0 {
                        d.handle_response(
                            t,
                            Response::Http {
                                status: 200,
                                body: body.as_bytes(),
                            },
                        );
                    } else {
                        d.handle_response(
                            t,
                            Response::Http {
                                status: 500,
                                body: TOKEN.as_bytes(),
                            },
                        );
                    }
                }
                Some(Action::WakeAt(at)) => {
                    t = at.max(t + Duration::from_secs(1));
                    d.handle_timeout(t);
                }
                Some(Action::Failed(e)) => failed = Some(e),
                Some(other) => panic!("{other:?}"),
                None => {
                    t += Duration::from_secs(5);
                    d.handle_timeout(t);
                }
            }
            assert_debug_clean("Discovery", &d, &[]);
        }
        let err = failed.unwrap();
        let depth = assert_error_clean("discovery failure", &err, &[]);
        assert!(
            matches!(&err, Error::TimedOut { .. }) && depth >= 2,
            "{err:?} (chain depth {depth})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// exec-credential.

mod exec {
    use super::*;
    use exec_credential::{
        Action, ApiVersion, CacheEntry, CacheKey, ClientKey, Cluster, CredentialState,
        ExecAuthenticator, ExecConfig, ExecCredential, ExecCredentialStatus, InteractiveMode,
        RunResult, Token,
    };

    const V1: &str = "client.authentication.k8s.io/v1";

    /// The exec token and the private runs of every client key (runs that also occur in a
    /// certificate are the embedded public key, and public).
    fn extra() -> Vec<String> {
        let certs = [CERT1, CERT2, ED25519_CERT].map(pem_body).concat();
        let mut out = vec![EXEC_TOKEN.to_owned()];
        for key in [KEY1, KEY1_SEC1, KEY2, ED25519_KEY] {
            out.extend(
                pem_runs(key)
                    .into_iter()
                    .filter(|run| !certs.contains(run.as_str())),
            );
        }
        out
    }

    fn json_str(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    /// Invalid plugin outputs that all hold the token (or a client key).
    fn invalid_outputs() -> Vec<(&'static str, Vec<u8>)> {
        let t = EXEC_TOKEN;
        let cert = json_str(CERT1);
        let key2 = json_str(KEY2);
        let garbled = json_str(&KEY1.replacen('A', "B", 3));
        let truncated = json_str(&{
            let mut lines: Vec<&str> = KEY1.lines().collect();
            lines.remove(2);
            lines.join("\n")
        });
        let mut out: Vec<(&'static str, Vec<u8>)> = vec![
            ("wrong apiVersion", format!(r#"{{"apiVersion":"client.authentication.k8s.io/v9","kind":"ExecCredential","status":{{"token":"{t}"}}}}"#).into()),
            ("other apiVersion", format!(r#"{{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{{"token":"{t}"}}}}"#).into()),
            ("wrong kind", format!(r#"{{"apiVersion":"{V1}","kind":"Secret","status":{{"token":"{t}"}}}}"#).into()),
            ("no kind", format!(r#"{{"apiVersion":"{V1}","status":{{"token":"{t}"}}}}"#).into()),
            ("no apiVersion", format!(r#"{{"kind":"ExecCredential","status":{{"token":"{t}"}}}}"#).into()),
            ("status as string", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":"{t}"}}"#).into()),
            ("token as array", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":["{t}"]}}}}"#).into()),
            ("token as object key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"{t}":1}}}}"#).into()),
            ("no status", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","spec":{{"x":"{t}"}}}}"#).into()),
            ("null status", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":null,"x":"{t}"}}"#).into()),
            ("empty token", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":""}},"x":"{t}"}}"#).into()),
            ("token and certificate without key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}","clientCertificateData":{cert}}}}}"#).into()),
            ("token and key without certificate", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}","clientKeyData":{key2}}}}}"#).into()),
            ("mismatched client key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}","clientCertificateData":{cert},"clientKeyData":{key2}}}}}"#).into()),
            ("garbled client key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{cert},"clientKeyData":{garbled}}}}}"#).into()),
            ("truncated client key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{cert},"clientKeyData":{truncated}}}}}"#).into()),
            ("encrypted client key", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{cert},"clientKeyData":{}}}}}"#, json_str(KEY1_ENCRYPTED)).into()),
            ("ed25519 key for a P-256 certificate", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{cert},"clientKeyData":{}}}}}"#, json_str(ED25519_KEY)).into()),
            ("key as certificate", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{key2},"clientKeyData":{key2}}}}}"#).into()),
            ("key labelled as certificate", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"clientCertificateData":{},"clientKeyData":{key2}}}}}"#, json_str(&KEY2.replace("PRIVATE KEY", "CERTIFICATE"))).into()),
            ("token as expiration", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}","expirationTimestamp":"{t}"}}}}"#).into()),
            ("duplicate token", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}","token":"{t}"}}}}"#).into()),
            ("duplicate status", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}"}},"status":{{"token":"{t}"}}}}"#).into()),
            ("trailing garbage", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}"}}}} {t}"#).into()),
            ("unterminated", format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}"#).into()),
            ("yaml status as string", format!("apiVersion: {V1}\nkind: ExecCredential\nstatus: {t}\n").into()),
            ("yaml duplicate token", format!("apiVersion: {V1}\nkind: ExecCredential\nstatus:\n  token: {t}\n  token: {t}\n").into()),
            ("yaml wrong kind", format!("apiVersion: {V1}\nkind: {t}\nstatus:\n  token: {t}\n").into()),
            ("yaml two documents", format!("apiVersion: {V1}\nkind: ExecCredential\nstatus:\n  token: {t}\n---\n{t}\n").into()),
        ];
        let mut non_utf8 = vec![0xff, 0xfe];
        non_utf8.extend_from_slice(
            format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}"#)
                .as_bytes(),
        );
        non_utf8.extend_from_slice(&[0xc3, 0x28]);
        non_utf8.extend_from_slice(br#""}}"#);
        out.push(("non-UTF-8 around the token", non_utf8));
        let mut non_utf8_inside =
            format!(r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{t}"#)
                .into_bytes();
        non_utf8_inside.extend_from_slice(&[0x80, 0xff]);
        non_utf8_inside.extend_from_slice(format!(r#"{t}"}}}}"#).as_bytes());
        out.push(("non-UTF-8 inside the token", non_utf8_inside));
        let oversize = format!(
            r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{}"}}}}"#,
            t.repeat(40_000)
        );
        out.push(("over-size", oversize.into()));
        out
    }

    fn authenticator() -> ExecAuthenticator {
        ExecAuthenticator::new(
            ExecConfig::new("plugin", ApiVersion::V1, InteractiveMode::Never)
                .env("PLUGIN_TOKEN", EXEC_TOKEN)
                .arg(format!("--client-secret={EXEC_TOKEN}"))
                .arg("--token")
                .arg(EXEC_TOKEN),
            Cluster::new("https://10.0.0.1:6443"),
        )
        .unwrap()
    }

    fn start_run(a: &mut ExecAuthenticator) -> exec_credential::PluginRun {
        let _ = a.credential(now()).unwrap();
        match a.poll_action() {
            Some(Action::RunPlugin(run)) => run,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_plugin_output_never_echoes_the_token_or_key() {
        let extra = extra();
        let mut seen = std::collections::BTreeSet::new();
        for (what, stdout) in invalid_outputs() {
            // The parse and validation steps directly.
            match ExecCredential::from_plugin_output(&stdout) {
                Err(e) => {
                    assert_error_clean(what, &e, &extra);
                    seen.insert(variant(&e));
                }
                Ok(cred) => {
                    // Certificate data is public and shown; a plugin that puts its key there
                    // has published it itself.
                    if !what.starts_with("key ") {
                        assert_debug_clean(what, &cred, &extra);
                    }
                    let err = cred.into_credential(ApiVersion::V1, now()).expect_err(what);
                    assert_error_clean(what, &err, &extra);
                    seen.insert(variant(&err));
                }
            }
            if let Err(e) = ExecCredential::from_plugin_output_with_limit(&stdout, 64) {
                assert_error_clean(what, &e, &extra);
            }
            if let Ok(s) = std::str::from_utf8(&stdout)
                && let Err(e) = ExecCredential::from_exec_info(s)
            {
                assert_error_clean(what, &e, &extra);
            }
            // Through the state machine.
            let mut a = authenticator();
            let run = start_run(&mut a);
            let err = a
                .handle_run_result(
                    now(),
                    run.id(),
                    RunResult::Exited {
                        code: 0,
                        stdout: &stdout,
                        stderr: EXEC_TOKEN.as_bytes(),
                    },
                )
                .expect_err(what);
            assert_error_clean(what, &err, &extra);
            assert_debug_clean("ExecAuthenticator", &a, &extra);
            // The failed output is not used.
            assert!(a.cached(now()).is_none(), "{what}");
        }
        assert_reached(
            "exec-credential",
            &seen,
            &[
                "UnsupportedApiVersion",
                "WrongKind",
                "MissingApiVersion",
                "Decode",
                "MissingStatus",
                "NoCredential",
                "PartialKeyPair",
                "InvalidExpiration",
                "OutputTooLarge",
                "InvalidKeyPair",
                "InvalidLeafCertificate",
            ],
        );
    }

    /// A credential that has already expired when it arrives is used as client-go uses it
    /// (it is not an error): neither it nor the authenticator holding it prints the token.
    #[test]
    fn a_credential_expired_on_arrival_is_used_and_never_printed() {
        let extra = extra();
        let t = json_str(EXEC_TOKEN);
        let stdout: Vec<u8> = format!(
            r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":{t},"expirationTimestamp":"2000-01-01T00:00:00Z"}}}}"#
        )
        .into();
        let cred = ExecCredential::from_plugin_output(&stdout).unwrap();
        assert_debug_clean("expired", &cred, &extra);
        let credential = cred.into_credential(ApiVersion::V1, now()).unwrap();
        assert_debug_clean("expired", &credential, &extra);
        let mut a = authenticator();
        let run = start_run(&mut a);
        let used = a
            .handle_run_result(
                now(),
                run.id(),
                RunResult::Exited {
                    code: 0,
                    stdout: &stdout,
                    stderr: EXEC_TOKEN.as_bytes(),
                },
            )
            .unwrap();
        assert_debug_clean("expired", used, &extra);
        assert_debug_clean("ExecAuthenticator", &a, &extra);
    }

    #[test]
    fn stderr_and_state_machine_errors_are_clean() {
        let extra = extra();
        let stderr = format!("error: token {EXEC_TOKEN} rejected\nkey:\n{KEY1}");
        let good = format!(
            r#"{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"{EXEC_TOKEN}"}}}}"#
        );
        let mut seen = std::collections::BTreeSet::new();
        let mut a = authenticator();
        // Failures back to back at one instant: no backoff between them here (the backoff
        // error itself is checked below).
        a.set_failure_backoff(Duration::ZERO, Duration::ZERO);
        for result in [
            RunResult::Exited {
                code: 1,
                stdout: good.as_bytes(),
                stderr: stderr.as_bytes(),
            },
            RunResult::Signaled {
                signal: 9,
                stderr: stderr.as_bytes(),
            },
            RunResult::TimedOut,
            RunResult::NotFound,
            RunResult::SpawnFailed {
                message: "permission denied",
            },
        ] {
            let run = start_run(&mut a);
            assert_debug_clean("PluginRun", &run, &extra);
            let err = a.handle_run_result(now(), run.id(), result).unwrap_err();
            seen.insert(variant(&err));
            assert_error_clean("run failure", &err, &extra);
            assert_debug_clean("ExecAuthenticator", &a, &extra);
        }
        // The wait after a failed run.
        let mut backing_off = authenticator();
        let run = start_run(&mut backing_off);
        let _ = backing_off.handle_run_result(now(), run.id(), RunResult::TimedOut);
        let err = backing_off.credential(now()).unwrap_err();
        seen.insert(variant(&err));
        assert_error_clean("backoff", &err, &extra);
        assert_debug_clean("ExecAuthenticator", &backing_off, &extra);
        // A policy that refuses the plugin: the refusal names the command only.
        let mut denied = authenticator();
        denied.set_policy(exec_credential::PluginPolicy::allowlist(["/usr/bin/other"]).unwrap());
        let err = denied.credential(now()).unwrap_err();
        seen.insert(variant(&err));
        assert_error_clean("policy", &err, &extra);
        assert_debug_clean("ExecAuthenticator", &denied, &extra);
        assert_reached(
            "exec-credential runs",
            &seen,
            &[
                "PluginFailed",
                "PluginKilled",
                "PluginTimedOut",
                "PluginNotFound",
                "SpawnFailed",
                "PolicyDenied",
                "RunBackoff",
            ],
        );
        // A success, then a stale run id, then a refresh.
        let run = start_run(&mut a);
        let cred = a
            .handle_run_result(
                now(),
                run.id(),
                RunResult::Exited {
                    code: 0,
                    stdout: good.as_bytes(),
                    stderr: stderr.as_bytes(),
                },
            )
            .unwrap();
        assert_eq!(cred.token().unwrap().expose_secret(), EXEC_TOKEN);
        assert_debug_clean("Credential", cred, &extra);
        let id = cred.id();
        let err = a
            .handle_run_result(
                now(),
                run.id(),
                RunResult::Exited {
                    code: 0,
                    stdout: good.as_bytes(),
                    stderr: b"",
                },
            )
            .unwrap_err();
        assert_error_clean("UnknownRun", &err, &extra);
        assert!(matches!(
            a.credential(now()).unwrap(),
            CredentialState::Ready(_)
        ));
        assert_debug_clean("CredentialState", &a.credential(now()).unwrap(), &extra);
        assert_debug_clean("ExecAuthenticator", &a, &extra);
        a.handle_unauthorized(now(), id).unwrap();
        while let Some(action) = a.poll_action() {
            assert_debug_clean("Action", &action, &extra);
        }
    }

    /// Plugin stdout whose canary is a number (integer, negative, float), a string in a place
    /// that expects another type, a nested object key or value, or the `apiVersion` itself: no
    /// error (`Display`, alternate `Display`, `Debug`, every `source()`) shows any of it, whether
    /// the output is decoded directly, as `KUBERNETES_EXEC_INFO`, through the state machine or
    /// inside a cache entry.
    #[test]
    fn plugin_stdout_canaries_never_reach_errors() {
        const INT: &str = "123456789123";
        const NEG: &str = "-987654321987";
        const FLOAT: &str = "4.2424242424e300";
        let mut extra = extra();
        extra.extend(["123456789123", "987654321987", "42424242"].map(String::from));
        let t = EXEC_TOKEN;
        let head = format!(r#""apiVersion":"{V1}","kind":"ExecCredential""#);
        let json: Vec<(&str, String)> = vec![
            (
                "numeric token",
                format!(r#"{{{head},"status":{{"token":{INT}}}}}"#),
            ),
            (
                "negative numeric key",
                format!(r#"{{{head},"status":{{"clientKeyData":{NEG}}}}}"#),
            ),
            (
                "float expiration",
                format!(r#"{{{head},"status":{{"token":"x","expirationTimestamp":{FLOAT}}}}}"#),
            ),
            (
                "numeric certificate",
                format!(r#"{{{head},"status":{{"clientCertificateData":{INT}}}}}"#),
            ),
            (
                "numeric kind",
                format!(r#"{{"apiVersion":"{V1}","kind":{INT},"status":{{"token":"x"}}}}"#),
            ),
            (
                "numeric apiVersion",
                format!(r#"{{"apiVersion":{INT},"kind":"ExecCredential"}}"#),
            ),
            (
                "numeric interactive",
                format!(r#"{{{head},"spec":{{"interactive":{INT}}}}}"#),
            ),
            (
                "numeric server",
                format!(r#"{{{head},"spec":{{"cluster":{{"server":{FLOAT}}}}}}}"#),
            ),
            ("numeric status", format!(r#"{{{head},"status":{NEG}}}"#)),
            (
                "canary apiVersion",
                format!(
                    r#"{{"apiVersion":"{t}","kind":"ExecCredential","status":{{"token":"{t}"}}}}"#
                ),
            ),
            (
                "canary apiVersion, v1 prefix",
                format!(r#"{{"apiVersion":"{V1}{t}","kind":"ExecCredential"}}"#),
            ),
            (
                "string interactive",
                format!(r#"{{{head},"spec":{{"interactive":"{t}"}}}}"#),
            ),
            (
                "string insecure flag",
                format!(r#"{{{head},"spec":{{"cluster":{{"insecure-skip-tls-verify":"{t}"}}}}}}"#),
            ),
            (
                "string CA data",
                format!(
                    r#"{{{head},"spec":{{"cluster":{{"certificate-authority-data":"{t}!"}}}}}}"#
                ),
            ),
            ("string spec", format!(r#"{{{head},"spec":"{t}"}}"#)),
            (
                "string in certificate array",
                format!(r#"{{{head},"status":{{"clientCertificateData":["{t}"]}}}}"#),
            ),
            (
                "nested key and value as token",
                format!(r#"{{{head},"status":{{"token":{{"{t}":{{"{t}-NESTED":"{t}-V"}}}}}}}}"#),
            ),
            (
                "nested number as server",
                format!(r#"{{{head},"spec":{{"cluster":{{"server":{{"{t}":{INT}}}}}}}}}"#),
            ),
            (
                "nested kind",
                format!(r#"{{"apiVersion":"{V1}","kind":{{"{t}":[{INT},"{t}"]}}}}"#),
            ),
            (
                "nested duplicate",
                format!(
                    r#"{{{head},"status":{{"token":"{t}","{t}":{{"token":{INT}}},"token":"{t}"}}}}"#
                ),
            ),
            (
                "trailing number",
                format!(r#"{{{head},"status":{{"token":"{t}"}}}}{INT}"#),
            ),
            ("number instead of object", INT.to_owned()),
            ("string instead of object", format!(r#""{t}""#)),
            (
                "canary kind",
                format!(r#"{{"apiVersion":"{V1}","kind":"{t}","status":{{"token":"{t}"}}}}"#),
            ),
            (
                "null apiVersion",
                format!(
                    r#"{{"apiVersion":null,"kind":"ExecCredential","status":{{"token":"{t}"}}}}"#
                ),
            ),
        ];
        let yaml: Vec<(&str, String)> = vec![
            // (A bare YAML scalar reads as a string here, so the number goes in a list.)
            (
                "yaml numeric token",
                format!("apiVersion: {V1}\nkind: ExecCredential\nstatus:\n  token: [{INT}]\n"),
            ),
            (
                "yaml canary apiVersion",
                format!("apiVersion: {t}\nkind: ExecCredential\nstatus:\n  token: {t}\n"),
            ),
            (
                "yaml nested token",
                format!(
                    "apiVersion: {V1}\nkind: ExecCredential\nstatus:\n  token:\n    {t}: {INT}\n"
                ),
            ),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (what, stdout) in json.iter().chain(&yaml) {
            let mut errors = Vec::new();
            match ExecCredential::from_plugin_output(stdout.as_bytes()) {
                Err(e) => errors.push(e),
                Ok(cred) => {
                    errors.push(cred.into_credential(ApiVersion::V1, now()).expect_err(what))
                }
            }
            if let Err(e) = ExecCredential::from_exec_info(stdout) {
                errors.push(e);
            }
            let mut a = authenticator();
            let run = start_run(&mut a);
            errors.push(
                a.handle_run_result(
                    now(),
                    run.id(),
                    RunResult::Exited {
                        code: 0,
                        stdout: stdout.as_bytes(),
                        stderr: b"",
                    },
                )
                .expect_err(what),
            );
            assert_debug_clean("ExecAuthenticator", &a, &extra);
            // Inside a cache entry (JSON only: the cache file is JSON).
            if stdout.starts_with('{') {
                let key = CacheKey::builder().part("k", b"v").finish();
                let entry = format!(
                    r#"{{"version":1,"key":"{}","credential":{stdout}}}"#,
                    key.to_hex()
                );
                errors.push(CacheEntry::from_json(entry.as_bytes(), &key).expect_err(what));
            }
            for e in &errors {
                assert_error_clean(what, e, &extra);
                seen.insert(variant(e));
            }
        }
        assert_reached(
            "plugin stdout canaries",
            &seen,
            &[
                "Decode",
                "UnsupportedApiVersion",
                "WrongKind",
                "MissingApiVersion",
            ],
        );
    }

    /// Plugin arguments and `env` values (`--client-secret=<canary>`, a bare canary argument)
    /// appear in no `Debug` of the configuration, the run, the action, the state machine or a
    /// cluster carrying an extension, and in no error of a run.
    #[test]
    fn plugin_arguments_and_env_values_never_reach_debug() {
        let extra = extra();
        let config = ExecConfig::new("plugin", ApiVersion::V1, InteractiveMode::Never)
            .arg(format!("--client-secret={EXEC_TOKEN}"))
            .arg(EXEC_TOKEN)
            .env("SECRET", EXEC_TOKEN)
            .provide_cluster_info(true);
        assert_debug_clean("ExecConfig", &config, &extra);
        let cluster = Cluster::new("https://10.0.0.1:6443")
            .with_config(serde_json::json!({ "clientSecret": EXEC_TOKEN }));
        assert_debug_clean("Cluster", &cluster, &extra);
        let mut a = ExecAuthenticator::new(config, cluster).unwrap();
        assert_debug_clean("ExecAuthenticator", &a, &extra);
        let _ = a.credential(now()).unwrap();
        assert_debug_clean("ExecAuthenticator with a run queued", &a, &extra);
        let action = a.poll_action().unwrap();
        assert_debug_clean("Action", &action, &extra);
        let Action::RunPlugin(run) = action else {
            panic!("{action:?}")
        };
        assert_debug_clean("PluginRun", &run, &extra);
        // The run still carries them: the caller needs them to spawn the plugin.
        assert_eq!(run.args()[1], EXEC_TOKEN);
        assert!(run.exec_info().contains(EXEC_TOKEN));
        let err = a
            .handle_run_result(
                now(),
                run.id(),
                RunResult::Exited {
                    code: 2,
                    stdout: b"",
                    stderr: b"",
                },
            )
            .unwrap_err();
        assert_error_clean("run failure", &err, &extra);
        assert_debug_clean("ExecAuthenticator after a failure", &a, &extra);
    }

    #[test]
    fn client_identity_and_rotation_are_clean() {
        let extra = extra();
        let status = ExecCredentialStatus::with_client_certificate(CERT1, ClientKey::new(KEY1))
            .token(Token::new(EXEC_TOKEN));
        assert_debug_clean("ExecCredentialStatus", &status, &extra);
        let resp = ExecCredential::response(ApiVersion::V1, status);
        assert_debug_clean("ExecCredential", &resp, &extra);
        let cred = resp.clone().into_credential(ApiVersion::V1, now()).unwrap();
        assert_debug_clean("Credential", &cred, &extra);
        assert_debug_clean("ClientIdentity", cred.client_identity().unwrap(), &extra);
        // Through the state machine: a RotateTlsIdentity action.
        let mut a = authenticator();
        let run = start_run(&mut a);
        let out = resp.to_stdout();
        a.handle_run_result(
            now(),
            run.id(),
            RunResult::Exited {
                code: 0,
                stdout: out.as_bytes(),
                stderr: b"",
            },
        )
        .unwrap();
        while let Some(action) = a.poll_action() {
            assert_debug_clean("Action", &action, &extra);
        }
        // Ed25519 and SEC1 keys with their certificates are accepted and redacted too.
        for (cert, key) in [(ED25519_CERT, ED25519_KEY), (CERT1, KEY1_SEC1)] {
            let status = ExecCredentialStatus::with_client_certificate(cert, ClientKey::new(key));
            let cred = ExecCredential::response(ApiVersion::V1, status)
                .into_credential(ApiVersion::V1, now())
                .unwrap();
            assert_debug_clean("Credential", &cred, &extra);
        }
    }

    #[test]
    fn cache_entries_are_clean() {
        let extra = extra();
        let status = ExecCredentialStatus::with_token(Token::new(EXEC_TOKEN))
            .client_certificate(CERT1, ClientKey::new(KEY1))
            .expires_at(now() + Duration::from_secs(3600));
        let resp = ExecCredential::response(ApiVersion::V1, status);
        let key = CacheKey::builder()
            .part("server", b"https://10.0.0.1:6443")
            .finish();
        let other = CacheKey::builder()
            .part("server", b"https://10.0.0.2:6443")
            .finish();
        let entry = CacheEntry::new(key, resp);
        assert_debug_clean("CacheEntry", &entry, &extra);
        assert_debug_clean(
            "fresh_response",
            &entry.fresh_response(now(), Duration::from_secs(60)),
            &extra,
        );
        let file = entry.to_json();
        assert!(file.contains(EXEC_TOKEN));
        let mismatch = CacheEntry::from_json(file.as_bytes(), &other).unwrap_err();
        assert_error_clean("CacheKeyMismatch", &mismatch, &extra);
        let damaged = [
            file.replacen('{', "[", 1),
            format!("{file}{EXEC_TOKEN}"),
            file.replace("\"token\"", "\"token\":1,\"x\""),
            format!("{file}{}", " ".repeat(4 << 20)),
        ];
        for d in damaged {
            let err = CacheEntry::from_json(d.as_bytes(), &key).unwrap_err();
            assert_error_clean("damaged cache", &err, &extra);
        }
    }

    #[test]
    fn secrets_compare_by_value() {
        let t = Token::new(EXEC_TOKEN);
        assert_eq!(t, Token::new(EXEC_TOKEN));
        assert_ne!(t, Token::new(EXEC_TOKEN.replacen('C', "D", 1)));
        assert_ne!(
            t,
            Token::new(format!("{}X", &EXEC_TOKEN[..EXEC_TOKEN.len() - 1]))
        );
        assert_ne!(t, Token::new(&EXEC_TOKEN[..EXEC_TOKEN.len() - 1]));
        assert_debug_clean("Token", &t, &[]);
        let k = ClientKey::new(KEY1);
        assert_eq!(k, ClientKey::new(KEY1));
        assert_ne!(k, ClientKey::new(KEY2));
        assert_ne!(k, ClientKey::new(&KEY1[..KEY1.len() - 1]));
        assert_debug_clean("ClientKey", &k, &pem_runs(KEY1));
    }
}

// ---------------------------------------------------------------------------------------------
// addon-jwt.

mod jwt {
    use super::*;
    use addon_jwt::{
        Algorithm, Audience, Decision, Error, Issuer, KeySet, Minter, ServiceAccountVerifier,
        Sidecar, SigningKey, Validation, verify, verify_jws,
    };

    const ISSUER: &str = "https://kubernetes.default.svc";
    const AUDIENCE: &str = "addon";

    fn generated() -> Vec<(Algorithm, String)> {
        vec![
            (
                Algorithm::Es256,
                rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                    .unwrap()
                    .serialize_pem(),
            ),
            (
                Algorithm::EdDsa,
                rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)
                    .unwrap()
                    .serialize_pem(),
            ),
        ]
    }

    /// The token, its payload and signature segments, the HMAC canary.
    fn token_needles(token: &str) -> Vec<String> {
        let mut out = vec![token.to_owned(), HMAC_KEY.to_owned()];
        for part in token.split('.').skip(1) {
            if part.len() >= 16 {
                out.push(part.to_owned());
            }
        }
        out
    }

    fn assert_rejected(
        sidecar: &Sidecar,
        headers: &[(&str, String)],
        at: SystemTime,
        needles: &[String],
    ) {
        match sidecar.decide(headers.iter().map(|(n, v)| (*n, v.as_str())), at) {
            Decision::Reject(r) => {
                assert_text_clean("Rejection", &r.to_string(), needles);
                assert_debug_clean("Rejection", &r, needles);
                assert_text_clean("RejectReason", &r.reason().to_string(), needles);
            }
            other => panic!("forwarded {headers:?}: {other:?}"),
        }
        assert_debug_clean("Sidecar", sidecar, needles);
    }

    #[test]
    fn private_keys_never_leak() {
        for (alg, pem) in generated() {
            let key = SigningKey::from_pkcs8_pem(&pem).unwrap();
            assert_eq!(key.algorithm(), alg);
            // The generated PKCS#8 documents embed the public key; runs of it are public.
            let public = pem_body(&key.public_key_pem().unwrap());
            let mut needles: Vec<String> = pem_runs(&pem)
                .into_iter()
                .filter(|run| !public.contains(run.as_str()))
                .collect();
            assert!(needles.len() > 16, "too few private runs");
            needles.push(pem_body(&pem));
            assert_debug_clean("SigningKey", &key, &needles);
            assert_text_clean("public key", &key.public_key_pem().unwrap(), &needles);
            let minter = Minter::new(key, Issuer::new(ISSUER));
            assert_debug_clean("Minter", &minter, &needles);
            // Malformed and mismatched forms of the key.
            let body = pem_body(&pem);
            let der = base64::engine::general_purpose::STANDARD
                .decode(&body)
                .unwrap();
            let flipped = {
                let mut c: Vec<char> = body.chars().collect();
                let i = c.len() / 2;
                c[i] = if c[i] == 'A' { 'B' } else { 'A' };
                c.into_iter().collect::<String>()
            };
            let wrap = |label: &str, b: &str| {
                format!("-----BEGIN {label}-----\n{b}\n-----END {label}-----\n")
            };
            let bad_pems = [
                wrap("PRIVATE KEY", &body[..body.len() - 8]),
                wrap("PRIVATE KEY", &flipped),
                wrap("EC PRIVATE KEY", &body),
                wrap("PUBLIC KEY", &body),
                wrap("CERTIFICATE", &body),
                format!("{pem}{}", &body[..32]),
                pem.replace("-----END PRIVATE KEY-----", ""),
                pem.replace('\n', " "),
                body.clone(),
            ];
            for bad in &bad_pems {
                if let Err(e) = SigningKey::from_pkcs8_pem(bad) {
                    assert_error_clean("from_pkcs8_pem", &e, &needles);
                }
                for a in [alg, Algorithm::Es256, Algorithm::EdDsa, Algorithm::Rs256] {
                    if let Err(e) = KeySet::from_pem(bad, a) {
                        assert_error_clean("KeySet::from_pem", &e, &needles);
                    }
                }
            }
            for a in [alg, Algorithm::Es256, Algorithm::EdDsa] {
                let err = KeySet::from_pem(&pem, a).unwrap_err();
                assert_error_clean("private key as public", &err, &needles);
                if let Err(e) = KeySet::from_spki_der(&der, a) {
                    assert_error_clean("private DER as SPKI", &e, &needles);
                }
            }
            for cut in [1, 8, der.len() / 2, der.len() - 1] {
                let err = SigningKey::from_pkcs8_der(&der[..cut]).unwrap_err();
                assert_error_clean("from_pkcs8_der", &err, &needles);
            }
            let mut extended = der.clone();
            extended.extend_from_slice(HMAC_KEY.as_bytes());
            if let Err(e) = SigningKey::from_pkcs8_der(&extended) {
                assert_error_clean("from_pkcs8_der extended", &e, &needles);
            }
            // A JWKS carrying the private scalar.
            let jwks = format!(
                r#"{{"keys":[{{"kty":"EC","crv":"P-256","x":"{}","y":"{}","d":"{}"}}]}}"#,
                &b64url(&der)[..43],
                &b64url(&der)[4..47],
                b64url(&der),
            );
            let err = KeySet::from_jwks(&jwks).unwrap_err();
            let mut with_d = needles.clone();
            with_d.push(b64url(&der)[..32].to_owned());
            assert_error_clean("JWKS with d", &err, &with_d);
        }
        // RSA signs with the ring or aws-lc-rs backend and is refused with `rust-crypto` alone:
        // either way without echoing the key.
        let rsa = include_str!("../../../crates/exec-credential/tests/data/rsa.key");
        match SigningKey::from_pkcs8_pem(rsa) {
            Ok(key) => assert_debug_clean("RSA SigningKey", &key, &pem_runs(rsa)),
            Err(err) => {
                assert_error_clean("RSA signing key", &err, &pem_runs(rsa));
            }
        }
        // The addon-jwt test fixture.
        let fixture = include_str!("../../../crates/addon-jwt/tests/data/expired_cert_key.pem");
        let key = SigningKey::from_pkcs8_pem(fixture).unwrap();
        assert_debug_clean("fixture SigningKey", &key, &pem_runs(fixture));
    }

    #[test]
    fn bearer_tokens_never_reach_errors_or_rejections() {
        let keys = generated();
        let (_, pem_a) = &keys[0];
        let (_, pem_b) = &keys[1];
        let key_a = SigningKey::from_pkcs8_pem(pem_a).unwrap();
        let key_b = SigningKey::from_pkcs8_pem(pem_b).unwrap();
        let set_a = key_a.public_key_set().unwrap();
        let set_b = key_b.public_key_set().unwrap();
        let set_b_no_kid =
            KeySet::from_pem(&key_b.public_key_pem().unwrap(), Algorithm::EdDsa).unwrap();
        let v = Validation::new(Issuer::new(ISSUER), Audience::new(AUDIENCE));
        let mut minter = Minter::new(key_a, Issuer::new(ISSUER));
        let good = minter
            .mint(
                "system:serviceaccount:default:canary",
                &Audience::new(AUDIENCE),
                now(),
            )
            .unwrap();
        let good = good.expose_secret().to_owned();
        assert!(verify(&good, &set_a, &v, now()).is_ok());
        assert_debug_clean("Minter with cache", &minter, &token_needles(&good));
        let parts: Vec<&str> = good.split('.').collect();
        let flip = |s: &str| {
            let mut c: Vec<char> = s.chars().collect();
            c[3] = if c[3] == 'A' { 'B' } else { 'A' };
            c.into_iter().collect::<String>()
        };
        let hs_header = b64url(br#"{"alg":"HS256","typ":"JWT"}"#);
        let canary_payload = b64url(
            format!(
                r#"{{"sub":"{HMAC_KEY}","aud":"{AUDIENCE}","iss":"{ISSUER}","exp":2000000000}}"#
            )
            .as_bytes(),
        );
        let cases: Vec<(&str, String, KeySet, Validation, SystemTime)> = vec![
            (
                "mutated signature",
                format!("{}.{}.{}", parts[0], parts[1], flip(parts[2])),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "mutated payload",
                format!("{}.{}.{}", parts[0], flip(parts[1]), parts[2]),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            ("other key", good.clone(), set_b.clone(), v.clone(), now()),
            (
                "key bound to another algorithm",
                good.clone(),
                set_b_no_kid,
                v.clone(),
                now(),
            ),
            (
                "wrong audience",
                good.clone(),
                set_a.clone(),
                Validation::new(Issuer::new(ISSUER), Audience::new("other")),
                now(),
            ),
            (
                "wrong issuer",
                good.clone(),
                set_a.clone(),
                Validation::new(Issuer::new("https://other"), Audience::new(AUDIENCE)),
                now(),
            ),
            (
                "expired",
                good.clone(),
                set_a.clone(),
                v.clone(),
                now() + Duration::from_secs(400 * 86_400),
            ),
            (
                "not yet valid",
                good.clone(),
                set_a.clone(),
                v.clone(),
                now() - Duration::from_secs(86_400),
            ),
            (
                "algorithm not allowed",
                good.clone(),
                set_a.clone(),
                v.clone().algorithms(&[Algorithm::EdDsa]),
                now(),
            ),
            (
                "unknown kid",
                good.clone(),
                set_a.clone().with_key_id("other").unwrap(),
                v.clone(),
                now(),
            ),
            (
                "truncated",
                good[..good.len() - 5].to_owned(),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "extra segment",
                format!("{good}.{}", parts[2]),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "padded",
                format!("{good}="),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "HS256 under the canary key",
                format!("{hs_header}.{canary_payload}.{}", parts[2]),
                KeySet::from_hmac_secret(ADDON_HMAC_KEY.as_bytes()).unwrap(),
                v.clone().algorithms(&[Algorithm::Hs256]),
                now(),
            ),
            (
                "HS256 not allowed",
                format!("{hs_header}.{canary_payload}.{}", parts[2]),
                KeySet::from_hmac_secret(ADDON_HMAC_KEY.as_bytes()).unwrap(),
                v.clone(),
                now(),
            ),
            (
                "too large",
                format!("{}.{}.{}", parts[0], parts[1].repeat(200), parts[2]),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "payload not JSON",
                format!("{}.{}.{}", parts[0], b64url(HMAC_KEY.as_bytes()), parts[2]),
                set_a.clone(),
                v.clone(),
                now(),
            ),
            (
                "signature in header",
                format!("{}.{}.{}", parts[2], parts[1], parts[2]),
                set_a.clone(),
                v.clone(),
                now(),
            ),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (what, token, keys, validation, at) in cases {
            let needles = token_needles(&token);
            let mut needles_good = token_needles(&good);
            needles_good.extend(needles.iter().cloned());
            let err = verify(&token, &keys, &validation, at).expect_err(what);
            seen.insert(
                format!("{err:?}")
                    .split(['(', ' ', '{'])
                    .next()
                    .unwrap()
                    .to_owned(),
            );
            assert_error_clean(what, &err, &needles_good);
            if let Err(e) = verify_jws(
                &token,
                &keys,
                &[Algorithm::Es256, Algorithm::EdDsa, Algorithm::Hs256],
            ) {
                assert_error_clean(what, &e, &needles_good);
            }
            let sa = ServiceAccountVerifier::new(
                keys.clone(),
                &[Issuer::new(ISSUER)],
                &[Audience::new(AUDIENCE)],
            );
            if let Err(e) = sa.verify(&token, at) {
                assert_error_clean(what, &e, &needles_good);
            }
            let sidecar = Sidecar::new(keys, validation);
            assert_rejected(
                &sidecar,
                &[("Authorization", format!("Bearer {token}"))],
                at,
                &needles_good,
            );
        }
        for variant in [
            "BadSignature",
            "WrongAudience",
            "WrongIssuer",
            "Expired",
            "AlgorithmNotAllowed",
            "UnknownKeyId",
            "Malformed",
            "TooLarge",
            "Json",
            "NoMatchingKey",
            "NotYetValid",
            "Base64",
        ] {
            assert!(seen.contains(variant), "{variant} not reached: {seen:?}");
        }
        // Malformed Authorization headers.
        let needles = token_needles(&good);
        let sidecar = Sidecar::new(set_a.clone(), v.clone());
        for headers in [
            vec![("Authorization", format!("Basic {good}"))],
            vec![("Authorization", format!("bearer  {good} {good}"))],
            vec![
                ("Authorization", format!("Bearer {good}")),
                ("Authorization", format!("Bearer {good}")),
            ],
            vec![("Authorization", format!("Bearer {}", good.repeat(5)))],
            vec![("Authorization", format!("Bearer {good}\n"))],
            vec![("Authorization", format!("Bearer {HMAC_KEY}"))],
            vec![("X-Token", format!("Bearer {good}"))],
        ] {
            assert_rejected(&sidecar, &headers, now(), &needles);
        }
        // A good token is forwarded; the forwarded request and the cache hold no token.
        match sidecar.decide(
            [("Authorization", format!("Bearer {good}").as_str())],
            now(),
        ) {
            Decision::Forward(f) => {
                assert_debug_clean("Forward", &f, &needles);
                for (_, value) in f.headers() {
                    assert_text_clean(
                        "forwarded header",
                        &String::from_utf8_lossy(value),
                        &needles,
                    );
                }
            }
            other => panic!("{other:?}"),
        }
        assert_debug_clean("Sidecar with cache", &sidecar, &needles);
        // Minting errors with the canary as input.
        for (user, aud) in [("", AUDIENCE), ("jane\n", AUDIENCE), ("jane", "")] {
            let err = minter.mint(user, &Audience::new(aud), now()).unwrap_err();
            assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
            assert_error_clean("mint", &err, &needles);
        }
        assert_debug_clean("Minter", &minter, &needles);
    }

    #[test]
    fn secrets_compare_by_value() {
        let (_, pem) = &generated()[1];
        let mut minter = Minter::new(
            SigningKey::from_pkcs8_pem(pem).unwrap(),
            Issuer::new(ISSUER),
        );
        let a = minter
            .mint("jane", &Audience::new(AUDIENCE), now())
            .unwrap();
        let cached = minter
            .mint(
                "jane",
                &Audience::new(AUDIENCE),
                now() + Duration::from_secs(1),
            )
            .unwrap();
        let other = minter
            .mint("joan", &Audience::new(AUDIENCE), now())
            .unwrap();
        assert_eq!(a, cached);
        assert_ne!(a, other);
        assert_eq!(format!("{a:?}"), "BearerToken(<redacted>)");
        let keys = KeySet::from_hmac_secret(ADDON_HMAC_KEY.as_bytes()).unwrap();
        assert_debug_clean("KeySet", &keys, &[]);
    }
}
