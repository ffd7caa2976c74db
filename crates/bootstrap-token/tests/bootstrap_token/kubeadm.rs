//! kubeadm's `BootstrapToken` object, `kubeadm token list/delete` formatting and rules
//! (`kubernetes-reference.md` §0.5, §1.8–§1.12).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use crate::common::{CANARY, TOKEN, assert_error_clean, data, now, secret_with};
use bootstrap_token::{
    BootstrapToken, Error, KubeadmToken, SecretObject, Usage, parse_delete_argument,
    short_human_duration, validate_usages,
};

#[test]
fn list_output_matches_kubeadm_tabwriter() {
    // The reference example (`kubernetes-reference.md` §1.11), reproduced with Go's tabwriter,
    // but over the whole table: kubeadm's writer per token shifts the `<never>` row's columns.
    let first = secret_with(&[
        ("expiration", "2024-01-02T03:04:05Z"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
    ]);
    let second = SecretObject::new(
        "bootstrap-token-123456",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(data(&[
            ("token-id", "123456"),
            ("token-secret", "aabbccddeeffgghh"),
            ("usage-bootstrap-signing", "true"),
            ("description", "my token"),
        ])),
    );
    let rows = [
        KubeadmToken::from_secret(&first).unwrap(),
        KubeadmToken::from_secret(&second).unwrap(),
    ];
    let at = now() - Duration::from_secs(23 * 3600 + 1800);
    let expected = "\
TOKEN                     TTL         EXPIRES                USAGES                   DESCRIPTION                                                EXTRA GROUPS
abcdef.0123456789abcdef   23h         2024-01-02T03:04:05Z   authentication,signing   <none>                                                     system:bootstrappers:kubeadm:default-node-token
123456.aabbccddeeffgghh   <forever>   <never>                signing                  my token                                                   <none>
";
    assert_eq!(KubeadmToken::format_list(&rows, at), expected);
    assert_eq!(
        rows[1].list_row(at),
        "123456.aabbccddeeffgghh\t<forever>\t<never>\tsigning               \tmy token                                                \t<none>\n"
    );
}

#[test]
fn list_ttl_column() {
    let row = |exp: &str, at| {
        let s = secret_with(&[("expiration", exp)]);
        let row = KubeadmToken::from_secret(&s).unwrap().list_row(at);
        row.split('\t').nth(1).unwrap().trim_end().to_owned()
    };
    assert_eq!(row("2024-01-02T03:04:05Z", now()), "0s");
    assert_eq!(
        row("2024-01-02T03:04:05Z", now() + Duration::from_millis(1999)),
        "0s"
    );
    assert_eq!(
        row("2024-01-02T03:04:05Z", now() + Duration::from_secs(2)),
        "<invalid>"
    );
    assert_eq!(
        row("2024-01-02T03:04:05Z", now() - Duration::from_secs(90)),
        "1m"
    );
    assert_eq!(row("2025-01-02T03:04:05Z", now()), "1y");
    // EXPIRES keeps the offset it was written with.
    let s = secret_with(&[("expiration", "2024-01-02T05:04:05.25+02:00")]);
    let r = KubeadmToken::from_secret(&s).unwrap().list_row(now());
    assert_eq!(r.split('\t').nth(2), Some("2024-01-02T05:04:05+02:00"));
}

#[test]
fn short_human_duration_rules() {
    for (s, out) in [
        (-3, "<invalid>"),
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (59, "59s"),
        (60, "1m"),
        (3599, "59m"),
        (3600, "1h"),
        (86_399, "23h"),
        (86_400, "1d"),
        (86_400 * 365 - 1, "364d"),
        (86_400 * 365, "1y"),
        (i64::MAX, "292471208677y"),
    ] {
        assert_eq!(short_human_duration(s), out, "{s}");
    }
}

#[test]
fn defaults_and_conversion() {
    let token: BootstrapToken = TOKEN.parse().unwrap();
    let kt = KubeadmToken::new(Some(token.clone())).with_defaults();
    assert_eq!(kt.ttl, Some(Duration::from_secs(86_400)));
    assert_eq!(kt.usages, ["signing", "authentication"]);
    assert_eq!(
        kt.groups,
        ["system:bootstrappers:kubeadm:default-node-token"]
    );
    let s = kt.to_secret_object(now()).unwrap();
    let expected = data(&[
        ("token-id", "abcdef"),
        ("token-secret", CANARY),
        ("expiration", "2024-01-03T03:04:05Z"),
        ("usage-bootstrap-signing", "true"),
        ("usage-bootstrap-authentication", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
    ]);
    assert_eq!(s.data_map(), Some(&expected));

    // Usages without `authentication` get no default group, so only the usages the caller
    // gave are judged (`signing,auth` is refused for `auth`, not for a group never set).
    let mut kt = KubeadmToken::new(Some(token.clone()));
    kt.usages = vec!["signing".into(), "auth".into()];
    let kt = kt.with_defaults();
    assert!(kt.groups.is_empty());
    let message = kt.validate("bootstrapTokens.0").unwrap_err().to_string();
    assert!(message.contains("usages"), "{message}");
    assert!(!message.contains("groups"), "{message}");
    let mut kt = KubeadmToken::new(Some(token.clone()));
    kt.usages = vec!["signing".into()];
    let kt = kt.with_defaults();
    assert!(kt.groups.is_empty());
    kt.validate("bootstrapTokens.0").unwrap();

    // ttl 0 means never; `expires` wins over ttl, written in UTC without fractions.
    let mut kt = KubeadmToken::new(Some(token.clone()));
    kt.ttl = Some(Duration::ZERO);
    kt.description = "d".into();
    let s = kt.to_secret_object(now()).unwrap();
    assert_eq!(s.data("expiration"), None);
    assert_eq!(s.data("description"), Some(&b"d"[..]));
    kt.ttl = Some(Duration::from_secs(5));
    kt.expires = Some(UNIX_EPOCH + Duration::from_millis(1_704_164_645_999));
    let s = kt.to_secret_object(now()).unwrap();
    assert_eq!(s.data("expiration"), Some(&b"2024-01-02T03:04:05Z"[..]));
    // Groups joined as given, no deduplication.
    kt.groups = vec![
        "system:bootstrappers:b".into(),
        "system:bootstrappers:b".into(),
    ];
    let s = kt.to_secret_object(now()).unwrap();
    assert_eq!(
        s.data("auth-extra-groups"),
        Some(&b"system:bootstrappers:b,system:bootstrappers:b"[..])
    );

    // And back.
    let back = KubeadmToken::from_secret(&s).unwrap();
    assert_eq!(back.token, Some(token));
    assert_eq!(back.ttl, None);
    assert_eq!(
        back.expires,
        Some(UNIX_EPOCH + Duration::from_secs(1_704_164_645))
    );
    assert_eq!(back.groups, kt.groups);
}

#[test]
fn validation_messages() {
    let token: BootstrapToken = TOKEN.parse().unwrap();
    let mut kt = KubeadmToken::new(Some(token)).with_defaults();
    kt.validate("bootstrapTokens.0").unwrap();

    kt.usages = vec!["signing".into(), "foo".into(), "bar".into(), "foo".into()];
    let e = kt.validate("bootstrapTokens.0").unwrap_err();
    let Error::Validation(errs) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs[0].path, "bootstrapTokens.0.usages");
    assert!(errs[0].detail.ends_with(
        "invalid bootstrap token usage string: bar,foo, valid usage options: signing,authentication"
    ));
    assert_eq!(errs[1].path, "bootstrapTokens.0.groups");
    assert_eq!(
        errs[1].detail,
        "token groups cannot be specified unless --usages includes \"authentication\""
    );

    kt.usages = vec!["authentication".into()];
    kt.groups = vec!["system:masters".into()];
    kt.expires = Some(now());
    let e = kt.validate("bootstrapTokens.0").unwrap_err();
    let s = e.to_string();
    assert!(s.contains(r#"bootstrapTokens.0.groups: Invalid value: "system:masters": bootstrap group "system:masters" is invalid (must match \Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)"#), "{s}");
    assert!(
        s.contains("the BootstrapToken .TTL and .Expires fields are mutually exclusive"),
        "{s}"
    );
    assert_error_clean(&e);

    let e = KubeadmToken::new(None)
        .validate("bootstrapTokens.1")
        .unwrap_err();
    assert!(e.to_string().contains("bootstrapTokens.1.token"), "{e}");
}

#[test]
fn usages_validation() {
    assert_eq!(
        validate_usages(&["authentication", "signing"]).unwrap(),
        [Usage::Authentication, Usage::Signing]
    );
    assert_eq!(validate_usages(&[]).unwrap(), []);
    let e = validate_usages(&["Signing"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid bootstrap token usage string: Signing, valid usage options: signing,authentication"
    );
}

#[test]
fn delete_arguments() {
    assert_eq!(parse_delete_argument("abcdef").unwrap().as_str(), "abcdef");
    assert_eq!(parse_delete_argument(TOKEN).unwrap().as_str(), "abcdef");
    for bad in [
        "ABCDEF",
        "abcdef.",
        "abcdef.0123456789abcdeF",
        "",
        "bootstrap-token-abcdef",
    ] {
        let e = parse_delete_argument(bad).unwrap_err();
        assert_eq!(e, Error::InvalidToken);
        assert_error_clean(&e);
    }
}

#[test]
fn from_secret_errors_do_not_contain_the_token() {
    // kubeadm's message includes the token; ours does not.
    let s = secret_with(&[("token-id", "abcdeF")]);
    let s = SecretObject::new(
        "bootstrap-token-abcdeF",
        s.namespace(),
        s.secret_type(),
        s.data_map().cloned(),
    );
    let e = KubeadmToken::from_secret(&s).unwrap_err();
    assert_error_clean(&e);
    let s = secret_with(&[("expiration", "soon")]);
    let e = KubeadmToken::from_secret(&s).unwrap_err();
    assert!(matches!(e, Error::InvalidExpiration { .. }));
    assert_error_clean(&e);
}

#[test]
fn kubeadm_json_reading() {
    let kt = KubeadmToken::from_json(
        br#"{"token":"abcdef.0123456789abcdef","description":"d","ttl":"24h0m0s","usages":["signing","authentication"],"groups":["system:bootstrappers:kubeadm:default-node-token"],"extra":1}"#,
    )
    .unwrap();
    assert_eq!(kt.token.as_ref().unwrap().to_string(), TOKEN);
    assert_eq!(kt.ttl, Some(Duration::from_secs(86_400)));
    assert_eq!(kt.description, "d");
    kt.validate("bootstrapTokens.0").unwrap();
    // A missing or null token is absent (kubeadm generates one); `""` and non-tokens are errors.
    assert_eq!(KubeadmToken::from_json(b"{}").unwrap().token, None);
    assert_eq!(
        KubeadmToken::from_json(br#"{"token":null}"#).unwrap().token,
        None
    );
    for bad in [
        r#"{"token":""}"#,
        r#"{"token":[]}"#,
        r#"{"token":123}"#,
        r#"{"token":"abcdef.0123456789abcdeF"}"#,
        r#"{"token":"abcdef.0123456789abcdef "}"#,
    ] {
        let e = KubeadmToken::from_json(bad.as_bytes()).unwrap_err();
        assert_eq!(e, Error::InvalidToken, "{bad}");
        assert_error_clean(&e);
    }
    // TTL: Go durations; zero and negative mean "never expires".
    let ttl =
        |s: &str| KubeadmToken::from_json(format!(r#"{{"ttl":"{s}"}}"#).as_bytes()).map(|k| k.ttl);
    assert_eq!(ttl("0").unwrap(), Some(Duration::ZERO));
    assert_eq!(ttl("-1h").unwrap(), Some(Duration::ZERO));
    assert_eq!(ttl("90m").unwrap(), Some(Duration::from_secs(5400)));
    assert!(matches!(
        ttl("1d").unwrap_err(),
        Error::InvalidDuration { .. }
    ));
    assert!(matches!(
        ttl("24").unwrap_err(),
        Error::InvalidDuration { .. }
    ));
    // Expires: Go's RFC 3339, offset kept for `token list`.
    let kt = KubeadmToken::from_json(
        br#"{"token":"abcdef.0123456789abcdef","expires":"2024-01-02T05:04:05+02:00"}"#,
    )
    .unwrap();
    assert_eq!(kt.expires, Some(now()));
    assert_eq!(
        kt.list_row(now()).split('\t').nth(2),
        Some("2024-01-02T05:04:05+02:00")
    );
    assert!(matches!(
        KubeadmToken::from_json(br#"{"expires":"2024-01-02 03:04:05Z"}"#).unwrap_err(),
        Error::InvalidExpiration { .. }
    ));
    // Duplicate fields are rejected; errors never echo values.
    assert!(KubeadmToken::from_json(br#"{"ttl":"1h","ttl":"2h"}"#).is_err());
    let e = KubeadmToken::from_json(format!(r#"{{"description":["{CANARY}"]}}"#).as_bytes())
        .unwrap_err();
    assert!(matches!(e, Error::Json { .. }));
    assert_error_clean(&e);
}

#[test]
fn kubeadm_json_writing() {
    let mut kt = KubeadmToken::new(Some(TOKEN.parse().unwrap())).with_defaults();
    kt.description = "d".into();
    assert_eq!(
        kt.to_json().unwrap(),
        r#"{"token":"abcdef.0123456789abcdef","description":"d","ttl":"24h0m0s","usages":["signing","authentication"],"groups":["system:bootstrappers:kubeadm:default-node-token"]}"#
    );
    let mut kt = KubeadmToken::new(None);
    kt.expires = Some(now() + Duration::from_millis(999));
    assert_eq!(
        kt.to_json().unwrap(),
        r#"{"token":null,"expires":"2024-01-02T03:04:05Z"}"#
    );
    // metav1.Time has whole seconds: the fraction is dropped on the way out.
    let back = KubeadmToken::from_json(kt.to_json().unwrap().as_bytes()).unwrap();
    assert_eq!((back.token, back.expires), (None, Some(now())));
    // Round trip.
    let mut kt = KubeadmToken::new(Some(TOKEN.parse().unwrap()));
    kt.ttl = Some(Duration::from_millis(1500));
    let back = KubeadmToken::from_json(kt.to_json().unwrap().as_bytes()).unwrap();
    assert_eq!(back, kt);
}
