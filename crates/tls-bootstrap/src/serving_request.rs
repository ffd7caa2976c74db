//! The request a kubelet files for its serving certificate.

use std::net::IpAddr;

use crate::error::Error;
use crate::key::NodeKey;
use crate::node_name::NodeName;
use crate::request::{CertificateRequest, MAX_REQUEST_NAMES};

/// The longest DNS name accepted in a serving request, in bytes.
const MAX_DNS_NAME_LEN: usize = 253;

impl CertificateRequest {
    /// The request a kubelet files for its serving certificate: subject
    /// `O=system:nodes, CN=system:node:<node>`, DNS names `hostnames` then IP addresses `ips`
    /// as subject alternative names, each kept once in its first position (the kubelet lists
    /// its hostname, the hostname override and its addresses, which repeat). Signed as
    /// [`CertificateRequest::for_node`] signs.
    ///
    /// ```
    /// # fn main() -> Result<(), tls_bootstrap::Error> {
    /// use tls_bootstrap::{CertificateRequest, NodeKey};
    /// let key = NodeKey::generate()?;
    /// let ip = "10.0.0.5".parse().unwrap();
    /// let csr = CertificateRequest::for_node_serving(
    ///     &"worker-1".parse()?, &key, &["worker-1", "worker-1"], &[ip, ip])?;
    /// assert_eq!(csr.dns_names(), ["worker-1"]);
    /// assert_eq!(csr.ip_addresses(), [ip]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] if no name or address is given, a DNS name is empty, longer
    /// than 253 bytes or not ASCII, or more than [`MAX_REQUEST_NAMES`] distinct names and
    /// addresses remain; otherwise as [`CertificateRequest::for_node`].
    pub fn for_node_serving(
        node: &NodeName,
        key: &NodeKey,
        hostnames: &[&str],
        ips: &[IpAddr],
    ) -> Result<CertificateRequest, Error> {
        let mut dns_names: Vec<String> = Vec::new();
        for name in hostnames {
            if name.is_empty() || name.len() > MAX_DNS_NAME_LEN || !name.is_ascii() {
                return Err(Error::InvalidRequest {
                    reason: "a DNS name is empty, too long or not ASCII",
                });
            }
            if !dns_names.iter().any(|d| d == name) {
                dns_names.push((*name).to_owned());
            }
            if dns_names.len() > MAX_REQUEST_NAMES {
                return Err(too_many());
            }
        }
        let mut addresses: Vec<IpAddr> = Vec::new();
        for ip in ips {
            if !addresses.contains(ip) {
                addresses.push(*ip);
            }
            if addresses.len() > MAX_REQUEST_NAMES {
                return Err(too_many());
            }
        }
        if dns_names.len().saturating_add(addresses.len()) > MAX_REQUEST_NAMES {
            return Err(too_many());
        }
        if dns_names.is_empty() && addresses.is_empty() {
            return Err(Error::InvalidRequest {
                reason: "a serving request needs a DNS name or an IP address",
            });
        }
        CertificateRequest::for_node_with_names(node, key, dns_names, addresses)
    }
}

fn too_many() -> Error {
    Error::InvalidRequest {
        reason: "too many subject alternative names",
    }
}
