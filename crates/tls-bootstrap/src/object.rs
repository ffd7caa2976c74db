//! The `certificates.k8s.io/v1` `CertificateSigningRequest` object.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::error::Error;
use crate::request::CertificateRequest;
use crate::usage::KeyUsage;

/// `apiVersion` of the objects this module reads and writes.
pub const API_VERSION: &str = "certificates.k8s.io/v1";
/// `kind` of the objects this module reads and writes.
pub const KIND: &str = "CertificateSigningRequest";
/// The signer of kubelet client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The prefix of the names the kubelet gives its bootstrap requests.
pub const NODE_CSR_NAME_PREFIX: &str = "node-csr-";
/// The largest object [`CertificateSigningRequest::from_json`] reads, in bytes.
pub const MAX_OBJECT_BYTES: usize = 256 * 1024;
/// The most conditions an object may carry.
pub const MAX_CONDITIONS: usize = 32;
/// The shortest `expirationSeconds` Kubernetes accepts (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i32 = 600;

/// The usages a kubelet requests for an ECDSA or Ed25519 client key: `digital signature`,
/// `client auth` (since Kubernetes 1.27 `key encipherment` is added only for RSA keys).
pub const KUBELET_CLIENT_USAGES: [KeyUsage; 2] = [KeyUsage::DigitalSignature, KeyUsage::ClientAuth];

/// A `CertificateSigningRequest`, as the API server returns it and as clients create it.
///
/// Fields the rules read are typed; everything else in `metadata` is kept verbatim, so an
/// object read and written back loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CertificateSigningRequest {
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// Always [`KIND`].
    pub kind: String,
    /// The object's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What is requested.
    pub spec: Spec,
    /// What happened to it.
    #[serde(default, skip_serializing_if = "Status::is_empty")]
    pub status: Status,
}

/// The metadata fields the TLS bootstrap reads; the rest is kept in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ObjectMeta {
    /// The object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The server-assigned UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The server's resource version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Every other metadata field, verbatim (labels, annotations, timestamps, managed fields).
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Spec {
    /// The PEM `CERTIFICATE REQUEST` (base64 in JSON).
    #[serde(with = "b64")]
    pub request: Vec<u8>,
    /// Which signer is asked.
    pub signer_name: String,
    /// The requested lifetime, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i32>,
    /// The requested key usages.
    #[serde(default)]
    pub usages: Vec<KeyUsage>,
    /// The requester, set by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The requester's UID, set by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The requester's groups, set by the API server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The requester's extra attributes, set by the API server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Status {
    /// Approved, Denied, Failed and other conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The issued certificate (PEM, base64 in JSON), once the signer has signed.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "b64_opt")]
    pub certificate: Option<Vec<u8>>,
}

impl Status {
    fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.certificate.is_none()
    }
}

/// One status condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Condition {
    /// `Approved`, `Denied`, `Failed`, or another type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A machine-readable reason (`AutoApproved`, `SignerValidationFailure`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// RFC 3339 time of the last update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    /// RFC 3339 time of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl Condition {
    /// A condition of type `type_` with status `True`.
    pub fn new(type_: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.to_owned(),
            status: "True".to_owned(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_update_time: None,
            last_transition_time: None,
        }
    }
}

/// Where a request stands, read from its status.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum State<'a> {
    /// Neither approved nor denied nor failed.
    Pending,
    /// Approved, no certificate yet.
    Approved,
    /// Approved and issued: the PEM certificate(s).
    Issued(&'a [u8]),
    /// Denied, with its reason and message.
    Denied {
        /// The condition's reason.
        reason: Option<&'a str>,
        /// The condition's message.
        message: Option<&'a str>,
    },
    /// The signer failed it, with its reason and message.
    Failed {
        /// The condition's reason.
        reason: Option<&'a str>,
        /// The condition's message.
        message: Option<&'a str>,
    },
}

impl CertificateSigningRequest {
    /// The object a kubelet creates for its bootstrap request: named with
    /// [`node_csr_name`] (so a restarted node finds its earlier request), signer
    /// [`KUBELET_CLIENT_SIGNER`], usages [`KUBELET_CLIENT_USAGES`], and `expirationSeconds`
    /// when `expiration` is given (rounded down to whole seconds; at least 600 s).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidObject`] if `expiration` is under 600 s or over `i32::MAX` seconds, or
    /// the request has no common name.
    pub fn for_node(
        request: &CertificateRequest,
        expiration: Option<Duration>,
    ) -> Result<CertificateSigningRequest, Error> {
        let expiration_seconds = match expiration {
            None => None,
            Some(d) => {
                let secs = i32::try_from(d.as_secs()).map_err(|_| Error::InvalidObject {
                    field: "spec.expirationSeconds",
                    reason: "too large",
                })?;
                if secs < MIN_EXPIRATION_SECONDS {
                    return Err(Error::InvalidObject {
                        field: "spec.expirationSeconds",
                        reason: "may not specify a duration less than 600 seconds (10 minutes)",
                    });
                }
                Some(secs)
            }
        };
        let usages = KUBELET_CLIENT_USAGES.to_vec();
        let name = node_csr_name(request, &usages)?;
        Ok(CertificateSigningRequest {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: ObjectMeta {
                name: Some(name),
                ..ObjectMeta::default()
            },
            spec: Spec {
                request: request.to_pem().into_bytes(),
                signer_name: KUBELET_CLIENT_SIGNER.to_owned(),
                expiration_seconds,
                usages,
                ..Spec::default()
            },
            status: Status::default(),
        })
    }

    /// Parses the JSON the API server returns (at most [`MAX_OBJECT_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::Json`] for malformed JSON or wrong field types (the
    /// parser's message is dropped, it can echo values); [`Error::InvalidObject`] for another
    /// `apiVersion` or `kind`, or more than [`MAX_CONDITIONS`] conditions.
    pub fn from_json(json: &[u8]) -> Result<CertificateSigningRequest, Error> {
        if json.len() > MAX_OBJECT_BYTES {
            return Err(Error::TooLarge {
                what: "CertificateSigningRequest JSON",
                len: json.len(),
                max: MAX_OBJECT_BYTES,
            });
        }
        let csr: CertificateSigningRequest =
            serde_json::from_slice(json).map_err(|e| Error::Json {
                line: e.line(),
                column: e.column(),
            })?;
        csr.check()?;
        Ok(csr)
    }

    /// Parses the YAML `kubectl get csr -o yaml` prints (at most [`MAX_OBJECT_BYTES`]; one
    /// document; no duplicate keys; anchors, aliases, depth and node count bounded).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::Yaml`] for malformed YAML, a budget exceeded, or wrong
    /// field types (the parser's message is dropped, it can echo values); then as
    /// [`CertificateSigningRequest::from_json`].
    #[cfg(feature = "yaml")]
    pub fn from_yaml(yaml: &[u8]) -> Result<CertificateSigningRequest, Error> {
        if yaml.len() > MAX_OBJECT_BYTES {
            return Err(Error::TooLarge {
                what: "CertificateSigningRequest YAML",
                len: yaml.len(),
                max: MAX_OBJECT_BYTES,
            });
        }
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_reader_input_bytes: Some(MAX_OBJECT_BYTES),
                max_depth: 32,
                max_nodes: 20_000,
                max_events: 80_000,
                max_aliases: 16,
                max_anchors: 16,
                max_documents: 1,
                max_total_scalar_bytes: MAX_OBJECT_BYTES,
                max_merge_keys: 4,
            },
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            with_snippet: false,
        };
        let value: serde_json::Value = serde_saphyr::from_slice_with_options(yaml, options)
            .map_err(|e| {
                let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
                Error::Yaml { line, column }
            })?;
        let csr: CertificateSigningRequest =
            serde_json::from_value(value).map_err(|_| Error::Yaml { line: 0, column: 0 })?;
        csr.check()?;
        Ok(csr)
    }

    /// The JSON to send to the API server.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidObject`] if serialisation fails (it does not for these types).
    pub fn to_json(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(|_| Error::InvalidObject {
            field: "object",
            reason: "couldn't serialise",
        })
    }

    /// The object's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    /// Parses and checks `spec.request`.
    ///
    /// # Errors
    ///
    /// Those of [`CertificateRequest::from_pem`].
    pub fn certificate_request(&self) -> Result<CertificateRequest, Error> {
        CertificateRequest::from_pem(&self.spec.request)
    }

    /// The condition of type `type_`, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Where the request stands: `Denied` and `Failed` win over `Approved` (the kubelet checks
    /// them first); `Issued` needs `Approved` and a non-empty certificate.
    pub fn state(&self) -> State<'_> {
        let is_true = |c: &&Condition| c.status == "True";
        if let Some(c) = self.condition("Denied").filter(is_true) {
            return State::Denied {
                reason: c.reason.as_deref(),
                message: c.message.as_deref(),
            };
        }
        if let Some(c) = self.condition("Failed").filter(is_true) {
            return State::Failed {
                reason: c.reason.as_deref(),
                message: c.message.as_deref(),
            };
        }
        if self.condition("Approved").filter(is_true).is_some() {
            return match self.status.certificate.as_deref() {
                Some(cert) if !cert.is_empty() => State::Issued(cert),
                _ => State::Approved,
            };
        }
        State::Pending
    }

    /// Whether an existing object with our name is the request we would have filed: the same
    /// subject, the same signer, and a request signed by the same key (the kubelet's
    /// `ensureCompatible`; usages are not compared, as there).
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] naming what differs, or the existing request's parse error.
    pub fn ensure_compatible(&self, ours: &CertificateRequest) -> Result<(), Error> {
        let theirs = self.certificate_request()?;
        if theirs.common_name() != ours.common_name()
            || theirs.organizations() != ours.organizations()
        {
            return Err(Error::Incompatible { what: "subject" });
        }
        if self.spec.signer_name != KUBELET_CLIENT_SIGNER {
            return Err(Error::Incompatible { what: "signerName" });
        }
        if theirs.public_key_der() != ours.public_key_der() {
            return Err(Error::Incompatible { what: "public key" });
        }
        Ok(())
    }

    fn check(&self) -> Result<(), Error> {
        if self.api_version != API_VERSION {
            return Err(Error::InvalidObject {
                field: "apiVersion",
                reason: "must be certificates.k8s.io/v1",
            });
        }
        if self.kind != KIND {
            return Err(Error::InvalidObject {
                field: "kind",
                reason: "must be CertificateSigningRequest",
            });
        }
        if self.status.conditions.len() > MAX_CONDITIONS {
            return Err(Error::InvalidObject {
                field: "status.conditions",
                reason: "too many conditions",
            });
        }
        Ok(())
    }
}

/// The name the kubelet gives its bootstrap request, so that a node restarted with the same
/// key finds the request it filed before: `node-csr-` and the unpadded base64url SHA-512/256
/// of the base64url-encoded public key (DER `SubjectPublicKeyInfo`), common name, each
/// organization and each usage, each followed by `|`.
///
/// # Errors
///
/// [`Error::InvalidObject`] if the request has no common name.
pub fn node_csr_name(request: &CertificateRequest, usages: &[KeyUsage]) -> Result<String, Error> {
    let cn = request.common_name().ok_or(Error::InvalidObject {
        field: "spec.request",
        reason: "the request has no common name",
    })?;
    let encode = |data: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data);
    let mut hash = sha2::Sha512_256::new();
    let mut write = |data: &[u8]| {
        hash.update(encode(data).as_bytes());
        hash.update(b"|");
    };
    write(request.public_key_der());
    write(cn.as_bytes());
    for o in request.organizations() {
        write(o.as_bytes());
    }
    for u in usages {
        write(u.as_str().as_bytes());
    }
    Ok(format!(
        "{NODE_CSR_NAME_PREFIX}{}",
        encode(&hash.finalize())
    ))
}

mod b64 {
    use base64::Engine as _;
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(|_| serde::de::Error::custom("invalid base64"))
    }
}

mod b64_opt {
    use serde::{Deserializer, Serializer};

    #[allow(clippy::ref_option, reason = "serde's `with` passes &Option<T>")]
    pub(super) fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => super::b64::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        super::b64::deserialize(d).map(Some)
    }
}
