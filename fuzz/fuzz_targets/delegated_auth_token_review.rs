//! `TokenReview::read_answer` on arbitrary bytes: never panics, never shows the token; an
//! authentication names only the audiences asked for.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_token_review(data);
});
