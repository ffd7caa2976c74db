#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod ca_bundle;
mod ca_pin;
mod cluster_info;
mod configmap;
mod discovery;
mod error;
mod extension;
#[cfg(any(feature = "k8s-openapi", feature = "k8s-openapi-0-28"))]
mod k8s;
mod rbac;
mod server;
mod signer;
mod tls_bootstrap;
mod yaml;

/// The `bootstrap-token` crate this crate builds on (tokens, token IDs), re-exported so one
/// dependency is enough.
pub use bootstrap_token;
pub use ca_bundle::{CaBundle, MAX_BUNDLE_BYTES, MAX_BUNDLE_CERTIFICATES};
pub use ca_pin::{Pin, PinSet};
pub use cluster_info::{ClusterInfo, NamedExtension, ParseOptions, Trust};
pub use configmap::{
    CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_PATH, ClusterInfoConfigMap,
    JWS_KEY_PREFIX, KUBECONFIG_KEY, MAX_CONFIGMAP_JSON_BYTES, signature_key,
};
pub use discovery::{
    Action, CaVerification, DEFAULT_DISCOVERY_TIMEOUT, DEFAULT_RETRY_INTERVAL, Discovered,
    Discovery, FetchRequest, FetchTrust, FileDiscoveryConfig, MAX_ENDPOINTS, MAX_RESPONSE_BYTES,
    Refresh, Response, TokenDiscoveryConfig,
};
pub use error::Error;
pub use extension::{CLUSTER_EXTENSION_NAME, ClusterExtension, MAX_EQUIVALENT_SERVERS};
/// The `jws-detached` crate this crate builds on (cluster-info signatures), re-exported.
pub use jws_detached;
pub use rbac::{
    ANONYMOUS_USER, CLUSTER_INFO_ROLE_NAME, DEFAULT_NODE_TOKEN_GROUP, PolicyRule, Role,
    RoleBinding, Subject, SubjectKind, cluster_info_role, cluster_info_role_binding,
    node_bootstrap_objects,
};
pub use signer::{Reconciled, reconcile};
pub use tls_bootstrap::{
    TLS_BOOTSTRAP_CLUSTER, TLS_BOOTSTRAP_CONTEXT, TLS_BOOTSTRAP_USER, TlsBootstrapKubeconfig,
};
pub use yaml::{
    MAX_KUBECONFIG_ALIASES, MAX_KUBECONFIG_BYTES, MAX_KUBECONFIG_DEPTH, MAX_KUBECONFIG_NODES,
};
