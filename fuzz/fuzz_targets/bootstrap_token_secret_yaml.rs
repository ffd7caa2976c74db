#![no_main]
//! Secret YAML parsing and everything that reads a parsed Secret: never panic; a parsed
//! Secret survives a JSON round trip; Debug never shows the token secret.

use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{BootstrapTokenSecret, KubeadmToken, SecretObject, cleaner_action};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(secret) = SecretObject::from_yaml(data) else {
        return;
    };
    let json = secret.to_json().unwrap();
    assert_eq!(SecretObject::from_json(json.as_bytes()).unwrap(), secret);
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let _ = secret.signing_key(now);
    let _ = cleaner_action(&secret, now);
    if let Ok(model) = BootstrapTokenSecret::try_from(&secret) {
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
});
