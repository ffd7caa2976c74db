#![no_main]
//! kubeadm `BootstrapToken` JSON: never panic; what parses validates without panicking, converts
//! to a Secret, and survives a JSON round trip.

use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::KubeadmToken;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(kt) = KubeadmToken::from_json(data) else {
        return;
    };
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let _ = kt.validate("bootstrapTokens.0");
    let _ = kt.to_secret_object(now);
    let _ = kt.list_row(now);
    if let Ok(json) = kt.to_json() {
        let back = KubeadmToken::from_json(json.as_bytes()).unwrap();
        assert_eq!(back.token, kt.token);
        assert_eq!(back.ttl, kt.ttl);
        assert_eq!(back.expires.is_some(), kt.expires.is_some());
    }
});
