//! The crate's error type.

/// Everything that can go wrong in this crate.
///
/// Messages are lowercase and never contain token secrets, signatures or unbounded input: a
/// field is named by its path (`users[0].user.token`), never by its value. Where kubeadm has a
/// well-known message for the same failure, the message is kubeadm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input was larger than the documented limit; rejected before parsing.
    #[error("{what} is {len} bytes, more than the limit of {max} bytes")]
    TooLarge {
        /// What was too large (`"kubeconfig"`, `"ConfigMap"`, ...).
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The kubeconfig is not well-formed YAML or JSON, or it exceeded a parser budget (nesting
    /// depth, alias expansion, node count, several documents). The parser's own message is
    /// dropped because it can echo scalar values.
    #[error("couldn't parse the kubeconfig: {reason} at line {line}, column {column}")]
    KubeconfigSyntax {
        /// A short, value-free description (`"syntax error"`, `"resource budget exceeded"`, ...).
        reason: &'static str,
        /// 1-based line, 0 when unknown.
        line: u64,
        /// 1-based column, 0 when unknown.
        column: u64,
    },
    /// A kubeconfig field has the wrong type or an invalid value.
    #[error("invalid kubeconfig field {field}: {reason}")]
    InvalidField {
        /// The field path, e.g. `clusters[0].cluster.server`.
        field: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The kubeconfig carries a user credential or another authenticating field. The field is
    /// named; its value is never shown.
    #[error("the kubeconfig must not carry credentials, but it has {field}")]
    CredentialsPresent {
        /// The offending field path, e.g. `users[0].user.token`.
        field: String,
    },
    /// The kubeconfig has a field this crate refuses to honour (a CA file path, a proxy URL,
    /// `insecure-skip-tls-verify: true` without the caller's explicit opt-in).
    #[error("the kubeconfig field {field} is not allowed: {reason}")]
    ForbiddenField {
        /// The offending field path.
        field: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The kubeconfig does not define exactly one cluster.
    #[error(
        "expected the kubeconfig file in the cluster-info ConfigMap to have a single cluster, but it had {found}"
    )]
    ClusterCount {
        /// How many clusters it had.
        found: usize,
    },
    /// The cluster's server URL is not an acceptable `https://` URL.
    #[error("invalid server URL in {field}: {reason}")]
    InvalidServer {
        /// The field path holding the URL.
        field: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A discovery endpoint is not a `host:port` pair.
    #[error("invalid API server endpoint: {reason}")]
    InvalidEndpoint {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A PEM bundle is malformed: bad armour, bad base64, a block that is not a certificate,
    /// trailing data, or too many certificates.
    #[error("invalid PEM certificate bundle: {reason}")]
    Pem {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The bundle holds no certificate at all (kubeadm's message).
    #[error("data does not contain any valid RSA or ECDSA certificates")]
    NoCertificates,
    /// A PEM `CERTIFICATE` block does not hold a well-formed X.509 certificate.
    #[error("certificate {index} of the bundle is not a valid X.509 certificate")]
    Certificate {
        /// 0-based position in the bundle.
        index: usize,
    },
    /// A pin is not of the form `format:hex-value` (kubeadm's message).
    #[error(r#"invalid hash, expected "format:hex-value". Known format(s) are: sha256"#)]
    PinSyntax,
    /// A pin names a hash format other than `sha256` (kubeadm's message).
    #[error("unknown hash format {format:?}. Known format(s) are: sha256")]
    PinUnknownFormat {
        /// The format as given (at most 64 characters are kept).
        format: String,
    },
    /// A pin's value does not have the length of a SHA-256 hash (kubeadm's message).
    #[error("invalid hash {hash:?}, expected a 32 byte SHA-256 hash, found {found} bytes")]
    PinLength {
        /// The pin as given (at most 128 characters are kept).
        hash: String,
        /// Half the value's length, rounded down, as kubeadm computes it.
        found: usize,
    },
    /// A pin's value is not hexadecimal (kubeadm's message, with Go's `encoding/hex` reason).
    #[error("invalid hash {hash:?}, could not decode SHA-256 from hex: {reason}")]
    PinHex {
        /// The pin as given (at most 128 characters are kept).
        hash: String,
        /// Go's `encoding/hex` error text.
        reason: String,
    },
    /// No certificate of the CA bundle matches any pin (kubeadm's message).
    #[error(
        "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys {hashes:?} are pinned"
    )]
    NotPinned {
        /// The bundle's pins, `sha256:<hex>` joined with `:`.
        hashes: String,
    },
    /// Token discovery without pins and without the explicit unsafe opt-in
    /// ([`TokenDiscoveryConfig::dangerous_skip_ca_verification`](crate::TokenDiscoveryConfig::dangerous_skip_ca_verification),
    /// kubeadm's `unsafeSkipCAVerification`).
    #[error(
        "using token-based discovery without a CA pin can be unsafe: pin the cluster CA's public key, or skip its verification explicitly"
    )]
    NoPins,
    /// The ConfigMap JSON is malformed (the parser's message is dropped because it can echo
    /// values).
    #[error("couldn't parse the cluster-info ConfigMap JSON at line {line}, column {column}")]
    ConfigMapSyntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The ConfigMap is not `kube-public/cluster-info` or has an invalid shape.
    #[error("invalid cluster-info ConfigMap: {reason}")]
    InvalidConfigMap {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An RBAC object was converted to a k8s-openapi type of another kind (a ClusterRole to a
    /// `Role`, a RoleBinding to a `ClusterRoleBinding`, ...).
    #[error("RBAC object is a {found}, not a {expected}")]
    WrongKind {
        /// The k8s-openapi kind asked for.
        expected: &'static str,
        /// The object's kind.
        found: &'static str,
    },
    /// The ConfigMap has no (or an empty) `kubeconfig` key (kubeadm's message).
    #[error(
        "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect"
    )]
    MissingKubeconfig,
    /// The ConfigMap has no `jws-kubeconfig-<id>` key for the token; seen while polling
    /// (kubeadm's message, and what it may mean).
    #[error(
        "could not find a JWS signature in the cluster-info ConfigMap for token ID {token_id:?}: the token may have been deleted, have expired or be mistyped, or the cluster's bootstrap signer has not signed for it yet"
    )]
    SignatureNotFound {
        /// The token ID (public).
        token_id: String,
    },
    /// The signature key for the token is present but empty (kubeadm's message).
    #[error(
        "token id {token_id:?} is invalid for this cluster or it has expired. Use \"kubeadm token create\" on the control-plane node to create a new valid token"
    )]
    TokenNotValidForCluster {
        /// The token ID (public).
        token_id: String,
    },
    /// The detached JWS does not verify (kubeadm's message).
    #[error(
        "failed to verify JWS signature of received cluster info object, can't trust this API Server"
    )]
    BadSignature,
    /// The TLS-verified second fetch returned a different kubeconfig (kubeadm's message).
    #[error(
        "the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first"
    )]
    SecondFetchDiffers,
    /// A fetch of the cluster-info ConfigMap failed (transport error or non-200 status).
    #[error("failed to request the cluster-info ConfigMap: {detail}")]
    Fetch {
        /// HTTP status, when a response arrived.
        status: Option<u16>,
        /// A short description (at most 256 characters of the caller's text are kept).
        detail: String,
    },
    /// HTTPS-URL discovery received a non-200 status (kubeadm's message).
    #[error(
        "error trying to fetch discovery kubeconfig over HTTPS from {url}, received status {status}"
    )]
    DiscoveryUrlStatus {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// An HTTPS-URL discovery URL is not `https://`.
    #[error("if a URL is used, the scheme must be https")]
    NotHttps,
    /// Discovery gave up after its timeout; the last recorded error is the source.
    #[error("couldn't validate the identity of the API Server: {last}")]
    TimedOut {
        /// The last error recorded before the timeout.
        #[source]
        last: Box<Error>,
    },
    /// The signing or verification primitive failed.
    #[error("detached JWS operation failed: {reason}")]
    Jws {
        /// The underlying reason (never the key or the signature).
        reason: String,
    },
}

/// Truncate caller-supplied text kept in an error to at most `max` characters.
pub(crate) fn bounded(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}
