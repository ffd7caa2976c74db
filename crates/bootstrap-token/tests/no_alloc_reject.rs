//! The authenticator's reject paths and token parsing do not allocate, proven with a counting
//! global allocator (this file is its own test binary, with a single test, so nothing else
//! allocates concurrently).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;
use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::{
    AuthOutcome, BootstrapToken, RejectReason, SecretObject, TokenId, authenticate,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn secret(id: &str, extra: &[(&str, &str)]) -> SecretObject {
    let mut data: std::collections::BTreeMap<String, Vec<u8>> = [
        ("token-id", id),
        ("token-secret", "0123456789abcdef"),
        ("usage-bootstrap-authentication", "true"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
    .collect();
    for (k, v) in extra {
        data.insert((*k).to_owned(), v.as_bytes().to_vec());
    }
    SecretObject::new(
        format!("bootstrap-token-{id}"),
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(data),
    )
}

fn reject_paths_and_parsing_do_not_allocate() {
    let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
    let mut map: HashMap<TokenId, SecretObject> = HashMap::new();
    let cases: [(&str, &[(&str, &str)]); 6] = [
        ("aaaaaa", &[]),
        ("bbbbbb", &[("expiration", "2000-01-01T00:00:00Z")]),
        ("cccccc", &[("expiration", "2099-01-01t00:00:00z")]),
        ("dddddd", &[("usage-bootstrap-authentication", "True")]),
        ("eeeeee", &[("token-id", "zzzzzz")]),
        ("ffffff", &[]),
    ];
    for (id, extra) in cases {
        let mut s = secret(id, extra);
        if id == "ffffff" {
            s = s.with_deletion_timestamp("2024-01-01T00:00:00Z");
        }
        map.insert(id.parse().unwrap(), s);
    }
    let expectations = [
        ("not-a-token", None),
        ("abcdef.0123456789abcdef", Some(RejectReason::NotFound)),
        (
            "aaaaaa.0123456789abcdeg",
            Some(RejectReason::SecretMismatch),
        ),
        ("bbbbbb.0123456789abcdef", Some(RejectReason::Expired)),
        (
            "cccccc.0123456789abcdef",
            Some(RejectReason::UnparseableExpiration),
        ),
        (
            "dddddd.0123456789abcdef",
            Some(RejectReason::NotForAuthentication),
        ),
        (
            "eeeeee.0123456789abcdef",
            Some(RejectReason::TokenIdMismatch),
        ),
        (
            "ffffff.0123456789abcdef",
            Some(RejectReason::DeletionPending),
        ),
    ];
    for (token, expected) in expectations {
        let region = Region::new(GLOBAL);
        let out = authenticate(token, now, |id| Ok::<_, ()>(map.get(id))).unwrap();
        let allocations = region.change().allocations;
        match (expected, &out) {
            (None, AuthOutcome::NotABootstrapToken) => {}
            (Some(r), AuthOutcome::Rejected { reason, .. }) if *reason == r => {}
            _ => panic!("{token}: unexpected {out:?}"),
        }
        assert_eq!(allocations, 0, "{token}: {expected:?} allocated");
    }

    // The accept path allocates the user name and groups, and the counter sees it.
    let region = Region::new(GLOBAL);
    let out = authenticate("aaaaaa.0123456789abcdef", now, |id| {
        Ok::<_, ()>(map.get(id))
    })
    .unwrap();
    assert!(out.authenticated().is_some());
    assert!(region.change().allocations > 0);
    drop(out);

    // Parsing a token does not allocate either (id and secret are stored inline).
    let region = Region::new(GLOBAL);
    let t: BootstrapToken = "abcdef.0123456789abcdef".parse().unwrap();
    let bad = "abcdef.0123456789abcdeF".parse::<BootstrapToken>();
    assert_eq!(region.change().allocations, 0);
    assert!(bad.is_err());
    drop(t);
}

/// The test binary runs without libtest's harness (`harness = false` in Cargo.toml): the
/// allocator's counters are process-wide, and the harness's own threads allocate while a test
/// runs. Here the measured code runs on the only thread. Filters and `--list` behave as
/// libtest's do.
fn main() {
    const NAME: &str = "reject_paths_and_parsing_do_not_allocate";
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
    reject_paths_and_parsing_do_not_allocate();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
