#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// Assertions are the point of this crate: a check panics (through `assert!`, `unwrap`, `expect`
// and out-of-range slicing on inputs it has already validated) exactly when a property fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod addon_jwt;
mod bootstrap_token;
mod clusterinfo;
mod delegated_auth;
mod exec_credential;
mod fixtures;
mod hygiene;
mod input;
mod jws_detached;
mod outcome;
mod tls_bootstrap;

pub use addon_jwt::{
    addon_jwt_add_auth, addon_jwt_http1_differential, addon_jwt_http1_response, addon_jwt_jwks,
    addon_jwt_pem, addon_jwt_sidecar, addon_jwt_verify,
};
pub use bootstrap_token::{
    bootstrap_token_authenticate, bootstrap_token_expiration, bootstrap_token_groups,
    bootstrap_token_kubeadm_json, bootstrap_token_parse, bootstrap_token_secret_json,
    bootstrap_token_secret_yaml,
};
pub use clusterinfo::{
    clusterinfo_ca_bundle, clusterinfo_configmap, clusterinfo_discovery, clusterinfo_kubeconfig,
    clusterinfo_pin,
};
pub use delegated_auth::{
    delegated_auth_access_review, delegated_auth_bearer_header, delegated_auth_configmap,
    delegated_auth_oidc_discovery, delegated_auth_proxy_config, delegated_auth_rbac_objects,
    delegated_auth_request_info, delegated_auth_token_review,
};
pub use exec_credential::{
    exec_credential_authenticator, exec_credential_cache_entry, exec_credential_exec_info,
    exec_credential_plugin_output,
};
pub use fixtures::{KEY, KID, TOKEN};
pub use jws_detached::{
    jws_detached_verify, jws_detached_verify_header_json, jws_detached_verify_kubernetes,
};
pub use outcome::Outcome;
pub use tls_bootstrap::{
    TLS_CA_PEM, TLS_NODE_CERT_PEM, TLS_NODE_KEY_PEM, tls_bootstrap_certificate,
    tls_bootstrap_csr_json, tls_bootstrap_csr_yaml, tls_bootstrap_request,
};
