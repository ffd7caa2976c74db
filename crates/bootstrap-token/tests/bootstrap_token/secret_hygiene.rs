//! No `Debug`, `Display` or error message of any type in this crate contains a token secret it
//! was given (hostile-inputs §1.7 S1–S4), except `BootstrapToken`'s deliberate `Display`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::Duration;

use crate::common::{CANARY, TOKEN, assert_error_clean, assert_no_canary, now, secret_with};
use bootstrap_token::{
    AuthOutcome, BootstrapToken, BootstrapTokenSecret, CleanerAction, Error, KubeadmToken,
    SecretObject, TokenSecret, authenticate, cleaner_action, cleanup_plan, parse_delete_argument,
};

#[test]
fn every_type_redacts_the_secret() {
    let token: BootstrapToken = TOKEN.parse().unwrap();
    assert_no_canary(&token);
    assert_no_canary(token.secret());
    let secret: TokenSecret = CANARY.parse().unwrap();
    assert_eq!(format!("{secret:?}"), "TokenSecret(<redacted>)");

    let s = secret_with(&[("expiration", "2099-01-01T00:00:00Z")]).with_uid("u");
    assert_no_canary(&s);
    let m = BootstrapTokenSecret::try_from(&s).unwrap();
    assert_no_canary(&m);
    let kt = KubeadmToken::from_model(&m);
    assert_no_canary(&kt);
    assert_no_canary(&kt.clone().with_defaults());
    let out = authenticate(TOKEN, now(), |_| Ok::<_, ()>(Some(&s))).unwrap();
    assert!(matches!(out, AuthOutcome::Authenticated(_)));
    assert_no_canary(&out);
    assert_no_canary(&cleaner_action(&s, now()));
    assert_no_canary(&cleanup_plan([&s], now() + Duration::from_secs(1 << 33)));
    assert_no_canary(&s.expiration(now()));
    if let Some((id, _key)) = s.signing_key(now()) {
        assert_no_canary(&id);
    }
    // The YAML/JSON round trip keeps redaction.
    let parsed = SecretObject::from_json(s.to_json().unwrap().as_bytes()).unwrap();
    assert_no_canary(&parsed);
    // Unknown keys are redacted too: they might hold anything.
    let other = secret_with(&[("ca.key", CANARY)]);
    assert_no_canary(&other);
}

#[test]
fn presented_wrong_secrets_are_never_echoed() {
    // The presented token is a near-miss of the real one (a typo of a real secret).
    let s = secret_with(&[]);
    let out = authenticate("abcdef.0123456789abcdeg", now(), |_| Ok::<_, ()>(Some(&s))).unwrap();
    let text = format!("{out:?}");
    assert!(!text.contains("0123456789abcde"), "{text}");
    if let AuthOutcome::Rejected { reason, .. } = out {
        assert!(!reason.to_string().contains("0123456789abcde"));
    }
}

#[test]
fn errors_built_from_secret_bearing_input_are_clean() {
    let mut errors: Vec<Error> = vec![
        "abcdef.0123456789abcdeF"
            .parse::<BootstrapToken>()
            .unwrap_err(),
        "abcdef.0123456789abcdef\n"
            .parse::<BootstrapToken>()
            .unwrap_err(),
        format!("{CANARY}x").parse::<TokenSecret>().unwrap_err(),
        parse_delete_argument("abcdef.0123456789abcde").unwrap_err(),
        BootstrapTokenSecret::try_from(&secret_with(&[("token-secret", "0123456789abcdef ")]))
            .unwrap_err(),
        KubeadmToken::new(None)
            .validate("bootstrapTokens.0")
            .unwrap_err(),
    ];
    let mut kt = KubeadmToken::new(Some(TOKEN.parse().unwrap()));
    kt.usages = vec!["bad".into()];
    kt.groups = vec!["bad".into()];
    kt.ttl = Some(Duration::from_secs(1));
    kt.expires = Some(now());
    errors.push(kt.validate("bootstrapTokens.0").unwrap_err());
    for doc in [
        format!(r#"{{"data":{{"token-secret":"{CANARY}="}}}}"#),
        format!(r#"{{"stringData":{{"token-secret":1}}, "x": "{CANARY}"}}"#),
        format!(r#"{{"metadata":{{"name":["{CANARY}"]}}}}"#),
    ] {
        errors.push(SecretObject::from_json(doc.as_bytes()).unwrap_err());
    }
    for e in &errors {
        assert_error_clean(e);
    }
}

#[test]
fn cleaner_and_signer_outputs_are_clean() {
    let s = secret_with(&[("expiration", "bad")]);
    assert!(matches!(
        cleaner_action(&s, now()),
        CleanerAction::Delete { .. }
    ));
    assert_no_canary(&cleaner_action(&s, now()));
}
