//! Kubelet serving requests (signer `kubernetes.io/kubelet-serving`): the usages a kubelet asks
//! for and Kubernetes' API validation of them.

use std::collections::BTreeSet;

use crate::node_name::{NODE_USER_PREFIX, NODES_GROUP};
use crate::policy::Rejection;
use crate::request::{CertificateRequest, KeyType};
use crate::usage::KeyUsage;

/// The signer of kubelet serving certificates (the kubelet's HTTPS endpoint).
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

/// The usages a kubelet requests for an ECDSA or Ed25519 serving key: `digital signature`,
/// `server auth`.
pub const KUBELET_SERVING_USAGES: [KeyUsage; 2] =
    [KeyUsage::DigitalSignature, KeyUsage::ServerAuth];

/// The usages a kubelet requests for an RSA serving key, in its order: `digital signature`,
/// `server auth`, `key encipherment`.
pub const KUBELET_SERVING_USAGES_RSA: [KeyUsage; 3] = [
    KeyUsage::DigitalSignature,
    KeyUsage::ServerAuth,
    KeyUsage::KeyEncipherment,
];

/// The usages a kubelet requests for a serving key of type `key_type`:
/// [`KUBELET_SERVING_USAGES_RSA`] for RSA, [`KUBELET_SERVING_USAGES`] otherwise.
pub fn kubelet_serving_usages(key_type: KeyType) -> &'static [KeyUsage] {
    match key_type {
        KeyType::Rsa => &KUBELET_SERVING_USAGES_RSA,
        _ => &KUBELET_SERVING_USAGES,
    }
}

/// Checks a request for signer [`KUBELET_SERVING_SIGNER`] as Kubernetes'
/// `ValidateKubeletServingCSR` does, in its order and with its messages: organization exactly
/// `system:nodes`; at least one DNS or IP subject alternative name; no email and no URI
/// subject alternative names; usages, as a set, exactly {digital signature, key encipherment,
/// server auth} or {digital signature, server auth}; common name starting with
/// `system:node:`.
///
/// # Errors
///
/// The first rule broken, as a [`Rejection`].
pub fn validate_kubelet_serving(
    request: &CertificateRequest,
    usages: &[KeyUsage],
) -> Result<(), Rejection> {
    if request.organizations() != [NODES_GROUP] {
        return Err(Rejection::new("subject organization is not system:nodes"));
    }
    if request.dns_names().is_empty() && request.ip_addresses().is_empty() {
        return Err(Rejection::new("DNS or IP subjectAltName is required"));
    }
    if !request.email_addresses().is_empty() {
        return Err(Rejection::new("Email subjectAltNames are not allowed"));
    }
    if !request.uris().is_empty() {
        return Err(Rejection::new("URI subjectAltNames are not allowed"));
    }
    let set: BTreeSet<KeyUsage> = usages.iter().copied().collect();
    let with_rsa: BTreeSet<KeyUsage> = KUBELET_SERVING_USAGES_RSA.into_iter().collect();
    let without_rsa: BTreeSet<KeyUsage> = KUBELET_SERVING_USAGES.into_iter().collect();
    if set != with_rsa && set != without_rsa {
        return Err(Rejection::new(
            "usages did not match [digital signature key encipherment server auth]",
        ));
    }
    if !request
        .common_name()
        .is_some_and(|cn| cn.starts_with(NODE_USER_PREFIX))
    {
        return Err(Rejection::new(
            "subject common name does not begin with system:node:",
        ));
    }
    Ok(())
}
