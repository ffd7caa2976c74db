//! The `extension-apiserver-authentication` ConfigMap, as kube-apiserver writes it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests"
)]

use crate::support::{Ca, now};
use delegated_auth::{AuthenticationConfigMap, Error, MAX_CONFIGMAP_BYTES};
use proptest::prelude::*;

fn configmap(client_ca: &str, front_proxy_ca: &str, allowed: &str) -> Vec<u8> {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
        "data": {
            "client-ca-file": client_ca,
            "requestheader-client-ca-file": front_proxy_ca,
            "requestheader-allowed-names": allowed,
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
            "requestheader-uid-headers": "[\"X-Remote-Uid\"]"
        }
    })
    .to_string()
    .into_bytes()
}

#[test]
fn as_kube_apiserver_writes_it() {
    let cluster = Ca::new("kubernetes");
    let front = Ca::new("front-proxy-ca");
    let cm = AuthenticationConfigMap::from_json(&configmap(
        &cluster.pem(),
        &front.pem(),
        "[\"front-proxy-client\"]",
    ))
    .unwrap();
    let client_ca = cm.client_ca().unwrap();
    let user = client_ca
        .authenticate(&[cluster.issue("alice", &["devs"])], now())
        .unwrap()
        .unwrap();
    assert_eq!(user.name, "alice");
    let fp = cm.front_proxy().unwrap();
    let headers = [
        ("X-Remote-User", "bob"),
        ("X-Remote-Uid", "u-1"),
        ("X-Remote-Extra-Scopes", "s"),
    ];
    let user = fp
        .authenticate(&[front.issue("front-proxy-client", &[])], &headers, now())
        .unwrap()
        .unwrap();
    assert_eq!(
        (user.name.as_str(), user.uid.as_deref()),
        ("bob", Some("u-1"))
    );
    assert_eq!(user.extra["scopes"], ["s"]);
    // The cluster CA is not the front proxy's.
    assert!(
        fp.authenticate(&[cluster.issue("front-proxy-client", &[])], &headers, now())
            .is_err()
    );
    // Nor a name not listed.
    assert!(matches!(
        fp.authenticate(&[front.issue("other", &[])], &headers, now()),
        Err(Error::NotAllowedName)
    ));
}

#[test]
fn absent_parts_configure_nothing() {
    let cm = AuthenticationConfigMap::from_json(br#"{"data":{}}"#).unwrap();
    assert!(cm.client_ca().is_none() && cm.front_proxy().is_none());
    let cm = AuthenticationConfigMap::from_json(br#"{}"#).unwrap();
    assert!(cm.client_ca().is_none() && cm.front_proxy().is_none());
    // An empty allowed-names list: any name the front-proxy CA signed.
    let front = Ca::new("front-proxy-ca");
    let cm = AuthenticationConfigMap::from_json(&configmap("", &front.pem(), "")).unwrap();
    assert!(cm.client_ca().is_none());
    let user = cm
        .front_proxy()
        .unwrap()
        .authenticate(
            &[front.issue("anyone", &[])],
            &[("X-Remote-User", "bob")],
            now(),
        )
        .unwrap();
    assert_eq!(user.unwrap().name, "bob");
}

#[test]
fn hostile_configmaps() {
    let front = Ca::new("front-proxy-ca");
    for (bad, why) in [
        (configmap("not a pem", "", ""), "client CA"),
        (configmap("", "garbage", ""), "front-proxy CA"),
        (configmap("", &front.pem(), "not json"), "allowed names"),
        (
            configmap("", &front.pem(), "[1]"),
            "allowed names of numbers",
        ),
        (
            configmap("", &front.pem(), "\"front-proxy-client\""),
            "a string, not a list",
        ),
        (br#"{"kind":"Secret","data":{}}"#.to_vec(), "kind"),
        (br#"{"data":{"client-ca-file":1}}"#.to_vec(), "a number"),
        (br#"{"data":[]}"#.to_vec(), "data is a list"),
        (b"{".to_vec(), "truncated"),
    ] {
        assert!(AuthenticationConfigMap::from_json(&bad).is_err(), "{why}");
    }
    let bad_header = serde_json::json!({"data": {"requestheader-client-ca-file": front.pem(),
        "requestheader-username-headers": "[\"X-Remote User\"]"}});
    assert!(matches!(
        AuthenticationConfigMap::from_json(bad_header.to_string().as_bytes()),
        Err(Error::Invalid { .. })
    ));
    let huge = vec![b' '; MAX_CONFIGMAP_BYTES + 1];
    assert!(matches!(
        AuthenticationConfigMap::from_json(&huge),
        Err(Error::TooLarge { .. })
    ));
}

proptest! {
    #[test]
    fn reading_never_panics(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = AuthenticationConfigMap::from_json(&body);
    }

    #[test]
    fn lists_never_panic(s in "\\PC*") {
        let cm = serde_json::json!({"data": {"requestheader-client-ca-file": "x", "requestheader-allowed-names": s}});
        let _ = AuthenticationConfigMap::from_json(cm.to_string().as_bytes());
    }
}
