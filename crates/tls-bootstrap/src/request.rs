//! The PKCS#10 certificate request.

use std::net::IpAddr;

use der::asn1::{BitString, ObjectIdentifier, PrintableStringRef};
use der::{Decode as _, Encode as _};
use spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use x509_cert::attr::AttributeTypeAndValue;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::name::{Name, RdnSequence, RelativeDistinguishedName};
use x509_cert::request::{CertReq, CertReqInfo, ExtensionReq, Version};

use crate::error::Error;
use crate::key::NodeKey;
use crate::name::{NonString, Subject};
use crate::node_name::{NODES_GROUP, NodeName};
use crate::pem;

/// The largest certificate request accepted, PEM or DER, in bytes. A node's request is about
/// 400 bytes of PEM.
pub const MAX_REQUEST_BYTES: usize = 32 * 1024;

/// The most subject alternative names a request may carry before it is refused unparsed.
pub const MAX_REQUEST_NAMES: usize = 256;

pub(crate) const OID_CN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
pub(crate) const OID_O: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.10");
const OID_EXTENSION_REQUEST: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.14");
pub(crate) const OID_SAN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
const OID_ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const OID_ECDSA_WITH_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const OID_SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const OID_P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");

/// The type of a request's public key, as far as Kubernetes' rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyType {
    /// ECDSA on P-256.
    EcdsaP256,
    /// ECDSA on P-384.
    EcdsaP384,
    /// ECDSA on P-521.
    EcdsaP521,
    /// RSA, any size.
    Rsa,
    /// Ed25519.
    Ed25519,
    /// Anything else (its signature cannot be checked here).
    Other,
}

/// A PKCS#10 certificate request whose self-signature has been checked, with the fields
/// Kubernetes' rules read (Go's `x509.CertificateRequest` view: the last common name, every
/// organization in order, the four kinds of subject alternative name).
#[derive(Clone, PartialEq, Eq)]
pub struct CertificateRequest {
    der: Vec<u8>,
    common_name: Option<String>,
    organizations: Vec<String>,
    dns_names: Vec<String>,
    email_addresses: Vec<String>,
    ip_addresses: Vec<IpAddr>,
    uris: Vec<String>,
    spki_der: Vec<u8>,
    public_key_bits: Vec<u8>,
    key_type: KeyType,
}

impl CertificateRequest {
    /// The request a kubelet files for `node`: subject `O=system:nodes, CN=system:node:<node>`
    /// (organization first, as Go encodes a `pkix.Name`), no subject alternative names, no
    /// attributes, signed by `key` with the algorithm Go's `x509.CreateCertificateRequest`
    /// picks for it: ECDSA with SHA-256 (P-256), ECDSA with SHA-384 (P-384), RSA PKCS#1 v1.5
    /// with SHA-256 (RSA).
    ///
    /// ```
    /// # fn main() -> Result<(), tls_bootstrap::Error> {
    /// use tls_bootstrap::{CertificateRequest, NodeKey};
    /// let key = NodeKey::generate()?;
    /// let csr = CertificateRequest::for_node(&"worker-1".parse()?, &key)?;
    /// assert_eq!(csr.common_name(), Some("system:node:worker-1"));
    /// assert_eq!(csr.organizations(), ["system:nodes"]);
    /// assert!(csr.to_pem().starts_with("-----BEGIN CERTIFICATE REQUEST-----\n"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] if the key cannot be encoded or signing fails (it does not for a
    /// valid key), [`Error::Rng`] if the provider's randomness fails.
    pub fn for_node(node: &NodeName, key: &NodeKey) -> Result<CertificateRequest, Error> {
        CertificateRequest::for_node_with_names(node, key, Vec::new(), Vec::new())
    }

    /// [`CertificateRequest::for_node`] with DNS and IP subject alternative names (in that
    /// order, as Go encodes them), each already checked: ASCII DNS names.
    pub(crate) fn for_node_with_names(
        node: &NodeName,
        key: &NodeKey,
        dns_names: Vec<String>,
        ip_addresses: Vec<IpAddr>,
    ) -> Result<CertificateRequest, Error> {
        let build = || -> Result<Result<Vec<u8>, Error>, der::Error> {
            let mut attributes = x509_cert::attr::Attributes::new();
            if !dns_names.is_empty() || !ip_addresses.is_empty() {
                let mut names = Vec::new();
                for d in &dns_names {
                    names.push(GeneralName::DnsName(der::asn1::Ia5String::new(d)?));
                }
                for ip in &ip_addresses {
                    let octets = match ip {
                        IpAddr::V4(a) => a.octets().to_vec(),
                        IpAddr::V6(a) => a.octets().to_vec(),
                    };
                    names.push(GeneralName::IpAddress(der::asn1::OctetString::new(octets)?));
                }
                let extension = x509_cert::ext::Extension {
                    extn_id: OID_SAN,
                    critical: false,
                    extn_value: der::asn1::OctetString::new(SubjectAltName(names).to_der()?)?,
                };
                attributes.insert(x509_cert::attr::Attribute::try_from(ExtensionReq(vec![
                    extension,
                ]))?)?;
            }
            let subject: Name = RdnSequence(vec![
                rdn(OID_O, NODES_GROUP)?,
                rdn(OID_CN, &node.user_name())?,
            ]);
            let info = CertReqInfo {
                version: Version::V1,
                subject,
                public_key: SubjectPublicKeyInfoOwned::from_der(key.public_key_der())?,
                attributes,
            };
            let tbs = info.to_der()?;
            let signature = match key.sign(&tbs) {
                Ok(s) => s,
                Err(e) => return Ok(Err(e)),
            };
            let algorithm = match key.key_type() {
                KeyType::EcdsaP384 => AlgorithmIdentifierOwned {
                    oid: OID_ECDSA_WITH_SHA384,
                    parameters: None,
                },
                // As Go encodes it: with NULL parameters.
                KeyType::Rsa => AlgorithmIdentifierOwned {
                    oid: OID_SHA256_WITH_RSA,
                    parameters: Some(der::Any::null()),
                },
                _ => AlgorithmIdentifierOwned {
                    oid: OID_ECDSA_WITH_SHA256,
                    parameters: None,
                },
            };
            CertReq {
                info,
                algorithm,
                signature: BitString::from_bytes(&signature)?,
            }
            .to_der()
            .map(Ok)
        };
        let der = build().map_err(|_| Error::InvalidKey {
            reason: "couldn't encode the certificate request",
        })??;
        // Just built from known parts and signed with our own key: nothing to parse or verify
        // (so no verification backend is needed to file a request).
        Ok(CertificateRequest {
            der,
            common_name: Some(node.user_name()),
            organizations: vec![NODES_GROUP.to_owned()],
            dns_names,
            email_addresses: Vec::new(),
            ip_addresses,
            uris: Vec::new(),
            spki_der: key.public_key_der().to_vec(),
            public_key_bits: key.public_bits().to_vec(),
            key_type: key.key_type(),
        })
    }

    /// Parses one `CERTIFICATE REQUEST` PEM block (nothing else around it) and checks its
    /// self-signature, as kube-apiserver does on create.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`], [`Error::Pem`], [`Error::NotCertificateRequestPem`] for a block of
    /// another type, and those of [`CertificateRequest::from_der`].
    pub fn from_pem(pem_bytes: &[u8]) -> Result<CertificateRequest, Error> {
        check_size(pem_bytes.len())?;
        let blocks = pem::blocks(pem_bytes, "certificate request PEM", 1)?;
        let Some(block) = blocks.first() else {
            return Err(Error::Pem {
                what: "certificate request PEM",
                reason: "no PEM block",
            });
        };
        if block.label != "CERTIFICATE REQUEST" {
            return Err(Error::NotCertificateRequestPem);
        }
        CertificateRequest::from_der(&block.der)
    }

    /// Parses a DER request and checks its self-signature.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::InvalidRequest`] for malformed DER, subject values that
    /// are not strings, or too many names; [`Error::UnsupportedAlgorithm`] and
    /// [`Error::BadSignature`] from the signature check.
    pub fn from_der(der: &[u8]) -> Result<CertificateRequest, Error> {
        check_size(der.len())?;
        let invalid = |reason| Error::InvalidRequest { reason };
        let req = CertReq::from_der(der).map_err(|_| invalid("not a DER PKCS#10 request"))?;
        let tbs = req
            .info
            .to_der()
            .map_err(|_| invalid("couldn't re-encode the request info"))?;
        let signature = req
            .signature
            .as_bytes()
            .ok_or(invalid("signature has unused bits"))?;
        crate::backend::verify(&req.info.public_key, &req.algorithm, &tbs, signature)?;

        // Go reads a request's subject with `encoding/asn1`: values that are not strings are
        // skipped, strings invalid for their type refuse the request.
        let (common_name, organizations) = subject_fields(&req.info.subject, NonString::Skip)?;
        let mut names = Names::default();
        for attr in req.info.attributes.iter() {
            if attr.oid != OID_EXTENSION_REQUEST {
                continue;
            }
            for value in attr.values.iter() {
                let ext_req: ExtensionReq = value
                    .decode_as()
                    .map_err(|_| invalid("malformed extension request"))?;
                for ext in ext_req.0.iter().filter(|e| e.extn_id == OID_SAN) {
                    names.add(ext.extn_value.as_bytes())?;
                }
            }
        }
        let spki_der = req
            .info
            .public_key
            .to_der()
            .map_err(|_| invalid("couldn't encode the public key"))?;
        Ok(CertificateRequest {
            der: der.to_vec(),
            common_name,
            organizations,
            dns_names: names.dns,
            email_addresses: names.email,
            ip_addresses: names.ip,
            uris: names.uri,
            spki_der,
            public_key_bits: req
                .info
                .public_key
                .subject_public_key
                .as_bytes()
                .ok_or(invalid("public key has unused bits"))?
                .to_vec(),
            key_type: key_type(&req.info.public_key),
        })
    }

    /// The DER encoding.
    pub fn as_der(&self) -> &[u8] {
        &self.der
    }

    /// The request as one `CERTIFICATE REQUEST` PEM block (what `spec.request` holds).
    pub fn to_pem(&self) -> String {
        pem::encode("CERTIFICATE REQUEST", &self.der)
    }

    /// The subject's common name (the last one, if several, as Go reads it).
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// The subject's organizations, in order.
    pub fn organizations(&self) -> &[String] {
        &self.organizations
    }

    /// DNS subject alternative names.
    pub fn dns_names(&self) -> &[String] {
        &self.dns_names
    }

    /// Email subject alternative names.
    pub fn email_addresses(&self) -> &[String] {
        &self.email_addresses
    }

    /// IP address subject alternative names.
    pub fn ip_addresses(&self) -> &[IpAddr] {
        &self.ip_addresses
    }

    /// URI subject alternative names.
    pub fn uris(&self) -> &[String] {
        &self.uris
    }

    /// The requested public key as DER `SubjectPublicKeyInfo`.
    pub fn public_key_der(&self) -> &[u8] {
        &self.spki_der
    }

    /// The requested public key's bits (the `subjectPublicKey` BIT STRING's contents: an
    /// uncompressed EC point, a PKCS#1 RSA key, or 32 Ed25519 bytes).
    pub fn public_key_bits(&self) -> &[u8] {
        &self.public_key_bits
    }

    /// The type of the requested public key.
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }
}

impl std::fmt::Debug for CertificateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateRequest")
            .field("common_name", &self.common_name)
            .field("organizations", &self.organizations)
            .field("dns_names", &self.dns_names)
            .field("email_addresses", &self.email_addresses)
            .field("ip_addresses", &self.ip_addresses)
            .field("uris", &self.uris)
            .field("key_type", &self.key_type)
            .finish_non_exhaustive()
    }
}

pub(crate) fn check_size(len: usize) -> Result<(), Error> {
    if len > MAX_REQUEST_BYTES {
        return Err(Error::TooLarge {
            what: "certificate request",
            len,
            max: MAX_REQUEST_BYTES,
        });
    }
    Ok(())
}

fn rdn(oid: ObjectIdentifier, value: &str) -> Result<RelativeDistinguishedName, der::Error> {
    let value = der::Any::encode_from(&PrintableStringRef::new(value)?)?;
    let atv = AttributeTypeAndValue { oid, value };
    Ok(RelativeDistinguishedName(der::asn1::SetOfVec::try_from(
        vec![atv],
    )?))
}

/// The last common name and every organization of a name, in order (Go's
/// `pkix.Name.FillFromRDNSequence`), as [`Subject`](crate::Subject) reads it.
pub(crate) fn subject_fields(
    name: &Name,
    non_string: NonString,
) -> Result<(Option<String>, Vec<String>), Error> {
    Subject::of_name(name, non_string)
        .map(Subject::into_fields)
        .map_err(|reason| Error::InvalidRequest { reason })
}

#[derive(Default)]
struct Names {
    dns: Vec<String>,
    email: Vec<String>,
    ip: Vec<IpAddr>,
    uri: Vec<String>,
}

impl Names {
    fn add(&mut self, san_der: &[u8]) -> Result<(), Error> {
        let invalid = |reason| Error::InvalidRequest { reason };
        let san = SubjectAltName::from_der(san_der)
            .map_err(|_| invalid("malformed subject alternative names"))?;
        for name in san.0 {
            let total = self
                .dns
                .len()
                .saturating_add(self.email.len())
                .saturating_add(self.ip.len())
                .saturating_add(self.uri.len());
            if total >= MAX_REQUEST_NAMES {
                return Err(invalid("too many subject alternative names"));
            }
            match name {
                GeneralName::DnsName(s) => self.dns.push(s.to_string()),
                GeneralName::Rfc822Name(s) => self.email.push(s.to_string()),
                GeneralName::UniformResourceIdentifier(s) => self.uri.push(s.to_string()),
                GeneralName::IpAddress(o) => {
                    let ip = match o.as_bytes() {
                        b if b.len() == 4 => <[u8; 4]>::try_from(b).map(IpAddr::from).ok(),
                        b if b.len() == 16 => <[u8; 16]>::try_from(b).map(IpAddr::from).ok(),
                        _ => None,
                    };
                    self.ip
                        .push(ip.ok_or(invalid("malformed IP address name"))?);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

pub(crate) fn key_type(spki: &SubjectPublicKeyInfoOwned) -> KeyType {
    let oid = spki.algorithm.oid;
    if oid == OID_RSA {
        KeyType::Rsa
    } else if oid == OID_ED25519 {
        KeyType::Ed25519
    } else if oid == OID_EC_PUBLIC_KEY {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        match curve {
            Some(c) if c == OID_P256 => KeyType::EcdsaP256,
            Some(c) if c == OID_P384 => KeyType::EcdsaP384,
            Some(c) if c == OID_P521 => KeyType::EcdsaP521,
            _ => KeyType::Other,
        }
    } else {
        KeyType::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_filed_with_or_without_a_provider() {
        use p256::pkcs8::DecodePublicKey as _;
        use signature::Verifier as _;
        let key = NodeKey::generate().unwrap();
        let req = CertificateRequest::for_node(&"n".parse().unwrap(), &key).unwrap();
        let back = CertificateRequest::from_der(req.as_der());
        if crate::backend::algorithms().is_empty() {
            assert_eq!(back, Err(Error::NoCryptoBackend));
        } else {
            assert_eq!(back.unwrap(), req);
        }
        // Whichever signer made it, RustCrypto's verifier accepts the signature.
        let parsed = CertReq::from_der(req.as_der()).unwrap();
        let tbs = parsed.info.to_der().unwrap();
        let sig =
            p256::ecdsa::DerSignature::from_bytes(parsed.signature.as_bytes().unwrap()).unwrap();
        let vk = p256::ecdsa::VerifyingKey::from_public_key_der(key.public_key_der()).unwrap();
        vk.verify(&tbs, &sig).unwrap();
        assert_eq!(parsed.algorithm.oid, OID_ECDSA_WITH_SHA256);
        assert!(parsed.info.attributes.is_empty());
    }
}
