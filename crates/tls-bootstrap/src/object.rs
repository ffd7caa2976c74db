//! The `certificates.k8s.io/v1` `CertificateSigningRequest` object.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::error::Error;
use crate::request::{CertificateRequest, KeyType};
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

/// The usages a kubelet requests for an RSA client key, in its order: `digital signature`,
/// `client auth`, `key encipherment`.
pub const KUBELET_CLIENT_USAGES_RSA: [KeyUsage; 3] = [
    KeyUsage::DigitalSignature,
    KeyUsage::ClientAuth,
    KeyUsage::KeyEncipherment,
];

/// The usages a kubelet requests for a client key of type `key_type`:
/// [`KUBELET_CLIENT_USAGES_RSA`] for RSA, [`KUBELET_CLIENT_USAGES`] otherwise.
pub fn kubelet_client_usages(key_type: KeyType) -> &'static [KeyUsage] {
    match key_type {
        KeyType::Rsa => &KUBELET_CLIENT_USAGES_RSA,
        _ => &KUBELET_CLIENT_USAGES,
    }
}

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
///
/// Kubernetes reads `Approved`, `Denied` and `Failed` mostly by type: see
/// [`CertificateSigningRequest::state`], [`CertificateSigningRequest::is_approved`] and
/// [`CertificateSigningRequest::has_true_condition`] for which status each reader honours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Condition {
    /// `Approved`, `Denied`, `Failed`, or another type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown` (the v1 API requires `True` for `Approved`, `Denied` and
    /// `Failed`; v1beta1 defaulted an empty status to `True`; objects from elsewhere may carry
    /// any).
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

    /// The same condition with status `status` (any string, the empty one included).
    ///
    /// ```
    /// let c = tls_bootstrap::Condition::new("Approved", "ByHand", "ok").with_status("");
    /// assert_eq!(c.status, "");
    /// ```
    #[must_use]
    pub fn with_status(mut self, status: &str) -> Condition {
        status.clone_into(&mut self.status);
        self
    }
}

/// Builds a [`CertificateSigningRequest`] field by field (the type is `#[non_exhaustive]`),
/// as any client or controller may have written it; from
/// [`CertificateSigningRequest::builder`].
///
/// ```
/// use tls_bootstrap::{CertificateSigningRequest, Condition, KeyUsage, State};
///
/// let csr = CertificateSigningRequest::builder(
///     "-----BEGIN CERTIFICATE REQUEST-----\n...",
///     "kubernetes.io/kube-apiserver-client-kubelet",
/// )
/// .name("node-csr-abc")
/// .usages(&[KeyUsage::DigitalSignature, KeyUsage::ClientAuth])
/// .username("system:bootstrap:abcdef")
/// .groups(["system:bootstrappers"])
/// .condition(Condition::new("Denied", "ByHand", "no").with_status(""))
/// .build();
/// assert!(matches!(csr.state(), State::Denied { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct CertificateSigningRequestBuilder {
    csr: CertificateSigningRequest,
}

impl CertificateSigningRequestBuilder {
    /// `metadata.name`.
    pub fn name(mut self, name: &str) -> Self {
        self.csr.metadata.name = Some(name.to_owned());
        self
    }

    /// `metadata.uid`.
    pub fn object_uid(mut self, uid: &str) -> Self {
        self.csr.metadata.uid = Some(uid.to_owned());
        self
    }

    /// `spec.usages`.
    pub fn usages(mut self, usages: &[KeyUsage]) -> Self {
        self.csr.spec.usages = usages.to_vec();
        self
    }

    /// `spec.expirationSeconds` (not checked: objects from elsewhere may carry any value).
    pub fn expiration_seconds(mut self, seconds: i32) -> Self {
        self.csr.spec.expiration_seconds = Some(seconds);
        self
    }

    /// `spec.username`, the requester.
    pub fn username(mut self, user: &str) -> Self {
        self.csr.spec.username = Some(user.to_owned());
        self
    }

    /// `spec.uid`, the requester's UID.
    pub fn uid(mut self, uid: &str) -> Self {
        self.csr.spec.uid = Some(uid.to_owned());
        self
    }

    /// `spec.groups`, the requester's groups.
    pub fn groups<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.csr.spec.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// One `spec.extra` entry.
    pub fn extra<I, S>(mut self, key: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.csr
            .spec
            .extra
            .insert(key.to_owned(), values.into_iter().map(Into::into).collect());
        self
    }

    /// Appends a status condition.
    pub fn condition(mut self, condition: Condition) -> Self {
        self.csr.status.conditions.push(condition);
        self
    }

    /// `status.certificate` (PEM).
    pub fn certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.csr.status.certificate = Some(pem.into());
        self
    }

    /// The object.
    pub fn build(self) -> CertificateSigningRequest {
        self.csr
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
    /// [`KUBELET_CLIENT_SIGNER`], usages [`kubelet_client_usages`] for the request's key type
    /// ([`KUBELET_CLIENT_USAGES`], or [`KUBELET_CLIENT_USAGES_RSA`] for an RSA key, so the
    /// name changes with them as the kubelet's does), and `expirationSeconds` when
    /// `expiration` is given (rounded down to whole seconds; at least 600 s).
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
        let usages = kubelet_client_usages(request.key_type()).to_vec();
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

    /// A builder for an object with `spec.request` `request_pem` for signer `signer_name`,
    /// and nothing else set.
    pub fn builder(
        request_pem: impl Into<Vec<u8>>,
        signer_name: &str,
    ) -> CertificateSigningRequestBuilder {
        CertificateSigningRequestBuilder {
            csr: CertificateSigningRequest {
                api_version: API_VERSION.to_owned(),
                kind: KIND.to_owned(),
                metadata: ObjectMeta::default(),
                spec: Spec {
                    request: request_pem.into(),
                    signer_name: signer_name.to_owned(),
                    ..Spec::default()
                },
                status: Status::default(),
            },
        }
    }

    /// Parses and checks `spec.request` as Kubernetes' `ParseCSR` reads it: the first PEM
    /// block (text around it is skipped) must be a `CERTIFICATE REQUEST`; its self-signature
    /// is checked as kube-apiserver does on create.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::NotCertificateRequestPem`] (Kubernetes' message) when no
    /// PEM block is found or the first is of another type; those of
    /// [`CertificateRequest::from_der`].
    pub fn certificate_request(&self) -> Result<CertificateRequest, Error> {
        crate::request::check_size(self.spec.request.len())?;
        let block = crate::pem::go_blocks(&self.spec.request, 1)
            .into_iter()
            .next();
        match block {
            Some(b) if b.label == "CERTIFICATE REQUEST" => CertificateRequest::from_der(&b.der),
            _ => Err(Error::NotCertificateRequestPem),
        }
    }

    /// The first condition of type `type_`, if present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Whether the request is approved as Kubernetes' controllers read it
    /// (`IsCertificateRequestApproved` in `pkg/controller/certificates`): a condition of type
    /// `Approved` and none of type `Denied`, whatever their status.
    pub fn is_approved(&self) -> bool {
        self.condition("Approved").is_some() && self.condition("Denied").is_none()
    }

    /// Whether a condition of type `type_` has status `True` or an empty status
    /// (`HasTrueCondition` in `pkg/controller/certificates`; the signer skips requests with
    /// such a `Failed` condition).
    pub fn has_true_condition(&self, type_: &str) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && (c.status.is_empty() || c.status == "True"))
    }

    /// Where the request stands, as client-go's `WaitForCertificate` (the kubelet's wait)
    /// reads it: the conditions in order, the first of type `Denied` or `Failed` ends the wait
    /// whatever its status; a condition of type `Approved`, whatever its status, with a
    /// non-empty certificate is `Issued`.
    pub fn state(&self) -> State<'_> {
        let mut approved = false;
        for c in &self.status.conditions {
            match c.type_.as_str() {
                "Denied" => {
                    return State::Denied {
                        reason: c.reason.as_deref(),
                        message: c.message.as_deref(),
                    };
                }
                "Failed" => {
                    return State::Failed {
                        reason: c.reason.as_deref(),
                        message: c.message.as_deref(),
                    };
                }
                "Approved" => approved = true,
                _ => {}
            }
        }
        if approved {
            return match self.status.certificate.as_deref() {
                Some(cert) if !cert.is_empty() => State::Issued(cert),
                _ => State::Approved,
            };
        }
        State::Pending
    }

    /// Whether an existing object with our name may be reused for `ours`, as client-go's
    /// `ensureCompatible` decides: the same subject (common name and organizations); the same
    /// signer unless either is empty (objects written before signer names have none);
    /// `spec.request` signed by the same key; and, if it already holds a certificate, none of
    /// its certificates expired at `now`. Usages are not compared, as there.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] naming what differs; [`Error::Expired`] when an issued
    /// certificate has expired; the existing request's parse error, or
    /// [`Error::TooLarge`], [`Error::Pem`] and [`Error::InvalidCertificate`] for its
    /// certificate.
    pub fn ensure_compatible(
        &self,
        ours: &CertificateRequest,
        signer_name: &str,
        now: SystemTime,
    ) -> Result<(), Error> {
        let theirs = self.certificate_request()?;
        if theirs.common_name() != ours.common_name()
            || theirs.organizations() != ours.organizations()
        {
            return Err(Error::Incompatible { what: "subject" });
        }
        if !self.spec.signer_name.is_empty()
            && !signer_name.is_empty()
            && self.spec.signer_name != signer_name
        {
            return Err(Error::Incompatible { what: "signerName" });
        }
        if theirs.public_key_der() != ours.public_key_der() {
            return Err(Error::Incompatible { what: "public key" });
        }
        if let Some(pem) = self.status.certificate.as_deref().filter(|c| !c.is_empty()) {
            for der in crate::accept::issued_certificates(pem)? {
                let cert =
                    <x509_cert::Certificate as der::Decode>::from_der(&der).map_err(|_| {
                        Error::InvalidCertificate {
                            reason: "not a DER X.509 certificate",
                        }
                    })?;
                if now > cert.tbs_certificate.validity.not_after.to_system_time() {
                    return Err(Error::Expired);
                }
            }
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
