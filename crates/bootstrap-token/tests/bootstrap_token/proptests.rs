//! Property tests (CI re-runs them with `PROPTEST_CASES=10000`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{
    BootstrapToken, BootstrapTokenSecret, ExpirationStatus, ExtraGroup, SecretObject, TokenId,
    Usage, authenticate, parse_expiration, parse_groups, parse_secret_name,
};
use proptest::prelude::*;

fn token_strategy() -> impl Strategy<Value = String> {
    "[a-z0-9]{6}\\.[a-z0-9]{16}"
}

fn group_strategy() -> impl Strategy<Value = String> {
    "[a-z0-9:-]{0,40}[a-z0-9]".prop_map(|s| format!("system:bootstrappers:{s}"))
}

proptest! {
    #[test]
    fn proptest_token_display_parse_round_trip(s in token_strategy()) {
        let t: BootstrapToken = s.parse().unwrap();
        prop_assert_eq!(t.to_string(), s.clone());
        prop_assert_eq!(t.id().to_string().parse::<TokenId>().unwrap(), *t.id());
        let name = t.id().secret_name();
        prop_assert_eq!(parse_secret_name(&name), Some(*t.id()));
    }

    #[test]
    fn proptest_token_parse_never_panics(s in "\\PC*") {
        let ok = s.parse::<BootstrapToken>().is_ok();
        let expected = s.len() == 23
            && s.as_bytes()[6] == b'.'
            && s.bytes().enumerate().all(|(i, b)| i == 6 || b.is_ascii_digit() || b.is_ascii_lowercase());
        prop_assert_eq!(ok, expected);
        let _ = s.parse::<TokenId>();
        let _ = s.parse::<ExtraGroup>();
        let _ = parse_secret_name(&s);
        let _ = parse_expiration(&s);
    }

    #[test]
    fn proptest_token_parse_never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = BootstrapToken::from_bytes(&b);
        let _ = TokenId::from_bytes(&b);
        let _ = parse_groups(&b);
        let _ = ExpirationStatus::at(&b, UNIX_EPOCH);
    }

    #[test]
    fn proptest_generated_tokens_always_parse(bytes in proptest::collection::vec(any::<u8>(), 22..64)) {
        // Any byte stream with enough usable bytes gives a valid token.
        let mut stream = bytes.iter().copied().cycle();
        let Ok(t) = BootstrapToken::generate_with(|b| b.iter_mut().for_each(|x| *x = stream.next().unwrap_or(0))) else {
            return Ok(());
        };
        prop_assert_eq!(t.to_string().parse::<BootstrapToken>().unwrap(), t);
    }

    #[test]
    fn proptest_rfc3339_format_parse_round_trip(secs in -62_167_219_200i64..253_402_300_800, nanos in 0u32..1_000_000_000) {
        // kubeadm's writer (UTC, fractions truncated) and Go's reader agree on every instant of
        // the years 0000-9999.
        let t = if secs >= 0 { UNIX_EPOCH + Duration::from_secs(secs as u64) } else { UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) };
        let token: BootstrapToken = "abcdef.0123456789abcdef".parse().unwrap();
        let model = BootstrapTokenSecret::new(token).with_expiration(t).unwrap();
        let utc = model.to_secret_object().unwrap();
        let s = std::str::from_utf8(utc.data("expiration").unwrap()).unwrap().to_owned();
        prop_assert_eq!(parse_expiration(&s).unwrap(), t);
        let with_nanos = t + Duration::from_nanos(u64::from(nanos));
        let model = BootstrapTokenSecret::new("abcdef.0123456789abcdef".parse().unwrap())
            .with_expiration(with_nanos)
            .unwrap();
        prop_assert_eq!(model.expiration(), Some(with_nanos));
        prop_assert_eq!(model.to_secret_object().unwrap(), utc);
    }

    #[test]
    fn proptest_secret_data_parsing_never_panics(
        entries in proptest::collection::btree_map("[-_a-zA-Z0-9][-._a-zA-Z0-9]{0,19}", proptest::collection::vec(any::<u8>(), 0..40), 0..12),
        name in "\\PC{0,30}",
        ty in prop_oneof![Just("bootstrap.kubernetes.io/token".to_owned()), "\\PC{0,10}"],
        token in prop_oneof![token_strategy(), "\\PC{0,30}"],
        secs in 0u64..4_000_000_000,
    ) {
        let s = SecretObject::new(name, "kube-system", ty, Some(entries));
        let now = UNIX_EPOCH + Duration::from_secs(secs);
        let _ = BootstrapTokenSecret::try_from(&s);
        let _ = s.signing_key(now);
        let _ = bootstrap_token::cleaner_action(&s, now);
        let _ = authenticate(&token, now, |_| Ok::<_, ()>(Some(&s)));
        // JSON round trip of arbitrary byte maps is lossless.
        let json = s.to_json().unwrap();
        prop_assert_eq!(SecretObject::from_json(json.as_bytes()).unwrap(), s);
    }

    #[cfg(feature = "yaml")]
    #[test]
    fn proptest_json_parsing_never_panics(s in "\\PC{0,200}") {
        let _ = SecretObject::from_json(s.as_bytes());
        let _ = SecretObject::from_yaml(s.as_bytes());
    }

    #[test]
    fn proptest_secret_model_secret_round_trip(
        token in token_strategy(),
        description in "[ -~]{0,30}",
        expiration in proptest::option::of(0i64..253_402_300_799),
        signing in any::<bool>(),
        authentication in any::<bool>(),
        groups in proptest::collection::vec(group_strategy(), 0..4),
    ) {
        let token: BootstrapToken = token.parse().unwrap();
        let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        data.insert("token-id".into(), token.id().as_bytes().to_vec());
        data.insert("token-secret".into(), token.secret().expose_secret().as_bytes().to_vec());
        if !description.is_empty() {
            data.insert("description".into(), description.clone().into_bytes());
        }
        let mut model = BootstrapTokenSecret::new(token.clone()).with_description(description);
        if let Some(secs) = expiration {
            let at = UNIX_EPOCH + Duration::from_secs(secs as u64);
            model = model.with_expiration(at).unwrap();
            let text = model.to_secret_object().unwrap().data("expiration").unwrap().to_vec();
            data.insert("expiration".into(), text);
        }
        if signing {
            data.insert("usage-bootstrap-signing".into(), b"true".to_vec());
            model = model.with_usage(Usage::Signing);
        }
        if authentication {
            data.insert("usage-bootstrap-authentication".into(), b"true".to_vec());
            model = model.with_usage(Usage::Authentication);
        }
        if !groups.is_empty() {
            data.insert("auth-extra-groups".into(), groups.join(",").into_bytes());
            for g in &groups {
                model = model.with_extra_group(g.parse().unwrap());
            }
        }
        let secret = SecretObject::new(token.id().secret_name(), "kube-system", "bootstrap.kubernetes.io/token", Some(data));
        let parsed = BootstrapTokenSecret::try_from(&secret).unwrap();
        prop_assert_eq!(&parsed, &model);
        prop_assert_eq!(parsed.to_secret_object().unwrap(), secret);
        let mut expect_groups = groups.clone();
        expect_groups.push("system:bootstrappers".into());
        expect_groups.sort();
        expect_groups.dedup();
        prop_assert_eq!(parsed.groups().unwrap(), expect_groups);
    }
}
