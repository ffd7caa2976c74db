//! The cluster-info ConfigMap: parsing the API server's JSON and checking a token's signature.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use crate::fixtures::*;
use bootstrap_token::BootstrapToken;
use clusterinfo::{ClusterInfoConfigMap, Error};

fn token() -> BootstrapToken {
    TOKEN.parse().unwrap()
}

fn with(kubeconfig: Option<&str>, sigs: &[(&str, &str)]) -> ClusterInfoConfigMap {
    let mut data = std::collections::BTreeMap::new();
    if let Some(k) = kubeconfig {
        data.insert("kubeconfig".to_owned(), k.to_owned());
    }
    for (k, v) in sigs {
        data.insert((*k).to_owned(), (*v).to_owned());
    }
    ClusterInfoConfigMap::from_data(data)
}

fn good_sig(content: &str) -> String {
    jws_detached::sign(content.as_bytes(), "abcdef", TOKEN_SECRET.as_bytes()).unwrap()
}

#[test]
fn served_json_round_trips_and_verifies() {
    let json = served_default();
    let cm = ClusterInfoConfigMap::from_json(json.as_bytes()).unwrap();
    let kubeconfig = cm.verify(&token()).unwrap();
    assert_eq!(kubeconfig, cluster_info().to_kubeconfig_yaml());
    assert_eq!(
        ClusterInfoConfigMap::from_json(cm.to_json().as_bytes()).unwrap(),
        cm
    );
}

/// Hostile-input catalogue #32.
#[test]
fn missing_or_empty_kubeconfig() {
    for cm in [
        with(None, &[("jws-kubeconfig-abcdef", "x")]),
        with(Some(""), &[("jws-kubeconfig-abcdef", "x")]),
    ] {
        let err = cm.verify(&token()).unwrap_err();
        assert_eq!(err, Error::MissingKubeconfig);
        assert_eq!(
            err.to_string(),
            "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect"
        );
    }
}

/// Hostile-input catalogue #33.
#[test]
fn signature_key_must_be_exact() {
    let sig = good_sig("k");
    for key in [
        "jws-kubeconfig-ghijkl",
        "JWS-KUBECONFIG-abcdef",
        "jws-kubeconfig-abcdef ",
        "jws-kubeconfig-ABCDEF",
    ] {
        let err = with(Some("k"), &[(key, &sig)])
            .verify(&token())
            .unwrap_err();
        assert_eq!(
            err,
            Error::TokenNotValidForCluster {
                token_id: "abcdef".into()
            },
            "{key}"
        );
    }
    let err = with(Some("k"), &[("jws-kubeconfig-abcdef", "")])
        .verify(&token())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "token id \"abcdef\" is invalid for this cluster or it has expired. Use \"kubeadm token create\" on the control-plane node to create a new valid token"
    );
}

/// Hostile-input catalogue #34.
#[test]
fn other_signature_keys_are_ignored() {
    let cm = with(
        Some("k"),
        &[
            ("jws-kubeconfig-abcdef", &good_sig("k")),
            ("jws-kubeconfig-ghijkl", "garbage"),
            ("jws-kubeconfig-x", ""),
        ],
    );
    assert_eq!(cm.verify(&token()).unwrap(), "k");
}

/// Hostile-input catalogue #35 and the §5.3 tamper rows that reach this crate.
#[test]
fn any_change_to_the_signed_bytes_is_rejected() {
    let original = cluster_info().to_kubeconfig_yaml();
    let sig = good_sig(&original);
    let reformatted = original
        .replace("apiVersion: v1\nclusters:", "clusters:")
        .replace("kind: Config\n", "kind: Config\napiVersion: v1\n");
    for tampered in [
        reformatted,
        format!("{original}\n"),
        original.replace('\n', "\r\n"),
        original.replace("127.0.0.1", "127.0.0.2"),
    ] {
        let err = with(Some(&tampered), &[("jws-kubeconfig-abcdef", &sig)])
            .verify(&token())
            .unwrap_err();
        assert_eq!(err, Error::BadSignature);
        assert_eq!(
            err.to_string(),
            "failed to verify JWS signature of received cluster info object, can't trust this API Server"
        );
    }
    // Wrong token secret.
    let wrong: BootstrapToken = "abcdef.0123456789abcdeg".parse().unwrap();
    assert_eq!(
        with(Some(&original), &[("jws-kubeconfig-abcdef", &sig)])
            .verify(&wrong)
            .unwrap_err(),
        Error::BadSignature
    );
    // Non-detached and non-canonical forms.
    let parts: Vec<&str> = sig.split('.').collect();
    let b64 = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        original.as_bytes(),
    );
    for bad in [
        format!("{}.{}.{}", parts[0], b64, parts[2]),
        format!("{sig}="),
        format!("{sig}foo"),
        format!("{}...{}", parts[0], parts[2]),
        format!(" {sig}"),
    ] {
        assert_eq!(
            with(Some(&original), &[("jws-kubeconfig-abcdef", &bad)])
                .verify(&token())
                .unwrap_err(),
            Error::BadSignature
        );
    }
}

#[test]
fn hostile_json_is_bounded() {
    let big = vec![b' '; clusterinfo::MAX_CONFIGMAP_JSON_BYTES + 1];
    assert!(matches!(
        ClusterInfoConfigMap::from_json(&big).unwrap_err(),
        Error::TooLarge {
            what: "ConfigMap",
            ..
        }
    ));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        ClusterInfoConfigMap::from_json(deep.as_bytes()).unwrap_err(),
        Error::ConfigMapSyntax { .. }
    ));
    let many: String = (0..50_000).map(|i| format!("\"k{i}\":\"v\",")).collect();
    let json = format!("{{\"data\":{{{many}\"kubeconfig\":\"x\"}}}}");
    let cm = ClusterInfoConfigMap::from_json(json.as_bytes()).unwrap();
    assert_eq!(cm.kubeconfig(), Some("x"));
    for bad in [
        &b"{"[..],
        b"null",
        b"{\"data\":{\"kubeconfig\":1}}",
        b"{\"kind\":\"Secret\"}",
        b"{\"metadata\":{\"name\":\"other\"}}",
    ] {
        assert!(
            ClusterInfoConfigMap::from_json(bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    // A value echoed in a type error never reaches our message.
    let err = ClusterInfoConfigMap::from_json(
        format!("{{\"data\":{{\"kubeconfig\":[\"{TOKEN}\"]}}}}").as_bytes(),
    )
    .unwrap_err();
    assert!(!format!("{err} {err:?}").contains(TOKEN));
}

#[test]
fn duplicate_data_keys_keep_the_last_value_as_go_does() {
    let json = br#"{"data":{"kubeconfig":"first","kubeconfig":"second"}}"#;
    assert_eq!(
        ClusterInfoConfigMap::from_json(json).unwrap().kubeconfig(),
        Some("second")
    );
}

/// Hostile-input catalogue #38 at the ConfigMap level: size is checked before any MAC.
#[test]
fn oversized_kubeconfig_value_is_rejected_before_verification() {
    let big = "#".repeat(clusterinfo::MAX_KUBECONFIG_BYTES + 1);
    let err = with(Some(&big), &[("jws-kubeconfig-abcdef", "x..y")])
        .verify(&token())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                what: "kubeconfig",
                ..
            }
        ),
        "{err:?}"
    );
}

/// Hostile-input catalogue #33: no signature key at all, only unrelated keys.
#[test]
fn no_signature_key_at_all_is_token_not_valid() {
    for others in [&[][..], &[("note", "x"), ("jws-kubeconfig", "y")][..]] {
        let err = with(Some("k"), others).verify(&token()).unwrap_err();
        assert_eq!(
            err,
            Error::TokenNotValidForCluster {
                token_id: "abcdef".into()
            }
        );
    }
}

/// Go writes a nil map as `null`: `"data": null` is a ConfigMap without keys.
#[test]
fn null_data_is_no_keys() {
    let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cluster-info","namespace":"kube-public"},"data":null}"#;
    let cm = clusterinfo::ClusterInfoConfigMap::from_json(json).unwrap();
    assert!(cm.data().is_empty());
    assert_eq!(cm.kubeconfig(), None);
}
