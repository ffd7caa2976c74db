//! The cache-hit path of `ExecAuthenticator::credential` allocates nothing (counting global
//! allocator; this file is its own test binary).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;
use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, Cluster, CredentialState, ExecAuthenticator, ExecConfig, InteractiveMode,
    RunResult,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn cache_hit_allocates_nothing() {
    let mut a = ExecAuthenticator::new(
        ExecConfig::new("p", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://x"),
    )
    .unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let _ = a.credential(now).unwrap();
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!()
    };
    let out = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#;
    a.handle_run_result(
        now,
        run.id(),
        RunResult::Exited {
            code: 0,
            stdout: out,
            stderr: b"",
        },
    )
    .unwrap();

    let region = Region::new(GLOBAL);
    let mut hits = 0;
    for i in 0..1000 {
        let t = now + Duration::from_secs(i);
        if let CredentialState::Ready(c) = a.credential(t).unwrap() {
            hits += usize::from(c.token().is_some());
        }
    }
    let stats = region.change();
    assert_eq!(hits, 1000);
    assert_eq!(
        stats.allocations + stats.reallocations,
        0,
        "the cache-hit path allocated: {stats:?}"
    );
}
