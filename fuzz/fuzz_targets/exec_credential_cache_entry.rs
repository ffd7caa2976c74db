#![no_main]
//! An on-disk credential cache entry, as a plugin reads it back.

use exec_credential::{CacheEntry, CacheKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = CacheKey::builder().part("user", b"fuzz").finish();
    if let Ok(entry) = CacheEntry::from_json(data, &key) {
        let json = entry.to_json();
        // See exec_credential_plugin_output: expiries beyond year 9999 UTC do not re-decode.
        if let Ok(again) = CacheEntry::from_json(json.as_bytes(), &key) {
            assert_eq!(again.to_json(), json);
        }
    }
});
