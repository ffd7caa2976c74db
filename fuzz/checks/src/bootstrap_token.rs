//! Checks for the `bootstrap_token_*` targets.

use bootstrap_token::{
    AuthOutcome, BootstrapToken, BootstrapTokenSecret, ExpirationStatus, ExtraGroup, KubeadmToken,
    SecretObject, TokenId, authenticate, cleaner_action, parse_delete_argument, parse_expiration,
    parse_expiration_with_offset, parse_groups, parse_secret_name,
};

use crate::fixtures::bootstrap_token_now;
use crate::hygiene::assert_hidden;
use crate::input::split_at_first;
use crate::outcome::Outcome;

/// Token, token-ID, extra-group and Secret-name parsing of the whole input.
///
/// What parses prints back byte-identically; a token's `Debug` never shows its secret.
/// Accepted: the input is a bootstrap token.
pub fn bootstrap_token_parse(data: &[u8]) -> Outcome {
    let token = BootstrapToken::from_bytes(data);
    if let Ok(t) = &token {
        assert_eq!(t.to_string().as_bytes(), data);
        assert_hidden(
            &format!("{t:?}"),
            t.secret().expose_secret(),
            t.id().as_str(),
        );
    }
    if let Ok(id) = TokenId::from_bytes(data) {
        assert_eq!(id.as_bytes(), data);
    }
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(g) = s.parse::<ExtraGroup>() {
            assert_eq!(g.as_str(), s);
        }
        if let Some(id) = parse_secret_name(s) {
            assert_eq!(id.secret_name(), s);
        }
        let _ = parse_delete_argument(s);
    }
    Outcome::accepted_if(token.is_ok())
}

/// RFC 3339 parsing as Go does it, of the whole input.
///
/// Both parsers agree, an accepted zone offset is at most 25 hours, and the Secret expiry
/// status agrees with the parser. Accepted: the input parses as an expiration.
pub fn bootstrap_token_expiration(data: &[u8]) -> Outcome {
    let status = ExpirationStatus::at(data, bootstrap_token_now());
    match std::str::from_utf8(data)
        .ok()
        .map(|s| (s, parse_expiration(s)))
    {
        Some((s, Ok(t))) => {
            let (t2, offset) = parse_expiration_with_offset(s).unwrap();
            assert_eq!(t, t2);
            assert!(offset.abs() <= 24 * 3600 + 60 * 60);
            assert!(!matches!(
                status,
                ExpirationStatus::Unparseable | ExpirationStatus::Never
            ));
            Outcome::Accepted
        }
        _ => {
            assert!(data.is_empty() || status == ExpirationStatus::Unparseable);
            Outcome::Rejected
        }
    }
}

/// `auth-extra-groups` parsing (`GetGroups`) of the whole input.
///
/// The result is sorted, deduplicated, contains the default group, and every other group is a
/// valid extra group. Accepted: the input parses.
pub fn bootstrap_token_groups(data: &[u8]) -> Outcome {
    let Ok(groups) = parse_groups(data) else {
        return Outcome::Rejected;
    };
    assert!(groups.windows(2).all(|w| w[0] < w[1]));
    assert!(groups.iter().any(|g| g == "system:bootstrappers"));
    assert!(
        groups
            .iter()
            .filter(|g| *g != "system:bootstrappers")
            .all(|g| ExtraGroup::is_valid(g))
    );
    Outcome::Accepted
}

/// Secret JSON parsing of the whole input, then everything that reads a parsed Secret (see
/// [`bootstrap_token_secret_yaml`]). Accepted: the input parses as a Secret.
pub fn bootstrap_token_secret_json(data: &[u8]) -> Outcome {
    let Ok(secret) = SecretObject::from_json(data) else {
        return Outcome::Rejected;
    };
    check_secret_object(&secret);
    Outcome::Accepted
}

/// Secret YAML parsing of the whole input, then everything that reads a parsed Secret.
///
/// A parsed Secret survives a JSON round trip; signing-key lookup, the cleaner and the kubeadm
/// listing never panic; a bootstrap-token Secret's `Debug` never shows the token secret (unless
/// a public field repeats it) and converts back to a Secret of the same token. Accepted: the
/// input parses as a Secret.
pub fn bootstrap_token_secret_yaml(data: &[u8]) -> Outcome {
    let Ok(secret) = SecretObject::from_yaml(data) else {
        return Outcome::Rejected;
    };
    check_secret_object(&secret);
    Outcome::Accepted
}

/// The authenticator over a bearer token (the first line) and a Secret (the rest, as JSON).
///
/// An accepted token is exactly the Secret's token and authenticates as
/// `system:bootstrap:<id>`. Accepted: the token authenticates.
pub fn bootstrap_token_authenticate(data: &[u8]) -> Outcome {
    let (token, rest) = split_at_first(data, b'\n');
    let Ok(token) = std::str::from_utf8(token) else {
        return Outcome::Rejected;
    };
    let secret = SecretObject::from_json(rest).ok();
    let out = authenticate(token, bootstrap_token_now(), |_| {
        Ok::<_, ()>(secret.as_ref())
    })
    .unwrap();
    let AuthOutcome::Authenticated(user) = out else {
        return Outcome::Rejected;
    };
    let s = secret.unwrap();
    assert_eq!(s.data("token-secret"), token.as_bytes().get(7..));
    assert_eq!(
        user.user_name(),
        format!("system:bootstrap:{}", &token[..6])
    );
    Outcome::Accepted
}

/// kubeadm `BootstrapToken` JSON, the whole input.
///
/// What parses validates, converts to a Secret and lists without panicking, and survives a JSON
/// round trip. Accepted: the input parses.
pub fn bootstrap_token_kubeadm_json(data: &[u8]) -> Outcome {
    let Ok(kt) = KubeadmToken::from_json(data) else {
        return Outcome::Rejected;
    };
    let now = bootstrap_token_now();
    let _ = kt.validate("bootstrapTokens.0");
    let _ = kt.to_secret_object(now);
    let _ = kt.list_row(now);
    if let Ok(json) = kt.to_json() {
        let back = KubeadmToken::from_json(json.as_bytes()).unwrap();
        assert_eq!(back.token, kt.token);
        assert_eq!(back.ttl, kt.ttl);
        assert_eq!(back.expires.is_some(), kt.expires.is_some());
    }
    Outcome::Accepted
}

/// Everything that reads a parsed Secret, whichever format it came from.
fn check_secret_object(secret: &SecretObject) {
    let json = secret.to_json().unwrap();
    assert_eq!(&SecretObject::from_json(json.as_bytes()).unwrap(), secret);
    let now = bootstrap_token_now();
    let _ = secret.signing_key(now);
    let _ = cleaner_action(secret, now);
    let Ok(model) = BootstrapTokenSecret::try_from(secret) else {
        return;
    };
    let _ = model.groups();
    // Public fields (description, usages, extra groups, expiration) may carry the secret's
    // characters; then finding them in Debug proves nothing.
    let public = format!(
        "{:?}{:?}{:?}{:?}",
        model.description(),
        model.usages(),
        model.extra_groups(),
        model.expiration_rfc3339()
    );
    assert_hidden(
        &format!("{model:?}"),
        model.secret().expose_secret(),
        &public,
    );
    let _ = KubeadmToken::from_model(&model).list_row(now);
    if let Ok(back) = model.to_secret_object() {
        assert_eq!(
            BootstrapTokenSecret::try_from(&back)
                .map(|m| m.token().clone())
                .ok(),
            Some(model.token().clone())
        );
    }
}
