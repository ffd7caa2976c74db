//! The bootstrap signer's reconcile step against Kubernetes' rules and the Go JWS vectors.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fixtures::*;
use bootstrap_token::SecretObject;
use clusterinfo::reconcile;

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn signatures_match_the_go_vectors_for_every_line() {
    let mut checked = 0;
    for line in JWS_VECTORS.lines().filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (id, secret) = (
            v["token_id"].as_str().unwrap(),
            v["token_secret"].as_str().unwrap(),
        );
        let raw = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            v["content_b64"].as_str().unwrap(),
        )
        .unwrap();
        let Ok(content) = std::str::from_utf8(&raw) else {
            continue; // ConfigMap data values are strings.
        };
        if secret.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            || id.len() != 6
        {
            continue; // Only well-formed token IDs name a bootstrap-token Secret.
        }
        let out = reconcile(
            &data(&[("kubeconfig", content)]),
            [&token_secret(id, secret, true, None)],
            now(),
        );
        assert_eq!(
            out.data()[&format!("jws-kubeconfig-{id}")],
            v["detached_jws"].as_str().unwrap(),
            "{line}"
        );
        assert!(out.update_needed());
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn kubernetes_worked_example() {
    let out = reconcile(
        &data(&[("kubeconfig", "hello")]),
        [&token_secret("abcdef", "0123456789abcdef", true, None)],
        now(),
    );
    assert_eq!(
        out.data()["jws-kubeconfig-abcdef"],
        "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s"
    );
    assert_eq!(
        out.signed_token_ids()
            .iter()
            .map(|i| i.as_str())
            .collect::<Vec<_>>(),
        ["abcdef"]
    );
}

#[test]
fn without_kubeconfig_nothing_changes_and_signatures_stay() {
    let before = data(&[("jws-kubeconfig-abcdef", "old"), ("other", "x")]);
    let out = reconcile(
        &before,
        [&token_secret("abcdef", TOKEN_SECRET, true, None)],
        now(),
    );
    assert!(!out.update_needed());
    assert_eq!(out.data(), &before);
}

#[test]
fn stale_signatures_are_removed_and_other_keys_kept() {
    let before = data(&[
        ("kubeconfig", "hello"),
        ("jws-kubeconfig-zzzzzz", "stale"),
        ("jws-kubeconfig-", "odd"),
        ("note", "kept"),
    ]);
    let out = reconcile(&before, std::iter::empty::<&SecretObject>(), now());
    assert!(out.update_needed());
    assert_eq!(
        out.data(),
        &data(&[("kubeconfig", "hello"), ("note", "kept")])
    );
}

#[test]
fn unchanged_input_needs_no_update_and_a_changed_kubeconfig_resigns_all() {
    let secrets = [
        token_secret("abcdef", TOKEN_SECRET, true, None),
        token_secret("ghijkl", "ghijklmnopqrstuv", true, None),
    ];
    let first = reconcile(&data(&[("kubeconfig", "v1")]), &secrets, now());
    assert!(first.update_needed());
    let second = reconcile(first.data(), &secrets, now());
    assert!(!second.update_needed());
    assert_eq!(second.data(), first.data());
    let mut changed = first.data().clone();
    changed.insert("kubeconfig".into(), "v2".into());
    let third = reconcile(&changed, &secrets, now());
    assert!(third.update_needed());
    for id in ["abcdef", "ghijkl"] {
        assert_ne!(
            third.data()[&format!("jws-kubeconfig-{id}")],
            first.data()[&format!("jws-kubeconfig-{id}")]
        );
    }
}

#[test]
fn only_qualifying_secrets_sign() {
    let expired = token_secret(
        "expird",
        "0123456789abcdef",
        true,
        Some("2020-01-01T00:00:00Z"),
    );
    let unparseable = token_secret(
        "badexp",
        "0123456789abcdef",
        true,
        Some("2030-01-01t00:00:00Z"),
    );
    let future = token_secret(
        "future",
        "0123456789abcdef",
        true,
        Some("2099-01-01T00:00:00Z"),
    );
    let not_signing = token_secret("nosign", "0123456789abcdef", false, None);
    let odd_secret = token_secret("oddsec", "not the usual format!", true, None);
    let empty_secret = token_secret("nosecr", "", true, None);
    let mut mismatched = BTreeMap::new();
    mismatched.insert("token-id".to_owned(), b"aaaaaa".to_vec());
    mismatched.insert("token-secret".to_owned(), b"0123456789abcdef".to_vec());
    mismatched.insert("usage-bootstrap-signing".to_owned(), b"true".to_vec());
    let wrong_name = SecretObject::new(
        "bootstrap-token-bbbbbb",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(mismatched),
    );
    let wrong_type = SecretObject::new(
        "bootstrap-token-typeee",
        "kube-system",
        "Opaque",
        token_secret("typeee", "0123456789abcdef", true, None)
            .data_map()
            .cloned(),
    );
    let secrets = [
        expired,
        unparseable,
        future,
        not_signing,
        odd_secret,
        empty_secret,
        wrong_name,
        wrong_type,
    ];
    let out = reconcile(&data(&[("kubeconfig", "hello")]), &secrets, now());
    let keys: Vec<&str> = out.data().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "jws-kubeconfig-future",
            "jws-kubeconfig-oddsec",
            "kubeconfig"
        ]
    );
}

#[test]
fn expiry_does_not_remove_until_a_sync_at_a_later_now() {
    let s = token_secret("abcdef", TOKEN_SECRET, true, Some("2028-01-01T00:00:00Z"));
    let before = reconcile(&data(&[("kubeconfig", "k")]), [&s], now());
    assert!(before.data().contains_key("jws-kubeconfig-abcdef"));
    let later = now() + Duration::from_secs(10 * 365 * 86_400);
    let after = reconcile(before.data(), [&s], later);
    assert!(after.update_needed());
    assert!(!after.data().contains_key("jws-kubeconfig-abcdef"));
}

#[test]
fn first_secret_for_an_id_wins() {
    let a = token_secret("abcdef", "0123456789abcdef", true, None);
    let b = token_secret("abcdef", "ffffffffffffffff", true, None);
    let out = reconcile(&data(&[("kubeconfig", "hello")]), [&a, &b], now());
    let only_a = reconcile(&data(&[("kubeconfig", "hello")]), [&a], now());
    assert_eq!(out.data(), only_a.data());
    assert_eq!(out.signed_token_ids().len(), 1);
}

#[test]
fn signed_ids_keep_lister_order_and_keys_around_the_prefix_stay() {
    let secrets = [
        token_secret("zzzzzz", "0123456789abcdef", true, None),
        token_secret("aaaaaa", "0123456789abcdef", true, None),
        token_secret("zzzzzz", "ffffffffffffffff", true, None),
        token_secret("mmmmmm", "0123456789abcdef", true, None),
    ];
    let before = data(&[
        ("kubeconfig", "hello"),
        ("a", "1"),
        ("jws-kubeconfig", "2"),
        ("jws-kubeconfig.", "3"),
        ("jws-kubeconfig-zzzzzz", "stale"),
        ("jws-kubeconfig-qqqqqq", "gone"),
        ("zzz", "4"),
    ]);
    let out = reconcile(&before, &secrets, now());
    assert!(out.update_needed());
    let ids: Vec<&str> = out.signed_token_ids().iter().map(|i| i.as_str()).collect();
    assert_eq!(ids, ["zzzzzz", "aaaaaa", "mmmmmm"]);
    let keys: Vec<&str> = out.data().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "a",
            "jws-kubeconfig",
            "jws-kubeconfig-aaaaaa",
            "jws-kubeconfig-mmmmmm",
            "jws-kubeconfig-zzzzzz",
            "jws-kubeconfig.",
            "kubeconfig",
            "zzz"
        ]
    );
    // The first Secret for `zzzzzz` signed.
    assert_eq!(
        out.data()["jws-kubeconfig-zzzzzz"],
        jws_detached::sign(b"hello", "zzzzzz", b"0123456789abcdef").unwrap()
    );
    // Same signatures, one extra old key: still an update (a signature is removed).
    let mut extra = out.data().clone();
    extra.insert("jws-kubeconfig-qqqqqq".into(), String::new());
    assert!(reconcile(&extra, &secrets, now()).update_needed());
    assert!(!reconcile(out.data(), &secrets, now()).update_needed());
}
