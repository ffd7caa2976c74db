//! The example manifests in `deploy/forward-proxy/` (an add-on with `k8s-bootstrap
//! forward-proxy` as its sidecar): every object round-trips through its typed k8s-openapi
//! object, `kubectl kustomize` renders exactly the files' objects, the keys ConfigMap holds a
//! JWKS that addon-jwt loads, and the only RBAC is `list` on Services.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/forward-proxy")
}

fn objects() -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| parse(&std::fs::read_to_string(p).unwrap()))
        .collect()
}

fn parse(yaml: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn key(v: &Value) -> (String, String, String) {
    let f = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    (f("/kind"), f("/metadata/namespace"), f("/metadata/name"))
}

fn round_trip<T: DeserializeOwned + Serialize>(v: &Value) -> Value {
    let typed: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{:?} does not parse as its type: {e}", key(v)));
    serde_json::to_value(&typed).unwrap()
}

/// The image kustomization.yaml's `images:` entry gives the container named `k8s-bootstrap` in
/// the files.
const KUSTOMIZED_IMAGE: &str = "ghcr.io/k8s-bootstrap-rs/k8s-bootstrap:0.1.0";

/// The objects as kustomize renders them: the files' `image: k8s-bootstrap` replaced by the
/// kustomization's image; no other change.
fn with_kustomized_image(mut objects: Vec<Value>) -> Vec<Value> {
    let ours: Vec<&mut Value> = objects
        .iter_mut()
        .filter_map(|o| o.pointer_mut("/spec/template/spec/containers"))
        .filter_map(Value::as_array_mut)
        .flatten()
        .map(|container| &mut container["image"])
        .filter(|image| **image == "k8s-bootstrap")
        .collect();
    assert_eq!(ours.len(), 1, "one container names the image k8s-bootstrap");
    for image in ours {
        *image = Value::from(KUSTOMIZED_IMAGE);
    }
    objects
}

#[test]
fn every_object_round_trips_and_kustomize_renders_them() {
    let objects = objects();
    for object in &objects {
        let back = match key(object).0.as_str() {
            "Deployment" => round_trip::<Deployment>(object),
            "ServiceAccount" => round_trip::<ServiceAccount>(object),
            "Service" => round_trip::<Service>(object),
            "ConfigMap" => round_trip::<ConfigMap>(object),
            "Role" => round_trip::<Role>(object),
            "RoleBinding" => round_trip::<RoleBinding>(object),
            other => panic!("unexpected kind {other}"),
        };
        assert_eq!(
            &back,
            object,
            "{:?} changes through its k8s-openapi type",
            key(object)
        );
    }
    let mut keys: Vec<_> = objects.iter().map(key).collect();
    keys.sort();
    let expected: Vec<(String, String, String)> = [
        ("ConfigMap", "dashboard-addon-jwt-keys"),
        ("Deployment", "dashboard"),
        ("Role", "dashboard:forward-proxy"),
        ("RoleBinding", "dashboard:forward-proxy"),
        ("Service", "dashboard"),
        ("ServiceAccount", "dashboard"),
    ]
    .iter()
    .map(|(k, n)| ((*k).to_owned(), "kube-system".to_owned(), (*n).to_owned()))
    .collect();
    assert_eq!(keys, expected);

    let output = match Command::new("kubectl").arg("kustomize").arg(dir()).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped the kustomize part: kubectl is not on PATH");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut rendered = parse(&String::from_utf8(output.stdout).unwrap());
    rendered.sort_by_key(key);
    let mut files = with_kustomized_image(objects);
    files.sort_by_key(key);
    assert_eq!(rendered, files);
}

#[test]
fn the_keys_load_and_the_sidecar_is_wired_as_documented() {
    let objects = objects();
    let find = |kind: &str| {
        objects
            .iter()
            .find(|o| key(o).0 == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    let keys: ConfigMap = serde_json::from_value(find("ConfigMap").clone()).unwrap();
    let jwks = &keys.data.unwrap()["jwks.json"];
    let set = addon_jwt::KeySet::from_jwks(jwks).expect("the example JWKS loads");
    assert_eq!(set.len(), 1);

    let deployment: Deployment = serde_json::from_value(find("Deployment").clone()).unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    let proxy = pod
        .containers
        .iter()
        .find(|c| c.name == "forward-proxy")
        .unwrap();
    let args = proxy.args.clone().unwrap();
    for expected in [
        "forward-proxy",
        "--forward=127.0.0.1:8080",
        "--audience-from-services",
        "--pod-labels-file=/etc/podinfo/labels",
        "--jwks-file=/etc/addon-jwt/jwks.json",
        "--secure-listen-address=0.0.0.0:8443",
        "--tls-cert-file=/etc/forward-proxy/tls/tls.crt",
        "--tls-private-key-file=/etc/forward-proxy/tls/tls.key",
    ] {
        assert!(
            args.iter().any(|a| a == expected),
            "{expected} missing: {args:?}"
        );
    }
    // TLS, never plain HTTP: the certificate files come from the Secret's volume.
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--insecure-listen-address")),
        "{args:?}"
    );
    let mount = proxy
        .volume_mounts
        .as_deref()
        .unwrap()
        .iter()
        .find(|m| m.mount_path == "/etc/forward-proxy/tls")
        .expect("the serving certificate is mounted");
    let volume = pod
        .volumes
        .as_deref()
        .unwrap()
        .iter()
        .find(|v| v.name == mount.name)
        .unwrap();
    assert_eq!(
        volume.secret.as_ref().unwrap().secret_name.as_deref(),
        Some("dashboard-serving-cert")
    );
    let namespace_env = proxy
        .env
        .as_deref()
        .unwrap()
        .iter()
        .find(|e| e.name == "POD_NAMESPACE")
        .unwrap();
    assert_eq!(
        namespace_env
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "metadata.namespace"
    );
    // The add-on listens on loopback only: every request comes through the proxy.
    let addon = pod
        .containers
        .iter()
        .find(|c| c.name == "dashboard")
        .unwrap();
    assert!(
        addon.ports.is_none(),
        "the add-on exposes no port of its own"
    );

    // The only permission: list Services in the pod's namespace.
    let role: Role = serde_json::from_value(find("Role").clone()).unwrap();
    let rules = role.rules.unwrap();
    let [rule] = rules.as_slice() else {
        panic!("one rule expected: {rules:?}")
    };
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["services".to_owned()][..])
    );
    assert_eq!(rule.verbs, ["list"]);
}
