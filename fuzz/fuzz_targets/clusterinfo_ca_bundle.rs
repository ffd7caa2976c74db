#![no_main]
//! `CaBundle::from_pem` (and so `Pin::from_certificate_pem`) on arbitrary bytes: never panics;
//! a parsed bundle has one pin per certificate.

use clusterinfo::{CaBundle, Pin};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(bundle) = CaBundle::from_pem(data) {
        assert!(!bundle.is_empty());
        assert_eq!(bundle.pins().count(), bundle.len());
        assert_eq!(
            Pin::from_certificate_pem(data).ok().as_ref(),
            bundle.first_pin()
        );
    }
});
