//! Every row of `docs/hostile-inputs.md` §5.1 and §5.2 that concerns this crate, plus §1.8 [bt].
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use crate::common::{
    CANARY, TOKEN, assert_error_clean, assert_no_canary, now, secret_with, without,
};
use bootstrap_token::{
    AuthOutcome, BootstrapToken, BootstrapTokenSecret, CleanerAction, Error, ExpirationStatus,
    RejectReason, SecretObject, authenticate, cleaner_action,
};

fn parse_err(s: &str) {
    let e = s.parse::<BootstrapToken>().unwrap_err();
    assert_eq!(e, Error::InvalidToken, "{s:?}");
    assert_error_clean(&e);
}

fn auth(secret: &SecretObject, token: &str) -> AuthOutcome {
    authenticate(token, now(), |_| Ok::<_, ()>(Some(secret))).unwrap()
}

fn rejected(secret: &SecretObject) -> RejectReason {
    match auth(secret, TOKEN) {
        AuthOutcome::Rejected { reason, token_id } => {
            assert_eq!(token_id.as_str(), "abcdef");
            reason
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}

// §5.1 token strings

#[test]
fn row01_valid_token() {
    let t: BootstrapToken = TOKEN.parse().unwrap();
    assert_eq!(t.id().as_str(), "abcdef");
}

#[test]
fn row02_uppercase() {
    parse_err("ABCDEF.0123456789abcdef");
    parse_err("abcdef.0123456789ABCDEF");
}

#[test]
fn row03_no_trimming() {
    for s in [
        "abcdef.0123456789abcdef\n",
        " abcdef.0123456789abcdef",
        "abcdef.0123456789abcdef ",
        "\tabcdef.0123456789abcdef",
        "abcdef.0123456789abcdef\r\n",
    ] {
        parse_err(s);
    }
}

#[test]
fn row04_ascii_only() {
    for s in [
        "\u{ff41}bcdef.0123456789abcdef", // fullwidth a
        "abcd\u{0435}f.0123456789abcdef", // Cyrillic e
        "abcd\u{e9}f.0123456789abcdef",
        "abcdef.0123456789abcd\u{e9}f",
    ] {
        parse_err(s);
    }
}

#[test]
fn row05_lengths() {
    for s in [
        "abcde.0123456789abcdef",
        "abcdefg.0123456789abcdef",
        "abcdef.0123456789abcde",
        "abcdef.0123456789abcdef0",
    ] {
        parse_err(s);
    }
}

#[test]
fn row06_separators() {
    for s in [
        "abcdef:0123456789abcdef",
        "abcdef..0123456789abcdef",
        "abcdef.0123456789abcdef.0123456789abcdef",
    ] {
        parse_err(s);
    }
}

#[test]
fn row07_bad_characters() {
    for s in [
        "abcdef.0123456789abcde\0",
        "abc*ef.0123456789abcdef",
        "abcdef.01234567-9abcdef",
    ] {
        parse_err(s);
    }
}

#[test]
fn row08_ten_megabytes_rejected_by_length() {
    let big = "a".repeat(10 * 1024 * 1024);
    parse_err(&big);
    let outcome = authenticate(&big, now(), |_| -> Result<Option<&SecretObject>, ()> {
        panic!("lookup must not run")
    })
    .unwrap();
    assert_eq!(outcome, AuthOutcome::NotABootstrapToken);
}

#[test]
fn row09_empty_and_dot() {
    parse_err("");
    parse_err(".");
}

#[test]
fn row10_debug_redacts_display_is_deliberate() {
    let t: BootstrapToken = TOKEN.parse().unwrap();
    let dbg = format!("{t:?}");
    assert!(dbg.contains("abcdef"), "{dbg}");
    assert_no_canary(&t);
    assert_no_canary(t.secret());
    // Display prints the whole token on purpose (shown once to its owner).
    assert_eq!(t.to_string(), TOKEN);
}

// §5.2 Secret objects

#[test]
fn row11_wrong_or_missing_type() {
    for ty in [
        "Opaque",
        "",
        "bootstrap.kubernetes.io/Token",
        "bootstrap.kubernetes.io/token ",
    ] {
        let good = secret_with(&[]);
        let s = SecretObject::new(good.name(), good.namespace(), ty, good.data_map().cloned());
        assert_eq!(rejected(&s), RejectReason::InvalidType, "{ty:?}");
        assert_eq!(
            BootstrapTokenSecret::try_from(&s).unwrap_err(),
            Error::WrongSecretType
        );
        assert!(s.signing_key(now()).is_none());
        assert_eq!(cleaner_action(&s, now()), CleanerAction::Ignore);
    }
}

#[test]
fn row12_name_and_id() {
    let s = secret_with(&[("token-id", "abcdeg")]);
    assert_eq!(rejected(&s), RejectReason::TokenIdMismatch);
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::TokenIdMismatch
    );
    assert!(s.signing_key(now()).is_none());

    let good = secret_with(&[]);
    for name in [
        "token-abcdef",
        "bootstrap-token-ABCDEF",
        "bootstrap-token-abcdef\n",
    ] {
        let s = SecretObject::new(
            name,
            "kube-system",
            good.secret_type(),
            good.data_map().cloned(),
        );
        assert!(s.signing_key(now()).is_none(), "{name:?}");
        assert!(BootstrapTokenSecret::try_from(&s).is_err(), "{name:?}");
        // A lookup returning another Secret than asked for is refused.
        assert_eq!(rejected(&s), RejectReason::WrongSecret, "{name:?}");
    }
}

#[test]
fn row13_token_secret_missing_empty_wrong_newline() {
    let missing = without(&secret_with(&[]), "token-secret");
    assert_eq!(rejected(&missing), RejectReason::SecretMismatch);
    assert_eq!(
        BootstrapTokenSecret::try_from(&missing).unwrap_err(),
        Error::MissingData {
            key: "token-secret"
        }
    );
    let empty = secret_with(&[("token-secret", "")]);
    assert_eq!(rejected(&empty), RejectReason::SecretMismatch);
    assert!(empty.signing_key(now()).is_none());
    for wrong in [
        "0123456789abcdeg",
        "0123456789abcdef\n",
        " 0123456789abcdef",
        "0123456789ABCDEF",
    ] {
        let s = secret_with(&[("token-secret", wrong)]);
        assert_eq!(rejected(&s), RejectReason::SecretMismatch, "{wrong:?}");
    }
    // A secret of another format in the Secret is refused by the model...
    let odd = secret_with(&[("token-secret", "0123456789abcdef\n")]);
    let e = BootstrapTokenSecret::try_from(&odd).unwrap_err();
    assert_eq!(e, Error::InvalidToken);
    assert_error_clean(&e);
    // ...and accepted by the bootstrap signer, as Kubernetes does (any non-empty secret).
    assert_eq!(odd.signing_key(now()).unwrap().1, b"0123456789abcdef\n");
}

fn json_secret(data: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"bootstrap-token-abcdef","namespace":"kube-system"}},"type":"bootstrap.kubernetes.io/token","data":{data}}}"#
    )
    .into_bytes()
}

#[test]
fn row14_bad_base64_and_null_data() {
    for (data, key) in [
        (
            r#"{"token-secret":"MDEyMzQ1Njc4OWFiY2RlZg"}"#,
            "token-secret",
        ), // no padding
        (r#"{"token-secret":"MDEyMzQ1Njc4OWFiY2RlZg=="}"#, ""), // fine
        (r#"{"token-id":"YWJj ZGVm"}"#, "token-id"),
        (r#"{"token-id":"YWJjZGVm\n"}"#, "token-id"),
        (r#"{"token-id":"YWJj-GVm"}"#, "token-id"),
        (r#"{"token-id":"!!!!"}"#, "token-id"),
    ] {
        let r = SecretObject::from_json(&json_secret(data));
        if key.is_empty() {
            assert!(r.is_ok(), "{data}");
        } else {
            let e = r.unwrap_err();
            assert_eq!(
                e,
                Error::InvalidBase64 {
                    key: key.to_owned()
                },
                "{data}"
            );
            assert_error_clean(&e);
        }
    }
    let e = SecretObject::from_json(&json_secret(r#"{"token-secret":12}"#)).unwrap_err();
    assert!(matches!(e, Error::Json { .. }), "{e:?}");
    // `data: null` parses (it is a valid Secret) but never authenticates, signs or models.
    let s = SecretObject::from_json(&json_secret("null")).unwrap();
    assert!(s.data_map().is_none());
    assert_eq!(rejected(&s), RejectReason::InvalidType);
    assert!(s.signing_key(now()).is_none());
    assert!(BootstrapTokenSecret::try_from(&s).is_err());
}

#[cfg(feature = "yaml")]
#[test]
fn row15_duplicate_keys_rejected() {
    let dup = json_secret(
        r#"{"token-secret":"MDEyMzQ1Njc4OWFiY2RlZg==","token-secret":"MDEyMzQ1Njc4OWFiY2RlZw=="}"#,
    );
    assert_eq!(
        SecretObject::from_json(&dup).unwrap_err(),
        Error::DuplicateDataKey
    );
    let yaml = b"metadata: {name: bootstrap-token-abcdef, namespace: kube-system}\ntype: bootstrap.kubernetes.io/token\ndata:\n  token-secret: MDEyMzQ1Njc4OWFiY2RlZg==\n  token-secret: MDEyMzQ1Njc4OWFiY2RlZw==\n";
    assert!(SecretObject::from_yaml(yaml).is_err());
    // Duplicate top-level fields too.
    let top = br#"{"type":"Opaque","type":"bootstrap.kubernetes.io/token","data":{}}"#;
    assert!(SecretObject::from_json(top).is_err());
    let string_data = br#"{"stringData":{"token-id":"abcdef","token-id":"abcdeg"}}"#;
    assert_eq!(
        SecretObject::from_json(string_data).unwrap_err(),
        Error::DuplicateDataKey
    );
}

#[test]
fn row16_usage_must_be_exactly_true() {
    for v in ["True", "TRUE", "1", "yes", " true", "true\n", ""] {
        let s = secret_with(&[("usage-bootstrap-authentication", v)]);
        assert_eq!(rejected(&s), RejectReason::NotForAuthentication, "{v:?}");
        let s = secret_with(&[("usage-bootstrap-signing", v)]);
        assert!(s.signing_key(now()).is_none(), "{v:?}");
    }
    let s = without(&secret_with(&[]), "usage-bootstrap-authentication");
    assert_eq!(rejected(&s), RejectReason::NotForAuthentication);
}

#[test]
fn row17_bad_extra_groups_reject_whole_token() {
    let long = format!("system:bootstrappers:{}", "a".repeat(257));
    for g in [
        "system:masters",
        "foo",
        "system:bootstrappers:foo,system:masters",
        "system:bootstrappers:foo,",
        "system:bootstrappers:foo, system:bootstrappers:bar",
        "system:bootstrappers",
        "system:bootstrappers:a,,system:bootstrappers:b",
        long.as_str(),
    ] {
        let s = secret_with(&[("auth-extra-groups", g)]);
        assert_eq!(rejected(&s), RejectReason::InvalidExtraGroups, "{g:?}");
        let model = BootstrapTokenSecret::try_from(&s).unwrap();
        let e = model.groups().unwrap_err();
        assert!(matches!(e, Error::InvalidGroup { .. }));
        assert_error_clean(&e);
        assert!(e.to_string().len() < 700, "error message is bounded");
    }
    // 255 middle characters plus the last is the longest valid group.
    let max = format!("system:bootstrappers:{}", "a".repeat(256));
    let s = secret_with(&[("auth-extra-groups", &max)]);
    assert!(matches!(auth(&s, TOKEN), AuthOutcome::Authenticated(_)));
}

#[test]
fn row18_past_and_unparseable_expirations() {
    for (v, expired) in [
        ("garbage", true),
        ("2009-11-10T23:00:00Z", true),
        ("", false),
        ("1700000000", true),
        ("2009-11-10", true),
    ] {
        let s = secret_with(&[("expiration", v)]);
        assert_eq!(s.has_expired(now()), expired, "{v:?}");
        if expired {
            let r = rejected(&s);
            assert!(
                matches!(
                    r,
                    RejectReason::Expired | RejectReason::UnparseableExpiration
                ),
                "{v:?}"
            );
            assert!(s.signing_key(now()).is_none());
            assert!(matches!(
                cleaner_action(&s, now()),
                CleanerAction::Delete { .. }
            ));
        } else {
            assert!(matches!(auth(&s, TOKEN), AuthOutcome::Authenticated(_)));
            assert_eq!(cleaner_action(&s, now()), CleanerAction::Keep);
        }
    }
}

#[test]
fn row19_forms_go_rejects_are_expired() {
    for v in [
        "2099-01-01t00:00:00z",
        "2099-01-01T00:00:00z",
        "2099-01-01t00:00:00Z",
        "2099-01-01 00:00:00Z",
        "2098-12-31T23:59:60Z",
    ] {
        let s = secret_with(&[("expiration", v)]);
        assert_eq!(s.expiration(now()), ExpirationStatus::Unparseable, "{v:?}");
        assert_eq!(rejected(&s), RejectReason::UnparseableExpiration, "{v:?}");
        assert!(s.signing_key(now()).is_none());
        assert!(matches!(
            cleaner_action(&s, now()),
            CleanerAction::Delete { .. }
        ));
        assert!(matches!(
            BootstrapTokenSecret::try_from(&s).unwrap_err(),
            Error::InvalidExpiration { .. }
        ));
    }
}

#[test]
fn row20_extreme_years() {
    let s = secret_with(&[("expiration", "9999-12-31T23:59:59Z")]);
    assert!(matches!(auth(&s, TOKEN), AuthOutcome::Authenticated(_)));
    match cleaner_action(&s, now()) {
        // Go's time.Sub saturates at about 292 years.
        CleanerAction::RecheckAfter(d) => assert_eq!(d, Duration::from_nanos(i64::MAX as u64)),
        other => panic!("{other:?}"),
    }
    for v in [
        "+12009-01-01T00:00:00Z",
        "12009-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z",
    ] {
        let s = secret_with(&[("expiration", v)]);
        assert_eq!(s.expiration(now()), ExpirationStatus::Unparseable, "{v:?}");
    }
    let s = secret_with(&[("expiration", "0000-01-01T00:00:00Z")]);
    assert!(matches!(
        s.expiration(now()),
        ExpirationStatus::Expired { .. }
    ));
    assert_eq!(rejected(&s), RejectReason::Expired);
    // Far-away `now` values do not overflow either.
    let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
    assert!(secret_with(&[("expiration", "2024-01-01T00:00:00Z")]).has_expired(far));
}

#[test]
fn row21_deletion_timestamp() {
    let s = secret_with(&[]).with_deletion_timestamp("2024-01-01T00:00:00Z");
    assert_eq!(rejected(&s), RejectReason::DeletionPending);
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::DeletionPending
    );
    // The bootstrap signer does not look at the deletion timestamp (as in Kubernetes).
    assert!(s.signing_key(now()).is_some());
    // Rejected before the secret is compared: a wrong secret gives the same answer.
    let out = auth(&s, "abcdef.zzzzzzzzzzzzzzzz");
    assert!(matches!(
        out,
        AuthOutcome::Rejected {
            reason: RejectReason::DeletionPending,
            ..
        }
    ));
    let json = br#"{"metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system","deletionTimestamp":"2024-01-01T00:00:00Z"},"type":"bootstrap.kubernetes.io/token","data":{}}"#;
    assert!(SecretObject::from_json(json).unwrap().is_deletion_pending());
}

#[cfg(feature = "yaml")]
#[test]
fn row22_megabyte_of_junk_keys() {
    let mut data = String::from("{");
    let mut i = 0;
    while data.len() < 1024 * 1024 {
        data.push_str(&format!(
            r#""junk-{i}":"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB","#
        ));
        i += 1;
    }
    data.push_str(r#""token-id":"YWJjZGVm","token-secret":"MDEyMzQ1Njc4OWFiY2RlZg==","usage-bootstrap-authentication":"dHJ1ZQ=="}"#);
    let s = SecretObject::from_json(&json_secret(&data)).unwrap();
    assert!(matches!(auth(&s, TOKEN), AuthOutcome::Authenticated(_)));
    // More than 1 MiB of decoded data is refused.
    let big = format!(r#"{{"junk":"{}"}}"#, "QUFB".repeat(400_000));
    assert_eq!(
        SecretObject::from_json(&json_secret(&big)).unwrap_err(),
        Error::DataTooLarge { max: 1024 * 1024 }
    );
    // Documents over the limit are refused before parsing.
    let huge = vec![b' '; bootstrap_token::MAX_DOCUMENT_LEN + 1];
    assert!(matches!(
        SecretObject::from_json(&huge).unwrap_err(),
        Error::DocumentTooLarge { .. }
    ));
    assert!(matches!(
        SecretObject::from_yaml(&huge).unwrap_err(),
        Error::DocumentTooLarge { .. }
    ));
}

#[cfg(feature = "yaml")]
#[test]
fn deep_nesting_and_yaml_bombs_are_bounded() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(SecretObject::from_json(deep.as_bytes()).is_err());
    let deep_yaml = format!("metadata: {}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(SecretObject::from_yaml(deep_yaml.as_bytes()).is_err());
    let bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
    // Unknown fields are skipped; whatever the outcome, it returns promptly without panicking.
    let _ = SecretObject::from_yaml(bomb);
}

#[test]
fn secret_not_in_kube_system_is_refused() {
    let good = secret_with(&[]);
    let s = SecretObject::new(
        good.name(),
        "default",
        good.secret_type(),
        good.data_map().cloned(),
    );
    assert_eq!(rejected(&s), RejectReason::WrongSecret);
    assert!(s.signing_key(now()).is_none());
    assert_eq!(cleaner_action(&s, now()), CleanerAction::Ignore);
}

#[cfg(feature = "yaml")]
#[test]
fn parser_errors_never_echo_the_secret() {
    // serde echoes scalar values in its messages; ours must not.
    for doc in [
        format!(r#"{{"metadata":"{CANARY}"}}"#),
        format!(r#"{{"type":["{CANARY}"]}}"#),
        format!(r#"{{"data":{{"token-secret":"{CANARY}!"}}}}"#),
        format!(r#"{{"data":{{"{CANARY} x":"AA=="}}}}"#),
        format!(r#"{{"kind":"{CANARY}"}}"#),
        format!(r#"{{"stringData":{{"token-secret":{CANARY}}}}}"#),
        format!(r#"{{"stringData":{{"token-secret":"{CANARY}"}}, "data": 7}}"#),
        CANARY.to_string(),
    ] {
        let e = SecretObject::from_json(doc.as_bytes()).unwrap_err();
        assert_error_clean(&e);
    }
    for doc in [
        format!("metadata: {CANARY}\n"),
        format!("data:\n  token-secret: '{CANARY}!'\n"),
        format!("data: [{CANARY}]\n"),
        format!("kind: {CANARY}\n"),
        format!("data: {{token-secret: [\"{CANARY}\"]}}\n"),
        format!("{CANARY}: ["),
    ] {
        let e = SecretObject::from_yaml(doc.as_bytes()).unwrap_err();
        assert_error_clean(&e);
    }
}

#[test]
fn reject_reasons_never_contain_the_secret() {
    let cases = [
        secret_with(&[("token-secret", "0123456789abcdeg")]),
        secret_with(&[("token-id", "abcdeg")]),
        secret_with(&[("expiration", "garbage")]),
        secret_with(&[("usage-bootstrap-authentication", "no")]),
        secret_with(&[("auth-extra-groups", "system:masters")]),
        secret_with(&[]).with_deletion_timestamp("x"),
    ];
    for s in &cases {
        let out = auth(s, TOKEN);
        assert_no_canary(&out);
        if let AuthOutcome::Rejected { reason, .. } = out {
            assert!(!reason.to_string().contains(CANARY));
        }
        assert_no_canary(s);
    }
}
