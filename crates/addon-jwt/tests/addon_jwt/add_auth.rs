//! Property tests of the API server's `add-auth` decision: the query rewriting never loses or
//! reorders another parameter, the rate limiter's table never outgrows its capacity, and no
//! query, user name or header line makes the decision panic.

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::num::NonZeroU32;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::add_auth::{AddAuth, Decision, ProxiedService, is_replaced_header};
use addon_jwt::{Issuer, Minter, RequestUser, SigningKey};
use proptest::prelude::*;

const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";

fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn add_auth() -> AddAuth {
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    AddAuth::new(Minter::new(key, Issuer::new("https://apiserver.example")))
}

/// Go's `url.QueryUnescape`, written out independently: `+` is a space, `%XX` a byte, any
/// other `%` an error.
fn go_unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

fn is_add_auth_pair(pair: &str) -> bool {
    let key = pair.split('=').next().unwrap();
    go_unescape(key).as_deref() == Some(&b"add-auth"[..])
}

/// One query parameter: plain and escaped `add-auth` spellings among arbitrary ones.
fn pair() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("add-auth=true".to_owned()),
        Just("add%2Dauth=true".to_owned()),
        Just("add-auth=tru%65".to_owned()),
        Just("Add-Auth=true".to_owned()),
        Just(String::new()),
        "[a-zA-Z0-9%+;=._~-]{0,12}",
        "[a-z]{1,6}=[^&#]{0,10}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// On injection the query is the request's parameters, in order and byte for byte, minus
    /// every `add-auth` one and the empty ones.
    #[test]
    fn rewriting_keeps_every_other_parameter_in_order(pairs in prop::collection::vec(pair(), 0..12)) {
        let query = pairs.join("&");
        let mut a = add_auth();
        let user = RequestUser::new("jane");
        let service = ProxiedService::new("kube-system", "dashboard");
        let decision = a.decide(&user, &service, Some(&query), t0()).unwrap();
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty() && !is_add_auth_pair(p))
            .collect();
        match decision {
            Decision::Inject(injection) => {
                let rewritten: Vec<&str> =
                    injection.query().map(|q| q.split('&').collect()).unwrap_or_default();
                prop_assert_eq!(rewritten, kept);
                // It asked: at least one add-auth parameter, each exactly `true` once decoded.
                let asked: Vec<&str> = query.split('&').filter(|p| is_add_auth_pair(p)).collect();
                prop_assert!(!asked.is_empty());
                for p in asked {
                    let value = p.split_once('=').map(|(_, v)| v).unwrap_or("");
                    prop_assert!(!p.contains(';'));
                    let decoded = go_unescape(value);
                    prop_assert_eq!(decoded.as_deref(), Some(&b"true"[..]));
                }
            }
            Decision::PassThrough => {
                // Some add-auth parameter is missing or not exactly `true`.
                let all_true = query.split('&').filter(|p| is_add_auth_pair(p)).all(|p| {
                    !p.contains(';')
                        && go_unescape(p.split_once('=').map(|(_, v)| v).unwrap_or(""))
                            .as_deref()
                            == Some(&b"true"[..])
                });
                let any = query.split('&').any(is_add_auth_pair);
                prop_assert!(!(any && all_true), "{query:?} asked for a token");
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }

    /// Whatever the sequence of users and times, the table of buckets never holds more than
    /// its capacity.
    #[test]
    fn the_bucket_table_never_exceeds_its_capacity(
        capacity in 1usize..6,
        steps in prop::collection::vec((0u8..20, 0u64..3_000), 1..60),
    ) {
        let mut a = add_auth()
            .rate(NonZeroU32::new(1).unwrap(), Duration::from_secs(1))
            .burst(NonZeroU32::new(2).unwrap())
            .users_capacity(capacity);
        let service = ProxiedService::new("kube-system", "dashboard");
        let mut now = t0();
        for (user, advance_ms) in steps {
            now += Duration::from_millis(advance_ms);
            let user = RequestUser::new(format!("user-{user}"));
            let decision = a.decide(&user, &service, Some("add-auth=true"), now).unwrap();
            prop_assert!(matches!(decision, Decision::Inject(_) | Decision::Refuse(_)));
            prop_assert!(a.users_tracked() <= capacity);
        }
    }

    /// No query, user name, Service or header line makes the decision panic; an injection
    /// never forwards a client's `Authorization` or `X-Authenticated-User`.
    #[test]
    fn arbitrary_input_never_panics(
        query in prop::option::of(prop_oneof![
            ".{0,64}",
            ".{0,32}".prop_map(|s| format!("add-auth=true&{s}")),
        ]),
        user in prop_oneof![".{0,24}", "[ -~]{0,24}"],
        namespace in prop_oneof![".{0,10}", "[a-z-]{0,10}"],
        name in prop_oneof![".{0,10}", "[a-z-]{0,10}"],
        headers in prop::collection::vec((".{0,24}", prop::collection::vec(any::<u8>(), 0..24)), 0..8),
        secs in any::<u32>(),
    ) {
        let mut a = add_auth();
        let now = UNIX_EPOCH + Duration::from_secs(u64::from(secs));
        let user = RequestUser::new(user);
        let service = ProxiedService::new(namespace, name);
        if let Ok(Decision::Inject(injection)) = a.decide(&user, &service, query.as_deref(), now) {
            let upstream: Vec<(&str, &[u8])> = injection.headers(&headers).collect();
            let (last, rest) = upstream.split_last().unwrap();
            prop_assert_eq!(last.0, "Authorization");
            prop_assert!(rest.iter().all(|(n, _)| !is_replaced_header(n)));
        }
    }
}
