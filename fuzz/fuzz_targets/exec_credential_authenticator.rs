//! The client state machine fed arbitrary plugin results, 401s and clock movements.
//!
//! Input: a configuration byte, then a sequence of operations. Whatever the sequence, the state
//! machine must not panic, must never serve a cached credential that is expired at `now` (but
//! one that arrived expired, within its reuse interval), must keep at most one run in flight,
//! and must refuse results for runs it did not schedule.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::exec_credential_authenticator(data);
});
