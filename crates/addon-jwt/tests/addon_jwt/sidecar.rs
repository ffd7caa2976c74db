//! The sidecar decision (rows 82–85 of the hostile-input catalogue, checklist §1.8 [px], L6).

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::{
    Audience, Decision, Error, Forward, Issuer, Minter, RejectReason, STRIPPED_IDENTITY_HEADERS,
    Sidecar, SigningKey, Validation,
};

const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn setup() -> (Sidecar, Minter) {
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    let sidecar = Sidecar::new(
        key.public_key_set().unwrap(),
        Validation::new(Issuer::new(ISSUER), Audience::new(AUDIENCE)),
    );
    (sidecar, Minter::new(key, Issuer::new(ISSUER)))
}

fn bearer(minter: &mut Minter, user: &str) -> String {
    format!(
        "Bearer {}",
        minter
            .mint(user, &Audience::new(AUDIENCE), now())
            .unwrap()
            .expose_secret()
    )
}

fn forward<N, V>(d: Decision<N, V>) -> Forward<N, V> {
    match d {
        Decision::Forward(f) => f,
        Decision::Reject(r) => panic!("rejected: {r}"),
        _ => unreachable!(),
    }
}

fn reject<N: AsRef<str>, V: AsRef<[u8]>>(d: Decision<N, V>) -> RejectReason {
    match d {
        Decision::Reject(r) => {
            assert_eq!(r.status(), 403);
            r.reason().clone()
        }
        Decision::Forward(f) => panic!("forwarded as {}", f.user()),
        _ => unreachable!(),
    }
}

fn user_headers<N: AsRef<str>, V: AsRef<[u8]>>(f: &Forward<N, V>) -> Vec<&[u8]> {
    f.headers()
        .filter(|(n, _)| {
            n.replace('_', "-")
                .eq_ignore_ascii_case("x-authenticated-user")
        })
        .map(|(_, v)| v)
        .collect()
}

// Row 82.
#[test]
fn spoofed_user_headers_never_reach_upstream() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    for spoof in [
        "X-Authenticated-User",
        "x-authenticated-user",
        "X-AUTHENTICATED-USER",
        "X_Authenticated_User",
        "x-authenticated_user",
    ] {
        let headers = [
            (spoof, "admin"),
            ("Authorization", auth.as_str()),
            (spoof, "root"),
            ("Accept", "text/html"),
        ];
        let f = forward(sidecar.decide(headers, now()));
        assert_eq!(user_headers(&f), vec![b"jane".as_slice()], "{spoof}");
        assert_eq!(f.headers().last().unwrap().0, "X-Authenticated-User");
        assert!(f.headers().any(|(n, _)| n == "Accept"));
        // Without a token: rejected, nothing forwarded.
        let r = reject(sidecar.decide([(spoof, "admin")], now()));
        assert_eq!(r, RejectReason::MissingAuthorization);
    }
}

/// Identity headers other than `X-Authenticated-User` that add-ons and their libraries read
/// (kube-apiserver's front proxy, impersonation, oauth2-proxy): removed on both paths, by
/// default, in every spelling; `strip_headers` adds names and prefixes.
#[test]
fn other_identity_headers_never_reach_upstream() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let spoofed = [
        "X-Remote-User",
        "x-remote-uid",
        "X_REMOTE_GROUP",
        "X-Remote-Extra-Scopes",
        "x-remote-extra-",
        "Impersonate-User",
        "impersonate-group",
        "Impersonate-Uid",
        "Impersonate-Extra-Acme.com%2Fproject",
        "X-Forwarded-User",
        "x_forwarded_email",
        "X-Forwarded-Groups",
        "X-Forwarded-Preferred-Username",
        "X-Auth-Request-User",
        "x-auth-request-email",
        "Remote-User",
    ];
    let kept = [
        "X-Forwarded-For",
        "X-Forwarded-Proto",
        "X-Remote-Addr",
        "X-Tenant",
        "Impersonate",
        "X-WebAuth-User",
    ];
    let mut headers: Vec<(&str, &str)> = vec![("Authorization", auth.as_str())];
    headers.extend(spoofed.iter().map(|n| (*n, "system:masters")));
    headers.extend(kept.iter().map(|n| (*n, "v")));
    let f = forward(sidecar.decide(headers.clone(), now()));
    let names: Vec<&str> = f.headers().map(|(n, _)| n).collect();
    let mut expected: Vec<&str> = kept.to_vec();
    expected.push("X-Authenticated-User");
    assert_eq!(names, expected);

    // More names, and prefixes, for this add-on.
    let strict = setup()
        .0
        .strip_headers(["x-webauth-user", "X_Tenant*"])
        .unwrap();
    let f = forward(strict.decide(headers.clone(), now()));
    let names: Vec<&str> = f.headers().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "X-Forwarded-For",
            "X-Forwarded-Proto",
            "X-Remote-Addr",
            "Impersonate",
            "X-Authenticated-User"
        ]
    );
    for bad in ["", "*", "X Tenant", "x:y*", "x\0"] {
        assert!(
            matches!(setup().0.strip_headers([bad]), Err(Error::InvalidInput(_))),
            "{bad:?}"
        );
    }

    #[cfg(feature = "http")]
    {
        let mut all: Vec<&str> = kept.to_vec();
        all.push("X-Authenticated-User");
        let strict_kept: Vec<&str> = names.clone();
        for (sidecar, expected) in [(&sidecar, all), (&strict, strict_kept)] {
            let mut expected: Vec<String> =
                expected.iter().map(|n| n.to_ascii_lowercase()).collect();
            expected.sort();
            // The first pass verifies, the second is decided from the cache alone.
            for pass in 0..2 {
                let mut map = http::HeaderMap::new();
                for (n, v) in &headers {
                    map.append(
                        http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                        v.parse().unwrap(),
                    );
                }
                let decided = if pass == 0 {
                    sidecar.decide_header_map(&mut map, now())
                } else {
                    sidecar
                        .decide_header_map_if_cached(&mut map, now())
                        .unwrap()
                };
                assert_eq!(&*decided.unwrap(), "jane");
                let mut left: Vec<String> = map.keys().map(|k| k.as_str().to_owned()).collect();
                left.sort();
                assert_eq!(left, expected, "pass {pass}");
            }
        }
    }
    for name in STRIPPED_IDENTITY_HEADERS {
        let name = name.replace('*', "x");
        let f = forward(sidecar.decide(
            [("authorization", auth.as_str()), (name.as_str(), "a")],
            now(),
        ));
        assert_eq!(f.headers().len(), 1, "{name}");
    }
}

// Row 83.
#[test]
fn multiple_authorization_headers_are_rejected() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let r = reject(sidecar.decide(
        [
            ("Authorization", auth.as_str()),
            ("authorization", auth.as_str()),
        ],
        now(),
    ));
    assert_eq!(r, RejectReason::MultipleAuthorization);
    let token = auth.trim_start_matches("Bearer ");
    let combined = format!("Bearer {token}, Bearer {token}");
    let r = reject(sidecar.decide([("Authorization", combined.as_str())], now()));
    assert_eq!(r, RejectReason::MalformedAuthorization);
}

// Row 84.
#[test]
fn bearer_scheme_rules() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let token = auth.trim_start_matches("Bearer ").to_owned();
    for ok in [
        format!("bearer {token}"),
        format!("BEARER {token}"),
        format!("Bearer {token}"),
    ] {
        assert_eq!(
            forward(sidecar.decide([("Authorization", ok.as_str())], now())).user(),
            "jane"
        );
    }
    for bad in [
        format!("Bearer  {token}"),
        format!("Bearer\t{token}"),
        format!("Bearer {token} extra"),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        "Basic amFuZTpzZWNyZXQ=".to_owned(),
    ] {
        assert_eq!(
            reject(sidecar.decide([("Authorization", bad.as_str())], now())),
            RejectReason::MalformedAuthorization
        );
    }
    // Padding is token68-legal but not a valid JWT: rejected by the verifier.
    let padded = format!("Bearer {token}=");
    assert!(matches!(
        reject(sidecar.decide([("Authorization", padded.as_str())], now())),
        RejectReason::InvalidToken(Error::Base64 { .. })
    ));
}

// Row 85.
#[test]
fn connection_cannot_strip_the_injected_header() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    for conn in [
        "X-Authenticated-User",
        "authorization",
        "keep-alive, X-Authenticated-User",
        "x_authenticated_user",
    ] {
        let headers = [
            ("Connection", conn),
            ("Authorization", auth.as_str()),
            ("Keep-Alive", "timeout=5"),
            ("X-Custom", "1"),
        ];
        let f = forward(sidecar.decide(headers, now()));
        assert_eq!(user_headers(&f), vec![b"jane".as_slice()]);
        assert!(
            !f.headers()
                .any(|(n, _)| n.eq_ignore_ascii_case("connection"))
        );
        assert!(
            !f.headers()
                .any(|(n, _)| n.eq_ignore_ascii_case("keep-alive"))
        );
        assert!(
            !f.headers()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        );
        assert!(f.headers().any(|(n, _)| n == "X-Custom"));
    }
    // A header named by Connection is dropped (hop-by-hop).
    let f = forward(sidecar.decide(
        [
            ("Connection", "X-Custom"),
            ("X-Custom", "1"),
            ("Authorization", auth.as_str()),
        ],
        now(),
    ));
    assert!(!f.headers().any(|(n, _)| n == "X-Custom"));
    // Hop-by-hop headers never go upstream.
    let f = forward(sidecar.decide(
        [
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "websocket"),
            ("TE", "trailers"),
            ("Authorization", auth.as_str()),
        ],
        now(),
    ));
    assert_eq!(f.headers().len(), 1);
}

#[test]
fn cache_does_not_confuse_tokens() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    assert_eq!(
        forward(sidecar.decide([("Authorization", auth.as_str())], now())).user(),
        "jane"
    );
    assert_eq!(sidecar.cached(), 1);
    // Identical token but for the last signature character: a cache miss, then a failure.
    let mut tampered = auth.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert!(matches!(
        reject(sidecar.decide([("Authorization", tampered.as_str())], now())),
        RejectReason::InvalidToken(_)
    ));
    // The cached entry expires with the token.
    let later = now() + Duration::from_secs(60);
    assert_eq!(
        reject(sidecar.decide([("Authorization", auth.as_str())], later)),
        RejectReason::InvalidToken(Error::Expired)
    );
    assert_eq!(sidecar.cached(), 0);
}

#[test]
fn cache_is_bounded() {
    let (sidecar, mut minter) = setup();
    // 32 entries: two in each of the 16 shards.
    let sidecar = sidecar.cache_capacity(32);
    for i in 0..200 {
        let auth = bearer(&mut minter, &format!("user{i}"));
        assert_eq!(
            forward(sidecar.decide([("Authorization", auth.as_str())], now())).user(),
            format!("user{i}")
        );
        assert!(sidecar.cached() <= 32);
    }
    assert!(sidecar.cached() > 16);
}

#[test]
fn limits_and_unsafe_subjects() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let big = "a".repeat(70 * 1024);
    assert_eq!(
        reject(sidecar.decide(
            [("Authorization", auth.as_str()), ("X-Big", big.as_str())],
            now()
        )),
        RejectReason::HeadersTooLarge
    );
    let many: Vec<(String, String)> = (0..300)
        .map(|i| (format!("X-H{i}"), "v".to_owned()))
        .collect();
    assert_eq!(
        reject(sidecar.decide(many, now())),
        RejectReason::HeadersTooLarge
    );
    // A verified but non-ASCII user cannot become a header value.
    let auth = bearer(&mut minter, "d\u{e9}faut");
    assert_eq!(
        reject(sidecar.decide([("Authorization", auth.as_str())], now())),
        RejectReason::SubjectNotHeaderSafe
    );
    // Wrong audience, wrong issuer.
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    let other = key
        .sign(
            &Issuer::new(ISSUER),
            "jane",
            &Audience::new("kube-system/other"),
            now(),
            Duration::from_secs(60),
        )
        .unwrap();
    let auth = format!("Bearer {}", other.expose_secret());
    assert_eq!(
        reject(sidecar.decide([("Authorization", auth.as_str())], now())),
        RejectReason::InvalidToken(Error::WrongAudience)
    );
}

#[test]
fn bytes_values_and_order_are_kept() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let bin: &[u8] = b"\x80\xff";
    let headers: Vec<(&str, &[u8])> = vec![
        ("Host", b"dashboard"),
        ("X-Bin", bin),
        ("Authorization", auth.as_bytes()),
        ("Accept", b"*/*"),
    ];
    let f = forward(sidecar.decide(headers, now()));
    let names: Vec<&str> = f.headers().map(|(n, _)| n).collect();
    assert_eq!(names, ["Host", "X-Bin", "Accept", "X-Authenticated-User"]);
    assert_eq!(f.headers().nth(1).unwrap().1, b"\x80\xff");
    // The lines are moved in and handed back, not copied.
    let (lines, user) = f.into_parts();
    assert_eq!(&*user, "jane");
    assert_eq!(lines.len(), 3);
    assert!(std::ptr::eq(lines[1].1, bin));
}

#[cfg(feature = "http")]
#[test]
fn header_map_round_trip() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let mut map = http::HeaderMap::new();
    map.insert("authorization", auth.parse().unwrap());
    map.append("x-authenticated-user", "admin".parse().unwrap());
    map.append("x_authenticated_user", "root".parse().unwrap());
    map.insert("accept", "*/*".parse().unwrap());
    // Borrowed lines, then a new map.
    let f = forward(sidecar.decide(map.iter().map(|(n, v)| (n.as_str(), v.as_bytes())), now()));
    let out = f.to_header_map().unwrap();
    let users: Vec<_> = out.get_all("x-authenticated-user").iter().collect();
    assert_eq!(users, ["jane"]);
    assert!(out.get("x_authenticated_user").is_none());
    assert!(out.get("authorization").is_none());
    assert_eq!(out.get("accept").unwrap(), "*/*");
}

#[cfg(feature = "http")]
#[test]
fn header_map_in_place() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    for cached in [false, true] {
        let mut map = http::HeaderMap::new();
        map.append("x-authenticated-user", "admin".parse().unwrap());
        map.insert("authorization", auth.parse().unwrap());
        map.append("x_authenticated_user", "root".parse().unwrap());
        map.append("x-authenticated_user", "root".parse().unwrap());
        map.insert("accept", "*/*".parse().unwrap());
        map.insert(
            "connection",
            "X-Custom, x_authenticated_user, keep-alive"
                .parse()
                .unwrap(),
        );
        map.append("connection", "x_other".parse().unwrap());
        map.insert("keep-alive", "timeout=5".parse().unwrap());
        map.insert("keep_alive", "timeout=5".parse().unwrap());
        map.insert("x-custom", "1".parse().unwrap());
        map.insert("x-other", "1".parse().unwrap());
        map.insert("te", "trailers".parse().unwrap());
        map.insert("transfer-encoding", "chunked".parse().unwrap());
        map.insert("proxy-authorization", "Basic x".parse().unwrap());
        map.insert("x-kept", "yes".parse().unwrap());
        let user = sidecar.decide_header_map(&mut map, now()).unwrap();
        assert_eq!(&*user, "jane");
        assert_eq!(sidecar.cached(), 1, "{cached}");
        let names: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        assert_eq!(map.len(), 3, "{names:?}");
        assert_eq!(map["accept"], "*/*");
        assert_eq!(map["x-kept"], "yes");
        let users: Vec<_> = map.get_all("x-authenticated-user").iter().collect();
        assert_eq!(users, ["jane"]);
    }
    // Rejections empty the map: nothing can be forwarded by mistake.
    for bad in [
        vec![("authorization", "Bearer abc")],
        vec![
            ("authorization", auth.as_str()),
            ("authorization", auth.as_str()),
        ],
        vec![("x-authenticated-user", "admin")],
        vec![("authorization", "Basic amFuZTpzZWNyZXQ=")],
    ] {
        let mut map = http::HeaderMap::new();
        for (n, v) in &bad {
            map.append(*n, v.parse().unwrap());
        }
        map.insert("accept", "*/*".parse().unwrap());
        let r = sidecar.decide_header_map(&mut map, now()).unwrap_err();
        assert_eq!(r.status(), 403);
        assert!(map.is_empty(), "{bad:?}");
    }
    let big = "a".repeat(70 * 1024);
    let mut map = http::HeaderMap::new();
    map.insert("authorization", auth.parse().unwrap());
    map.insert("x-big", big.parse().unwrap());
    assert_eq!(
        sidecar
            .decide_header_map(&mut map, now())
            .unwrap_err()
            .reason(),
        &RejectReason::HeadersTooLarge
    );
    let mut map = http::HeaderMap::new();
    map.insert("authorization", auth.parse().unwrap());
    for i in 0..300 {
        map.append("x-h", i.to_string().parse().unwrap());
    }
    assert_eq!(
        sidecar
            .decide_header_map(&mut map, now())
            .unwrap_err()
            .reason(),
        &RejectReason::HeadersTooLarge
    );
}

/// The in-place `HeaderMap` form forwards exactly what the list form forwards (names compared
/// in lower case, as `http` stores them; values as a multiset, since a map groups by name).
#[cfg(feature = "http")]
mod in_place_matches_list {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 16] = [
        "Host",
        "Accept",
        "X-Custom",
        "x_custom",
        "X-Other",
        "Connection",
        "Keep-Alive",
        "keep_alive",
        "TE",
        "Upgrade",
        "Transfer_Encoding",
        "X-Authenticated-User",
        "x_authenticated-USER",
        "Proxy-Authorization",
        "Authorization",
        "Trailer",
    ];
    const CONNECTION_TOKENS: [&str; 7] = [
        "close",
        "keep-alive",
        "X-Custom",
        "x_other",
        " x-authenticated-user ",
        "",
        "Accept",
    ];

    proptest! {
        #[test]
        fn same_headers_forwarded(
            names in prop::collection::vec(prop::sample::select(NAMES.to_vec()), 0..10),
            tokens in prop::collection::vec(prop::sample::select(CONNECTION_TOKENS.to_vec()), 0..4),
            with_token in any::<bool>(),
        ) {
            let (sidecar, mut minter) = setup();
            let auth = bearer(&mut minter, "jane");
            let connection = tokens.join(",");
            let mut lines: Vec<(String, String)> = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let value = match *n {
                        "Connection" => connection.clone(),
                        "Authorization" => auth.clone(),
                        _ => format!("v{i}"),
                    };
                    ((*n).to_owned(), value)
                })
                .collect();
            if with_token {
                lines.push(("Authorization".to_owned(), auth.clone()));
            }
            let mut map = http::HeaderMap::new();
            for (n, v) in &lines {
                map.append(http::HeaderName::from_bytes(n.as_bytes()).unwrap(), v.parse().unwrap());
            }
            let list = sidecar.decide(lines.clone(), now());
            let in_place = sidecar.decide_header_map(&mut map, now());
            match (list, in_place) {
                (Decision::Forward(f), Ok(user)) => {
                    prop_assert_eq!(f.user(), &*user);
                    let mut want: Vec<(String, Vec<u8>)> = f
                        .headers()
                        .map(|(n, v)| (n.to_ascii_lowercase(), v.to_vec()))
                        .collect();
                    let mut got: Vec<(String, Vec<u8>)> = map
                        .iter()
                        .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
                        .collect();
                    want.sort();
                    got.sort();
                    prop_assert_eq!(want, got);
                }
                (Decision::Reject(a), Err(b)) => {
                    prop_assert_eq!(a.reason(), b.reason());
                    prop_assert!(map.is_empty());
                }
                (list, in_place) => {
                    prop_assert!(false, "list {:?} but in place {:?}", list, in_place);
                }
            }
        }

        /// Deciding only from the cache gives `decide_header_map`'s decision whenever it gives
        /// one, and gives none (leaving the map as it was) only for a token not verified yet.
        #[test]
        fn cached_decision_matches_full_decision(
            names in prop::collection::vec(prop::sample::select(NAMES.to_vec()), 0..10),
            tokens in prop::collection::vec(prop::sample::select(CONNECTION_TOKENS.to_vec()), 0..4),
            with_token in any::<bool>(),
        ) {
            let (sidecar, mut minter) = setup();
            let auth = bearer(&mut minter, "jane");
            let connection = tokens.join(",");
            let mut map = http::HeaderMap::new();
            for (i, n) in names.iter().enumerate() {
                let value = match *n {
                    "Connection" => connection.clone(),
                    "Authorization" => auth.clone(),
                    _ => format!("v{i}"),
                };
                map.append(http::HeaderName::from_bytes(n.as_bytes()).unwrap(), value.parse().unwrap());
            }
            if with_token {
                map.append(http::header::AUTHORIZATION, auth.parse().unwrap());
            }
            let (mut early, mut full, mut late) = (map.clone(), map.clone(), map.clone());
            let before = sidecar.decide_header_map_if_cached(&mut early, now());
            let decided = sidecar.decide_header_map(&mut full, now());
            match before {
                None => {
                    prop_assert_eq!(&early, &map, "no decision: the map is left as it was");
                    prop_assert!(decided.is_ok(), "only a valid token is left to verify");
                }
                Some(before) => {
                    prop_assert_eq!(before.map_err(|r| r.reason().clone()), decided.clone().map_err(|r| r.reason().clone()));
                    prop_assert_eq!(&early, &full);
                }
            }
            // Once verified, the cache alone decides as the full decision did.
            let after = sidecar.decide_header_map_if_cached(&mut late, now());
            prop_assert!(after.is_some());
            prop_assert_eq!(
                after.unwrap().map_err(|r| r.reason().clone()),
                decided.map_err(|r| r.reason().clone())
            );
            prop_assert_eq!(&late, &full);
        }
    }
}

/// The cache-only decision never verifies: forged, expired and uncached tokens get no decision,
/// and nothing is cached by asking.
#[cfg(feature = "http")]
#[test]
fn cached_decision_never_verifies() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let map = |value: &str| {
        let mut m = http::HeaderMap::new();
        m.insert("authorization", value.parse().unwrap());
        m.insert("accept", "*/*".parse().unwrap());
        m
    };
    let (signed, _) = auth.rsplit_once('.').unwrap();
    let other = bearer(&mut minter, "mallory");
    let (_, other_signature) = other.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{other_signature}");
    for value in [auth.as_str(), forged.as_str()] {
        let mut m = map(value);
        assert!(sidecar.decide_header_map_if_cached(&mut m, now()).is_none());
        assert_eq!(m, map(value));
    }
    assert_eq!(sidecar.cached(), 0, "asking caches nothing");
    sidecar.decide_header_map(&mut map(&auth), now()).unwrap();
    assert!(sidecar.decide_header_map(&mut map(&forged), now()).is_err());
    assert_eq!(sidecar.cached(), 1, "only the valid token is remembered");
    let mut m = map(&forged);
    assert!(
        sidecar.decide_header_map_if_cached(&mut m, now()).is_none(),
        "a forgery sharing the valid token's header and claims is not a cache hit"
    );
    let mut m = map(&auth);
    assert_eq!(
        &*sidecar
            .decide_header_map_if_cached(&mut m, now())
            .unwrap()
            .unwrap(),
        "jane"
    );
    // Past `exp` (the minter's default lifetime, plus leeway) the entry is gone.
    let later = now() + Duration::from_secs(2 * 24 * 3600);
    let mut m = map(&auth);
    assert!(sidecar.decide_header_map_if_cached(&mut m, later).is_none());
    assert_eq!(sidecar.cached(), 0, "the expired entry is removed");
    // With the cache off, every valid token needs a check.
    let (uncached, _) = setup();
    let uncached = uncached.cache_capacity(0);
    uncached.decide_header_map(&mut map(&auth), now()).unwrap();
    assert!(
        uncached
            .decide_header_map_if_cached(&mut map(&auth), now())
            .is_none()
    );
}

#[test]
fn sidecar_is_sync_and_decides_from_many_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Sidecar>();
    let (sidecar, mut minter) = setup();
    let sidecar = sidecar.cache_capacity(64);
    let tokens: Vec<(String, String)> = (0..8)
        .map(|i| {
            let user = format!("user{i}");
            let auth = bearer(&mut minter, &user);
            (user, auth)
        })
        .collect();
    // One `&Sidecar` shared by every thread, no lock around it.
    let shared = &sidecar;
    std::thread::scope(|scope| {
        for (user, auth) in &tokens {
            scope.spawn(move || {
                for _ in 0..50 {
                    let f = forward(shared.decide([("Authorization", auth.as_str())], now()));
                    assert_eq!(f.user(), user);
                    assert_eq!(user_headers(&f), [user.as_bytes()]);
                    assert!(matches!(
                        reject(shared.decide([("Authorization", "Bearer a.b.c")], now())),
                        RejectReason::InvalidToken(_)
                    ));
                }
            });
        }
    });
    // Every token verified once and cached: later requests are cache hits.
    assert_eq!(sidecar.cached(), tokens.len());
    let clone = sidecar.clone();
    assert_eq!(clone.cached(), tokens.len());
}

/// A good token with `name: admin` beside it, as a list of pairs: rejected before verification,
/// whatever the token.
fn assert_pairs_reject_name(name: &str) {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    for request in [
        vec![("Authorization", auth.as_str()), (name, "admin")],
        vec![(name, "admin"), ("Authorization", auth.as_str())],
    ] {
        assert_eq!(
            reject(sidecar.decide(request, now())),
            RejectReason::InvalidHeaderName,
            "{name:?}"
        );
    }
    assert_eq!(
        sidecar.cached(),
        0,
        "rejected before the token was verified"
    );
}

/// The same in place on an `http::HeaderMap`: names `http` cannot represent never reach a map;
/// the others are rejected and the map emptied.
#[cfg(feature = "http")]
fn assert_map_rejects_name(name: &str) {
    let Ok(header) = http::HeaderName::from_bytes(name.as_bytes()) else {
        assert!(
            name.bytes().any(|b| b == b' ' || b == b'\t' || b == 0),
            "{name:?} should be a valid http name"
        );
        return;
    };
    let (sidecar, mut minter) = setup();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        bearer(&mut minter, "jane").parse().unwrap(),
    );
    headers.insert(header, "admin".parse().unwrap());
    let err = sidecar.decide_header_map(&mut headers, now()).unwrap_err();
    assert_eq!(err.reason(), &RejectReason::InvalidHeaderName, "{name:?}");
    assert!(headers.is_empty());
}

macro_rules! look_alike_tests {
    ($($pairs:ident, $map:ident: $name:expr;)*) => {$(
        #[test]
        fn $pairs() {
            assert_pairs_reject_name($name);
        }

        #[cfg(feature = "http")]
        #[test]
        fn $map() {
            assert_map_rejects_name($name);
        }
    )*};
}

look_alike_tests! {
    user_header_with_trailing_space_is_rejected_in_pairs,
        user_header_with_trailing_space_is_rejected_in_header_map: "X-Authenticated-User ";
    user_header_with_tab_is_rejected_in_pairs,
        user_header_with_tab_is_rejected_in_header_map: "X-Authenticated-User\t";
    user_header_with_nul_is_rejected_in_pairs,
        user_header_with_nul_is_rejected_in_header_map: "X-Authenticated-User\0";
    user_header_with_leading_space_is_rejected_in_pairs,
        user_header_with_leading_space_is_rejected_in_header_map: " X-Authenticated-User";
    user_header_with_dots_is_rejected_in_pairs,
        user_header_with_dots_is_rejected_in_header_map: "x.authenticated.user";
    user_header_without_separators_is_rejected_in_pairs,
        user_header_without_separators_is_rejected_in_header_map: "XAuthenticatedUser";
    user_header_with_mixed_separators_is_rejected_in_pairs,
        user_header_with_mixed_separators_is_rejected_in_header_map: "x-authenticated~user";
}

#[test]
fn non_token_header_names_are_rejected() {
    for name in [
        "",
        "Host ",
        "a b",
        "a:b",
        "a\r\nb",
        "caf\u{e9}",
        "a(b)",
        "a\"b",
    ] {
        assert_pairs_reject_name(name);
    }
}

#[test]
fn ordinary_token_names_and_removed_look_alikes_still_forward() {
    let (sidecar, mut minter) = setup();
    let auth = bearer(&mut minter, "jane");
    let request = [
        ("Authorization", auth.as_str()),
        ("X_Authenticated_User", "root"),
        ("x-authenticated-user", "root"),
        ("X-Authenticated-Users", "kept"),
        ("x.request.id", "1"),
        ("!#$%&'*+-.^_`|~09azAZ", "tchar"),
    ];
    let f = forward(sidecar.decide(request, now()));
    assert_eq!(user_headers(&f), [&b"jane"[..]]);
    let names: Vec<&str> = f.headers().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "X-Authenticated-Users",
            "x.request.id",
            "!#$%&'*+-.^_`|~09azAZ",
            "X-Authenticated-User"
        ]
    );
}
