//! `jws_detached::verify` (standards mode) on arbitrary input: `<detached JWS>\0<content>`,
//! kid `abcdef`, key `0123456789abcdef`.
#![no_main]

use libfuzzer_sys::fuzz_target;

const KID: &str = "abcdef";
const KEY: &[u8] = b"0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    let (detached, content) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(detached) = std::str::from_utf8(detached) else {
        return;
    };
    let standards = jws_detached::verify(detached, content, KID, KEY);
    let kubernetes = jws_detached::verify_kubernetes(detached, content, KID, KEY);
    // Whatever Kubernetes accepts is a valid RFC 7515 JWS, and is what the signer writes.
    if kubernetes.is_ok() {
        assert!(standards.is_ok());
        assert_eq!(jws_detached::sign(content, KID, KEY).unwrap(), detached);
    }
    // Errors never carry the key.
    if let Err(e) = standards {
        let text = format!("{e} {e:?}");
        assert!(!text.contains("0123456789abcdef"));
    }
});
