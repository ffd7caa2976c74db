//! The decision of a kubelet serving certificate approver: does the node own every name and
//! address it asks a serving certificate for?

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use regex::Regex;

use crate::ip_prefix::IpPrefix;
use crate::node_name::NODE_USER_PREFIX;
use crate::object::CertificateSigningRequest;
use crate::request::{CertificateRequest, MAX_REQUEST_NAMES};
use crate::serving::{KUBELET_SERVING_SIGNER, validate_kubelet_serving};

/// The longest part of a name or address quoted in a denial reason, in characters.
const MAX_QUOTED_CHARS: usize = 64;

/// Whether DNS names must resolve to one of the node's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DnsCheck {
    /// Every DNS name must have answers, and one of them must be among the node's addresses.
    Resolve,
    /// A DNS name with answers must have one among the node's addresses; a name without
    /// answers is allowed.
    AllowUnresolved,
    /// Answers are not consulted (the provider regex still applies).
    DangerousSkip,
}

/// The approver's configuration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServingPolicy {
    /// Every DNS name must match this expression (write it anchored, `^...$`).
    pub provider_regex: Regex,
    /// The longest `spec.expirationSeconds` approved (a request without one is approved).
    pub max_expiration_seconds: i32,
    /// Every IP address must lie in one of these prefixes (none: no IP address is approved).
    pub allowed_prefixes: Vec<IpPrefix>,
    /// How DNS answers are used.
    pub dns_check: DnsCheck,
    /// The most subject alternative names (DNS and IP together) approved.
    pub max_sans: usize,
}

impl ServingPolicy {
    /// A policy with DNS names matching `provider_regex`, the given IP prefixes, expiration up
    /// to one year (367 days, as kubelet-csr-approver's default), [`DnsCheck::Resolve`] and at
    /// most 20 names.
    pub fn new(provider_regex: Regex, allowed_prefixes: Vec<IpPrefix>) -> ServingPolicy {
        ServingPolicy {
            provider_regex,
            max_expiration_seconds: 367 * 24 * 3600,
            allowed_prefixes,
            dns_check: DnsCheck::Resolve,
            max_sans: 20,
        }
    }
}

/// What the approver decides for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServingDecision {
    /// Every check passed.
    Approve,
    /// A check failed; `reason` names the field or name that failed it.
    Deny {
        /// Why, for the `Denied` condition's message.
        reason: String,
    },
    /// Not this approver's request: another signer, or a requester that is not a node.
    NoOpinion,
}

/// Decides a kubelet serving request.
///
/// `request` is `csr.spec.request` parsed. `node_addresses` are the Node object's
/// `status.addresses` as `(type, address)` pairs (`("InternalIP", "10.0.0.5")`,
/// `("Hostname", "worker-1")`, ...); the ones that parse as IP addresses are the node's
/// addresses, whatever their type. `dns_answers` maps each DNS name the caller resolved to its
/// addresses (the core resolves nothing).
///
/// [`ServingDecision::NoOpinion`] unless the signer is [`KUBELET_SERVING_SIGNER`] and the
/// requester (`spec.username`) starts with `system:node:`. Then, in order, deny when:
/// the requester is not the request's common name; the request fails
/// [`validate_kubelet_serving`] (no DNS or IP name, email or URI names, other usages,
/// organization or common name); the node name is empty; `expirationSeconds` exceeds the
/// maximum; there are more names than the maximum; a DNS name is empty, repeated, does not
/// match the provider regex, or (per [`DnsCheck`]) does not resolve to a node address; an IP
/// address is repeated, outside the allowed prefixes, or not among the node's addresses.
pub fn decide_serving(
    csr: &CertificateSigningRequest,
    request: &CertificateRequest,
    node_addresses: &[(&str, &str)],
    dns_answers: &BTreeMap<String, Vec<IpAddr>>,
    policy: &ServingPolicy,
) -> ServingDecision {
    if csr.spec.signer_name != KUBELET_SERVING_SIGNER {
        return ServingDecision::NoOpinion;
    }
    let requester = csr.spec.username.as_deref().unwrap_or_default();
    if !requester.starts_with(NODE_USER_PREFIX) {
        return ServingDecision::NoOpinion;
    }
    match check(csr, request, requester, node_addresses, dns_answers, policy) {
        Ok(()) => ServingDecision::Approve,
        Err(reason) => ServingDecision::Deny { reason },
    }
}

fn check(
    csr: &CertificateSigningRequest,
    request: &CertificateRequest,
    requester: &str,
    node_addresses: &[(&str, &str)],
    dns_answers: &BTreeMap<String, Vec<IpAddr>>,
    policy: &ServingPolicy,
) -> Result<(), String> {
    let cn = request.common_name().unwrap_or_default();
    if requester != cn {
        return Err(format!(
            "requester {} is not the subject common name {}",
            quote(requester),
            quote(cn)
        ));
    }
    validate_kubelet_serving(request, &csr.spec.usages).map_err(|r| r.as_str().to_owned())?;
    if cn.strip_prefix(NODE_USER_PREFIX).is_none_or(str::is_empty) {
        return Err("subject common name has an empty node name".to_owned());
    }
    if let Some(seconds) = csr.spec.expiration_seconds
        && seconds > policy.max_expiration_seconds
    {
        return Err(format!(
            "expirationSeconds {seconds} exceeds the maximum {}",
            policy.max_expiration_seconds
        ));
    }
    let count = request
        .dns_names()
        .len()
        .saturating_add(request.ip_addresses().len());
    if count > policy.max_sans.min(MAX_REQUEST_NAMES) {
        return Err(format!(
            "{count} subjectAltNames exceed the maximum {}",
            policy.max_sans.min(MAX_REQUEST_NAMES)
        ));
    }
    let node_ips: BTreeSet<IpAddr> = node_addresses
        .iter()
        .filter_map(|(_, a)| a.parse::<IpAddr>().ok())
        .collect();
    let mut seen = BTreeSet::new();
    for name in request.dns_names() {
        if name.is_empty() {
            return Err("DNS subjectAltName is empty".to_owned());
        }
        if !seen.insert(name.as_str()) {
            return Err(format!("DNS subjectAltName {} is repeated", quote(name)));
        }
        if !policy.provider_regex.is_match(name) {
            return Err(format!(
                "DNS subjectAltName {} does not match the provider regex",
                quote(name)
            ));
        }
        let answers = dns_answers.get(name).map_or(&[][..], Vec::as_slice);
        let owned = answers.iter().any(|ip| node_ips.contains(ip));
        let refused = match policy.dns_check {
            DnsCheck::Resolve => !owned,
            DnsCheck::AllowUnresolved => !answers.is_empty() && !owned,
            DnsCheck::DangerousSkip => false,
        };
        if refused {
            return Err(format!(
                "DNS subjectAltName {} does not resolve to an address of the node",
                quote(name)
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for ip in request.ip_addresses() {
        if !seen.insert(*ip) {
            return Err(format!("IP subjectAltName {ip} is repeated"));
        }
        if !policy.allowed_prefixes.iter().any(|p| p.contains(*ip)) {
            return Err(format!(
                "IP subjectAltName {ip} is outside the allowed prefixes"
            ));
        }
        if !node_ips.contains(ip) {
            return Err(format!(
                "IP subjectAltName {ip} is not an address of the node"
            ));
        }
    }
    Ok(())
}

/// `s` quoted and escaped, cut to [`MAX_QUOTED_CHARS`] characters.
fn quote(s: &str) -> String {
    let cut: String = s.chars().take(MAX_QUOTED_CHARS).collect();
    if cut.len() < s.len() {
        format!("{:?}...", cut)
    } else {
        format!("{cut:?}")
    }
}
