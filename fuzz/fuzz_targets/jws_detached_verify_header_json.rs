//! `jws_detached::verify` (standards mode) with arbitrary protected-header JSON behind a valid
//! MAC, so the fuzzer reaches the header scanner directly. If the header is accepted, it must be
//! a JSON object whose `alg` is `HS256` and `kid` is `abcdef`.
#![no_main]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;

const KID: &str = "abcdef";
const KEY: &[u8] = b"0123456789abcdef";

fuzz_target!(|header: &[u8]| {
    let h = URL_SAFE_NO_PAD.encode(header);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(KEY).unwrap();
    mac.update(h.as_bytes());
    mac.update(b".");
    let jws = format!(
        "{h}..{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    );
    if jws_detached::verify(&jws, b"", KID, KEY).is_ok() {
        let text = std::str::from_utf8(header).unwrap();
        assert!(text.trim_start().starts_with('{'));
        for name in ["\"alg\"", "\"kid\""] {
            assert!(text.contains(name) || text.contains("\\u"), "{text}");
        }
        assert!(!text.contains("\"crit\""));
    }
});
