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

/// The test binary runs without libtest's harness (`harness = false` in Cargo.toml): the
/// allocator's counters are process-wide, and the harness's own threads allocate while a test
/// runs. Here the measured code runs on the only thread. Filters and `--list` behave as
/// libtest's do.
fn main() {
    const NAME: &str = "cache_hit_allocates_nothing";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("{NAME}: test");
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| NAME.contains(f.as_str())) {
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        return;
    }
    println!("\nrunning 1 test");
    cache_hit_allocates_nothing();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
