//! `jws_detached::verify_kubernetes` on arbitrary input: `<detached JWS>\0<content>`, kid
//! `abcdef`, key `0123456789abcdef`, also through `PreparedPayload`.
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
    let direct = jws_detached::verify_kubernetes(detached, content, KID, KEY);
    let prepared = jws_detached::PreparedPayload::new(content)
        .and_then(|p| p.verify_kubernetes(detached, KID, KEY));
    assert_eq!(direct, prepared);
    if direct.is_ok() {
        // Accepted means: exactly the string Kubernetes computes.
        assert_eq!(jws_detached::sign(content, KID, KEY).unwrap(), detached);
    }
});
