//! The crate's error type.

/// Everything that can go wrong in this crate.
///
/// Messages are lowercase and never contain keys or unbounded input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input was larger than the documented limit; rejected before parsing.
    #[error("{what} is {len} bytes, more than the limit of {max} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// Malformed PEM, or the wrong kind or number of blocks.
    #[error("invalid {what}: {reason}")]
    Pem {
        /// Which input.
        what: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Not a node name (a DNS-1123 subdomain).
    #[error("invalid node name: {reason}")]
    InvalidNodeName {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The private key is malformed or of an unsupported type.
    #[error("invalid private key: {reason}")]
    InvalidKey {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The operating system's (or the caller's) random number generator failed.
    #[error("the random number generator failed")]
    Rng,
    /// A usage string the `certificates.k8s.io` API does not know.
    #[error("unknown key usage")]
    UnknownUsage,
    /// An IP prefix that is not `<address>/<length>` with a length the address family allows.
    #[error("invalid ip prefix")]
    InvalidPrefix,
    /// `spec.request` does not start with a `CERTIFICATE REQUEST` PEM block (Kubernetes'
    /// `ParseCSR` message: no PEM block at all, or another kind first).
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotCertificateRequestPem,
    /// The PKCS#10 request is malformed.
    #[error("invalid certificate request: {reason}")]
    InvalidRequest {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A signature or key algorithm this crate cannot check.
    #[error("unsupported signature or key algorithm")]
    UnsupportedAlgorithm,
    /// A signature does not verify.
    #[error("signature does not verify")]
    BadSignature,
    /// Neither the `ring` nor the `aws-lc-rs` feature is enabled.
    #[error("no signature verification backend: enable the `ring` or `aws-lc-rs` feature")]
    NoCryptoBackend,
    /// The object's JSON is malformed or a field has the wrong type (the parser's message is
    /// dropped: it can echo values).
    #[error("couldn't parse the CertificateSigningRequest JSON at line {line}, column {column}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The object's YAML is malformed, exceeds the parser's budget, or a field has the wrong
    /// type (0 for an unknown position; the parser's message is dropped: it can echo values).
    #[error("couldn't parse the CertificateSigningRequest YAML at line {line}, column {column}")]
    Yaml {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
    },
    /// The object is well-formed JSON but not a valid `CertificateSigningRequest`.
    #[error("invalid CertificateSigningRequest field {field}: {reason}")]
    InvalidObject {
        /// The field path.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An existing request under our name is not the one we would have filed (client-go's
    /// `ensureCompatible`).
    #[error("retrieved csr is not compatible: different {what}")]
    Incompatible {
        /// What differs: `subject`, `signerName` or `public key`; or `certificate (expired)`
        /// when a certificate it was issued has expired.
        what: &'static str,
    },
    /// The issued certificate is malformed.
    #[error("invalid issued certificate: {reason}")]
    InvalidCertificate {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The issued certificate is for another key than the node's.
    #[error("the issued certificate is not for the node's key")]
    WrongKey,
    /// The issued certificate's subject is not `O=system:nodes, CN=system:node:<node>`.
    #[error("the issued certificate's subject is not this node's")]
    WrongSubject,
    /// The issued certificate does not allow digital signatures and client authentication.
    #[error("the issued certificate does not allow digital signature and client auth")]
    WrongUsages,
    /// The issued certificate is not valid yet.
    #[error("the issued certificate is not valid yet")]
    NotYetValid,
    /// The issued certificate has expired.
    #[error("the issued certificate has expired")]
    Expired,
    /// The issued certificate does not chain to the cluster CA.
    #[error("the issued certificate does not chain to the cluster CA")]
    Untrusted,
    /// A kubeconfig value cannot be written.
    #[error("couldn't write the kubeconfig: {reason}")]
    InvalidKubeconfig {
        /// What is wrong.
        reason: &'static str,
    },
}
