//! Replays every checked-in fuzz corpus file (`fuzz/corpus/bootstrap_token_*`) through the same
//! entry points and checks as the fuzz targets, so `cargo test` covers them without cargo-fuzz.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{
    AuthOutcome, BootstrapToken, BootstrapTokenSecret, ExpirationStatus, ExtraGroup, KubeadmToken,
    SecretObject, TokenId, authenticate, cleaner_action, parse_delete_argument, parse_expiration,
    parse_expiration_with_offset, parse_groups, parse_secret_name,
};

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "fuzz",
        "corpus",
        target,
    ]
    .iter()
    .collect();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {target}");
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

fn now() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

#[test]
fn corpus_parse() {
    for data in corpus("bootstrap_token_parse") {
        if let Ok(t) = BootstrapToken::from_bytes(&data) {
            assert_eq!(t.to_string().as_bytes(), &data[..]);
            assert!(!format!("{t:?}").contains(t.secret().expose_secret()));
        }
        if let Ok(id) = TokenId::from_bytes(&data) {
            assert_eq!(id.as_bytes(), &data[..]);
        }
        if let Ok(s) = std::str::from_utf8(&data) {
            if let Ok(g) = s.parse::<ExtraGroup>() {
                assert_eq!(g.as_str(), s);
            }
            if let Some(id) = parse_secret_name(s) {
                assert_eq!(id.secret_name(), s);
            }
            let _ = parse_delete_argument(s);
        }
    }
}

#[test]
fn corpus_expiration() {
    for data in corpus("bootstrap_token_expiration") {
        let status = ExpirationStatus::at(&data, now());
        match std::str::from_utf8(&data)
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
            }
            _ => assert!(data.is_empty() || status == ExpirationStatus::Unparseable),
        }
    }
}

#[test]
fn corpus_groups() {
    for data in corpus("bootstrap_token_groups") {
        if let Ok(groups) = parse_groups(&data) {
            assert!(groups.windows(2).all(|w| w[0] < w[1]));
            assert!(groups.iter().any(|g| g == "system:bootstrappers"));
        }
    }
}

fn check_secret(secret: &SecretObject) {
    let json = secret.to_json().unwrap();
    assert_eq!(&SecretObject::from_json(json.as_bytes()).unwrap(), secret);
    let _ = secret.signing_key(now());
    let _ = cleaner_action(secret, now());
    if let Ok(model) = BootstrapTokenSecret::try_from(secret) {
        let _ = model.groups();
        // The secret must not show in Debug, unless a public field (description, usages,
        // extra groups, expiration) carries the same characters.
        let token_secret = model.secret().expose_secret();
        let public = format!(
            "{:?}{:?}{:?}{:?}",
            model.description(),
            model.usages(),
            model.extra_groups(),
            model.expiration_rfc3339()
        );
        if !public.contains(token_secret) {
            assert!(!format!("{model:?}").contains(token_secret));
        }
        let _ = KubeadmToken::from_model(&model).list_row(now());
    }
}

#[test]
fn corpus_secret_json() {
    let mut parsed = 0;
    for data in corpus("bootstrap_token_secret_json") {
        if let Ok(s) = SecretObject::from_json(&data) {
            parsed += 1;
            check_secret(&s);
        }
    }
    assert!(parsed > 10);
}

#[test]
fn corpus_secret_yaml() {
    let mut parsed = 0;
    for data in corpus("bootstrap_token_secret_yaml") {
        if let Ok(s) = SecretObject::from_yaml(&data) {
            parsed += 1;
            check_secret(&s);
        }
    }
    assert!(parsed > 10);
}

#[test]
fn corpus_authenticate() {
    let mut accepted = 0;
    for data in corpus("bootstrap_token_authenticate") {
        let (token, rest) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (&data[..], &[][..]),
        };
        let Ok(token) = std::str::from_utf8(token) else {
            continue;
        };
        let secret = SecretObject::from_json(rest).ok();
        let out = authenticate(token, now(), |_| Ok::<_, ()>(secret.as_ref())).unwrap();
        if let AuthOutcome::Authenticated(user) = out {
            accepted += 1;
            let s = secret.unwrap();
            assert_eq!(s.data("token-secret"), token.as_bytes().get(7..));
            assert_eq!(
                user.user_name(),
                format!("system:bootstrap:{}", &token[..6])
            );
        }
    }
    assert!(accepted >= 1);
}

#[test]
fn corpus_kubeadm_json() {
    let mut parsed = 0;
    for data in corpus("bootstrap_token_kubeadm_json") {
        let Ok(kt) = KubeadmToken::from_json(&data) else {
            continue;
        };
        parsed += 1;
        let _ = kt.validate("bootstrapTokens.0");
        let _ = kt.to_secret_object(now());
        let _ = kt.list_row(now());
        if let Ok(json) = kt.to_json() {
            let back = KubeadmToken::from_json(json.as_bytes()).unwrap();
            assert_eq!(back.token, kt.token);
            assert_eq!(back.ttl, kt.ttl);
            assert_eq!(back.expires.is_some(), kt.expires.is_some());
        }
    }
    assert!(parsed > 5);
}
