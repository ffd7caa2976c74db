#![no_main]
//! Token, token-ID, extra-group and Secret-name parsing: never panic; what parses prints back
//! byte-identically.

use bootstrap_token::{
    BootstrapToken, ExtraGroup, TokenId, parse_delete_argument, parse_secret_name,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = BootstrapToken::from_bytes(data) {
        assert_eq!(t.to_string().as_bytes(), data);
        assert!(!format!("{t:?}").contains(t.secret().expose_secret()));
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
});
