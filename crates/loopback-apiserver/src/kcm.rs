//! The double's kube-controller-manager CSR controllers: `csrapproving` for
//! `kubernetes.io/kube-apiserver-client-kubelet`, and `csrsigning` for it and for
//! `kubernetes.io/kubelet-serving` (approved by someone else: kube-controller-manager never
//! approves serving requests, and neither does the double), each decision taken by the
//! `tls-bootstrap` core ([`tls_bootstrap::approve`], [`tls_bootstrap::sign`]); the double only
//! reads the object, writes the result through the `approval` or `status` subresource, and (for
//! the signer) has its CA issue the certificate the plan describes, with the request's names.
//!
//! The approver's SubjectAccessReviews are answered by the double's authorizer over the stored
//! policy, which holds the RBAC kubeadm installs: `certificatesigningrequests/nodeclient` for
//! group `system:bootstrappers:kubeadm:default-node-token` (ClusterRoleBinding
//! `kubeadm:node-autoapprove-bootstrap`), `certificatesigningrequests/selfnodeclient` for group
//! `system:nodes` (`kubeadm:node-autoapprove-certificate-rotation`), everything for
//! `system:masters`.

use std::time::SystemTime;

use delegated_auth::{Attributes, ResourceAttributes, UserInfo};
use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose, Ia5String, KeyUsagePurpose, PublicKeyData,
    SanType, SerialNumber, SignatureAlgorithm,
};
use serde_json::Value;
use tls_bootstrap::{
    AccessReview, Approval, CertificateSigningRequest, Condition, KeyType, KeyUsage, SignerConfig,
    Signing, SigningPlan,
};

use super::handler::{Shared, lock};
use super::rbac::Decision;
use super::store::{Resource, Subresource};

/// The approver on the object `name`, once.
pub(crate) fn approve(shared: &Shared, name: &str) {
    let Some((object, csr)) = read(shared, name) else {
        return;
    };
    let authorized = |review: &AccessReview<'_>| access_review(shared, review);
    match tls_bootstrap::approve(&csr, authorized) {
        Approval::Approve {
            recognizer,
            condition,
        } => {
            tracing::info!(csr = name, ?recognizer, "approving");
            write_condition(shared, name, object, condition, Subresource::Approval);
        }
        Approval::NotAuthorized(why) | Approval::Unparseable(why) => {
            tracing::info!(csr = name, %why, "not approved");
        }
        _ => {}
    }
}

/// The signer on the object `name`, once.
pub(crate) fn sign(shared: &Shared, name: &str) {
    let Some((mut object, csr)) = read(shared, name) else {
        return;
    };
    let now = crate::clock::now();
    let config = SignerConfig::new(shared.ca.not_after());
    match tls_bootstrap::sign(&csr, &config, now) {
        Signing::Sign(mut plan) => {
            match test_lifetime(shared, &mut plan, now).and_then(|()| issue(shared, &plan)) {
                Ok(pem) => {
                    if let Some(status) = status_mut(&mut object) {
                        status.insert("certificate".to_owned(), Value::String(b64(pem.as_bytes())));
                        update(shared, name, object, Subresource::Status, now);
                    }
                }
                Err(reason) => {
                    let condition = Condition::new("Failed", "SignerValidationFailure", &reason);
                    write_condition(shared, name, object, condition, Subresource::Status);
                }
            }
        }
        Signing::Fail(condition) => {
            write_condition(shared, name, object, condition, Subresource::Status);
        }
        Signing::Retry(why) => tracing::info!(csr = name, %why, "not signed"),
        _ => {}
    }
}

/// With a test lifetime (`Builder::test_certificate_lifetime`), `plan` is valid from `now`
/// for that long, cut to the CA's `notAfter`; otherwise it is left as the core planned it.
fn test_lifetime(shared: &Shared, plan: &mut SigningPlan, now: SystemTime) -> Result<(), String> {
    let Some(lifetime) = shared.certificate_lifetime else {
        return Ok(());
    };
    let not_after = now
        .checked_add(lifetime)
        .ok_or_else(|| "the test certificate lifetime is out of range".to_owned())?;
    plan.not_before = now;
    plan.not_after = not_after.min(shared.ca.not_after());
    Ok(())
}

/// The approver's SubjectAccessReview, answered by the double's authorizer.
fn access_review(shared: &Shared, review: &AccessReview<'_>) -> bool {
    let mut user = UserInfo::new(review.user).with_groups(review.groups.iter().cloned());
    if let Some(uid) = review.uid {
        user = user.with_uid(uid);
    }
    for (k, v) in review.extra {
        user = user.with_extra(k.clone(), v.iter().cloned());
    }
    let attrs = Attributes::resource(
        user,
        review.verb,
        ResourceAttributes::new(review.group, "*", review.resource)
            .with_subresource(review.subresource),
    );
    matches!(
        super::auth::authorize(&lock(&shared.store), &attrs),
        Decision::Allow(_)
    )
}

/// The object and its parsed form; `None` if it is gone or does not parse (as the
/// controllers, the double leaves what it cannot read).
fn read(shared: &Shared, name: &str) -> Option<(Value, CertificateSigningRequest)> {
    let object = lock(&shared.store)
        .get(Resource::CertificateSigningRequests, "", name)
        .cloned()?;
    let json = serde_json::to_vec(&object).ok()?;
    let csr = CertificateSigningRequest::from_json(&json).ok()?;
    Some((object, csr))
}

fn status_mut(object: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let map = object.as_object_mut()?;
    map.entry("status")
        .or_insert_with(|| Value::Object(serde_json::Map::new()))
        .as_object_mut()
}

/// Appends `condition` (timestamped now) and writes the object through `part`.
fn write_condition(
    shared: &Shared,
    name: &str,
    mut object: Value,
    condition: Condition,
    part: Subresource,
) {
    let now = crate::clock::now();
    let stamp = tls_bootstrap::rfc3339(now);
    let mut condition = condition;
    condition.last_update_time = Some(stamp.clone());
    condition.last_transition_time = Some(stamp);
    let (Some(status), Ok(condition)) = (status_mut(&mut object), serde_json::to_value(&condition))
    else {
        return;
    };
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = conditions.as_array_mut() {
        list.push(condition);
        update(shared, name, object, part, now);
    }
}

fn update(shared: &Shared, name: &str, object: Value, part: Subresource, now: SystemTime) {
    let result = lock(&shared.store).update_part(
        Resource::CertificateSigningRequests,
        "",
        name,
        Some(part),
        object,
        false,
        now,
    );
    if let Err(e) = result {
        // A concurrent writer changed the object: its own hook call sees the new version.
        tracing::debug!(csr = name, error = ?e, "CSR controller write lost a race");
    }
}

/// The request's public key, for rcgen.
struct PlanKey<'a> {
    bits: &'a [u8],
    alg: &'static SignatureAlgorithm,
}

impl PublicKeyData for PlanKey<'_> {
    fn der_bytes(&self) -> &[u8] {
        self.bits
    }

    fn algorithm(&self) -> &SignatureAlgorithm {
        self.alg
    }
}

/// Has the CA issue the certificate `plan` describes; the PEM, or why not.
fn issue(shared: &Shared, plan: &SigningPlan) -> Result<String, String> {
    let alg: &'static SignatureAlgorithm = match plan.key_type {
        KeyType::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyType::EcdsaP384 => &rcgen::PKCS_ECDSA_P384_SHA384,
        KeyType::Rsa => &rcgen::PKCS_RSA_SHA256,
        KeyType::Ed25519 => &rcgen::PKCS_ED25519,
        _ => return Err("the double's signer does not handle this key type".to_owned()),
    };
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    for o in &plan.organizations {
        params
            .distinguished_name
            .push(DnType::OrganizationName, o.as_str());
    }
    params
        .distinguished_name
        .push(DnType::CommonName, plan.common_name.as_str());
    params.subject_alt_names = subject_alt_names(plan)?;
    params.key_usages = plan
        .key_usages
        .iter()
        .filter_map(|u| match u {
            KeyUsage::DigitalSignature => Some(KeyUsagePurpose::DigitalSignature),
            KeyUsage::ContentCommitment => Some(KeyUsagePurpose::ContentCommitment),
            KeyUsage::KeyEncipherment => Some(KeyUsagePurpose::KeyEncipherment),
            KeyUsage::KeyAgreement => Some(KeyUsagePurpose::KeyAgreement),
            KeyUsage::DataEncipherment => Some(KeyUsagePurpose::DataEncipherment),
            KeyUsage::CertSign => Some(KeyUsagePurpose::KeyCertSign),
            KeyUsage::CrlSign => Some(KeyUsagePurpose::CrlSign),
            KeyUsage::EncipherOnly => Some(KeyUsagePurpose::EncipherOnly),
            KeyUsage::DecipherOnly => Some(KeyUsagePurpose::DecipherOnly),
            _ => None,
        })
        .collect();
    params.extended_key_usages = plan
        .extended_key_usages
        .iter()
        .filter_map(|u| match u {
            KeyUsage::Any => Some(ExtendedKeyUsagePurpose::Any),
            KeyUsage::ServerAuth => Some(ExtendedKeyUsagePurpose::ServerAuth),
            KeyUsage::ClientAuth => Some(ExtendedKeyUsagePurpose::ClientAuth),
            KeyUsage::CodeSigning => Some(ExtendedKeyUsagePurpose::CodeSigning),
            KeyUsage::EmailProtection => Some(ExtendedKeyUsagePurpose::EmailProtection),
            KeyUsage::Timestamping => Some(ExtendedKeyUsagePurpose::TimeStamping),
            KeyUsage::OcspSigning => Some(ExtendedKeyUsagePurpose::OcspSigning),
            _ => None,
        })
        .collect();
    params.use_authority_key_identifier_extension = true;
    // A random 128-bit serial, as the signer draws one below 2^128.
    let mut serial = super::ids::random_bytes::<16>().map_err(|e| e.to_string())?;
    if let Some(first) = serial.first_mut() {
        *first &= 0x7f;
    }
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    super::ca::set_validity(&mut params, plan.not_before, plan.not_after)
        .map_err(|e| e.to_string())?;
    let key = PlanKey {
        bits: &plan.public_key_bits,
        alg,
    };
    shared
        .ca
        .sign(params, &key)
        .map(|c| c.pem())
        .map_err(|e| e.to_string())
}

/// The request's subject alternative names, in the order Go's x509 writes them: DNS names,
/// email addresses, IP addresses, URIs.
fn subject_alt_names(plan: &SigningPlan) -> Result<Vec<SanType>, String> {
    let ia5 = |s: &str| Ia5String::try_from(s).map_err(|e| e.to_string());
    let mut names = Vec::new();
    for d in &plan.dns_names {
        names.push(SanType::DnsName(ia5(d)?));
    }
    for e in &plan.email_addresses {
        names.push(SanType::Rfc822Name(ia5(e)?));
    }
    names.extend(plan.ip_addresses.iter().map(|ip| SanType::IpAddress(*ip)));
    for u in &plan.uris {
        names.push(SanType::URI(ia5(u)?));
    }
    Ok(names)
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
