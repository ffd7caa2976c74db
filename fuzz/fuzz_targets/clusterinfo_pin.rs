#![no_main]
//! `Pin::from_str` on arbitrary text: never panics; a parsed pin displays as its input,
//! lower-cased.

use clusterinfo::Pin;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(pin) = text.parse::<Pin>() {
        assert!(pin.to_string().eq_ignore_ascii_case(text));
        assert_eq!(pin.to_string().parse::<Pin>().expect("display parses"), pin);
    }
});
