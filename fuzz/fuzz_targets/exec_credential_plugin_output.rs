#![no_main]
//! Plugin stdout through the client's decoder and client-go's output rules.

use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{ApiVersion, Error, ExecCredential};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(cred) = ExecCredential::from_plugin_output(data) else {
        return;
    };
    // Whatever decodes re-encodes, and the encoding is a fixed point.
    let json = cred.to_json();
    // Like Go's `metav1.Time`, an expiry whose UTC year leaves 0000..=9999 (reachable through a
    // zone offset) is written with a year Go's parser refuses; everything else must decode.
    let again = match ExecCredential::from_plugin_output(json.as_bytes()) {
        Ok(again) => again,
        Err(Error::InvalidExpiration { .. }) => return,
        Err(e) => panic!("re-encoded output does not decode: {e}"),
    };
    assert_eq!(again.to_json(), json);
    assert_eq!(again.api_version(), cred.api_version());
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for configured in [ApiVersion::V1, ApiVersion::V1Beta1] {
        if let Ok(c) = cred.clone().into_credential(configured, now) {
            assert!(c.token().is_some() || c.client_identity().is_some());
            assert!(!c.is_expired(now));
        }
    }
});
