#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod accept;
mod backend;
mod error;
mod ip_prefix;
#[cfg(feature = "k8s-openapi")]
mod k8s;
mod key;
mod kubeconfig;
mod name;
mod node_name;
mod object;
mod pem;
mod policy;
mod request;
pub mod rotation;
mod serving;
mod serving_approver;
mod serving_request;
mod signer;
mod summary;
mod time;
mod usage;
mod waiting;

pub use accept::{
    IssuedCertificate, MAX_CA_BUNDLE_BYTES, MAX_CA_CERTIFICATES, MAX_CERTIFICATE_PEM_BYTES,
    MAX_CHAIN_CERTIFICATES, accept_certificate, ca_certificates, rotation_deadline,
    verify_client_chain,
};
pub use error::Error;
pub use ip_prefix::IpPrefix;
pub use key::{MAX_KEY_PEM_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, NodeKey};
pub use kubeconfig::{
    KUBELET_CLIENT_PEM, KUBELET_CLUSTER, KUBELET_CONTEXT, KUBELET_USER, kubelet_kubeconfig,
    kubelet_kubeconfig_inline,
};
pub use name::{MAX_SUBJECT_ATTRIBUTES, Subject};
pub use node_name::{MAX_NODE_NAME_LEN, NODE_USER_PREFIX, NODES_GROUP, NodeName};
pub use object::{
    API_VERSION, CertificateSigningRequest, CertificateSigningRequestBuilder, Condition, KIND,
    KUBELET_CLIENT_SIGNER, KUBELET_CLIENT_USAGES, KUBELET_CLIENT_USAGES_RSA, MAX_CONDITIONS,
    MAX_OBJECT_BYTES, MIN_EXPIRATION_SECONDS, NODE_CSR_NAME_PREFIX, ObjectMeta, Spec, State,
    Status, kubelet_client_usages, node_csr_name,
};
pub use pem::{GoPemBlock, go_pem_blocks};
pub use policy::{
    AccessReview, Approval, Recognizer, Rejection, approve, is_node_client_cert,
    is_self_node_client_cert, validate_kubelet_client,
};
pub use request::{CertificateRequest, KeyType, MAX_REQUEST_BYTES, MAX_REQUEST_NAMES};
pub use serving::{
    KUBELET_SERVING_SIGNER, KUBELET_SERVING_USAGES, KUBELET_SERVING_USAGES_RSA,
    kubelet_serving_usages, validate_kubelet_serving,
};
pub use serving_approver::{DnsCheck, ServingDecision, ServingPolicy, decide_serving};
pub use signer::{
    BACKDATE, DEFAULT_SIGNING_DURATION, MIN_LIFETIME, SHORT_LIFETIME, SignerConfig, Signing,
    SigningPlan, sign, signing_duration,
};
pub use summary::{CertificateSummary, MAX_SUMMARY_SUBJECT_CHARS, summarize_certificate};
pub use time::rfc3339;
pub use usage::KeyUsage;
pub use waiting::{Issuer, Waiting};
