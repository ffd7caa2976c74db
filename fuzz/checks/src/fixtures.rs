//! The fixed keys, token and clocks the checks run under.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The key ID (and bootstrap token ID) every signature check uses.
pub const KID: &str = "abcdef";

/// The HMAC key (and bootstrap token secret) every signature check uses.
pub const KEY: &[u8] = KEY_TEXT.as_bytes();

/// The bootstrap token `<KID>.<KEY>`, whose secret signs cluster-info.
pub const TOKEN: &str = "abcdef.0123456789abcdef";

/// [`KEY`] as text, for searching printed values for it.
pub(crate) const KEY_TEXT: &str = "0123456789abcdef";

/// `now` for the bootstrap-token checks: 2024-01-02T03:04:05Z.
pub(crate) fn bootstrap_token_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

/// `now` for the exec-credential checks: 2023-11-14T22:13:20Z.
pub(crate) fn exec_credential_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// `now` for the addon-jwt checks (the reference tokens' clock): 2025-06-15T15:06:40Z.
pub(crate) fn addon_jwt_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

/// Where discovery starts: 2027-01-15T08:00:00Z.
pub(crate) fn discovery_start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_kid_and_key() {
        assert_eq!(TOKEN, format!("{KID}.{KEY_TEXT}"));
    }
}
