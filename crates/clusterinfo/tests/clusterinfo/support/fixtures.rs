//! Shared test fixtures: the reference certificates and token Secrets.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap_token::SecretObject;
use clusterinfo::{CaBundle, ClusterInfo, ClusterInfoConfigMap};

pub const PUBKEYPIN_VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/pubkeypin.jsonl"
));
pub const JWS_VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jws.jsonl"
));

/// The canary token of the hostile-input catalogue.
pub const TOKEN: &str = "abcdef.0123456789abcdef";
pub const TOKEN_SECRET: &str = "0123456789abcdef";

/// (certificate PEM, expected pin) for every line of the pin vectors.
pub fn pin_vectors() -> Vec<(String, String)> {
    PUBKEYPIN_VECTORS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["cert_pem"].as_str().unwrap().to_owned(),
                v["pin"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub fn ca_pem() -> String {
    pin_vectors()[0].0.clone()
}

pub fn other_ca_pem() -> String {
    pin_vectors()[1].0.clone()
}

pub fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

pub fn cluster_info() -> ClusterInfo {
    ClusterInfo::new(
        "https://127.0.0.1:6443",
        CaBundle::from_pem(ca_pem().as_bytes()).unwrap(),
    )
    .unwrap()
}

/// A bootstrap-token Secret with the given signing usage and optional expiration.
pub fn token_secret(
    id: &str,
    secret: &str,
    signing: bool,
    expiration: Option<&str>,
) -> SecretObject {
    let mut data = BTreeMap::new();
    data.insert("token-id".to_owned(), id.as_bytes().to_vec());
    data.insert("token-secret".to_owned(), secret.as_bytes().to_vec());
    if signing {
        data.insert("usage-bootstrap-signing".to_owned(), b"true".to_vec());
    }
    if let Some(exp) = expiration {
        data.insert("expiration".to_owned(), exp.as_bytes().to_vec());
    }
    SecretObject::new(
        format!("bootstrap-token-{id}"),
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(data),
    )
}

/// The cluster-info ConfigMap JSON an API server would serve, signed for `tokens`.
pub fn served(kubeconfig: &str, tokens: &[(&str, &str)]) -> String {
    let mut cm = ClusterInfoConfigMap::new(kubeconfig);
    let secrets: Vec<_> = tokens
        .iter()
        .map(|(id, s)| token_secret(id, s, true, None))
        .collect();
    let out = clusterinfo::reconcile(cm.data(), &secrets, now());
    cm.set_data(out.into_data());
    cm.to_json()
}

pub fn served_default() -> String {
    served(
        &cluster_info().to_kubeconfig_yaml(),
        &[("abcdef", TOKEN_SECRET)],
    )
}
