#![no_main]
//! `auth-extra-groups` parsing (`GetGroups`): never panic; the result is sorted, deduplicated and
//! contains the default group.

use bootstrap_token::{ExtraGroup, parse_groups};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(groups) = parse_groups(data) {
        assert!(groups.windows(2).all(|w| w[0] < w[1]));
        assert!(groups.iter().any(|g| g == "system:bootstrappers"));
        assert!(
            groups
                .iter()
                .filter(|g| *g != "system:bootstrappers")
                .all(|g| ExtraGroup::is_valid(g))
        );
    }
});
