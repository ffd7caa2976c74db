//! The API server's add-auth decision. Input: the query, the user's name and
//! `<namespace>/<name>` on the first three lines, then header lines `name:value`, separated by
//! `\n`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::addon_jwt_add_auth(data);
});
