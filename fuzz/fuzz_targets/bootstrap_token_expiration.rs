#![no_main]
//! RFC 3339 parsing as Go does it: never panic; accepted values sit in the years 0000-9999 and
//! the Secret expiry status agrees with the parser.

use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{ExpirationStatus, parse_expiration, parse_expiration_with_offset};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let status = ExpirationStatus::at(data, now);
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
        }
        _ => assert!(data.is_empty() || status == ExpirationStatus::Unparseable),
    }
});
