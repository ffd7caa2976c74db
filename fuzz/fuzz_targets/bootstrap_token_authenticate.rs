#![no_main]
//! The authenticator over a fuzzed bearer token (first line) and a fuzzed Secret (the rest, as
//! JSON): never panic; an accepted token is exactly the Secret's token.

use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{AuthOutcome, SecretObject, authenticate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (token, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(token) = std::str::from_utf8(token) else {
        return;
    };
    let secret = SecretObject::from_json(rest).ok();
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let out = authenticate(token, now, |_| Ok::<_, ()>(secret.as_ref())).unwrap();
    if let AuthOutcome::Authenticated(user) = out {
        let s = secret.unwrap();
        assert_eq!(s.data("token-secret"), token.as_bytes().get(7..));
        assert_eq!(
            user.user_name(),
            format!("system:bootstrap:{}", &token[..6])
        );
    }
});
