//! The crate's error type.

/// What went wrong while reading or deciding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input was larger than the bound this crate allows for it.
    #[error("{what} is larger than {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The bound, in bytes.
        limit: usize,
    },
    /// A request path has a malformed percent-escape, decodes to bytes that are not UTF-8, or is
    /// not absolute (Go's HTTP server answers 400 Bad Request).
    #[error("request path is malformed: {reason}")]
    InvalidPath {
        /// What is wrong (a fixed description; never the path).
        reason: &'static str,
    },
    /// A request path is not in its clean form (`.` or `..` segments, `//`, a percent-encoded
    /// dot or slash that decodes to them): Go's `ServeMux`, in front of kube-rbac-proxy and the
    /// kubelet, answers 301 Moved Permanently to the clean path, which is then authorized; so
    /// must a caller, never authorizing one path and serving another.
    #[error("request path is not clean; redirect to the clean path")]
    PathNotClean {
        /// The clean, still decoded path to redirect to (`/metrics/../secret` -> `/secret`).
        clean: String,
    },
    /// A JSON document is malformed or does not have the expected shape.
    #[error("{what} is not valid JSON of the expected shape (line {line}, column {column})")]
    Json {
        /// Which document (`RBAC object`, `kube-rbac-proxy configuration`).
        what: &'static str,
        /// The line of the error, 1-based (0 when unknown).
        line: usize,
        /// The column of the error, 1-based (0 when unknown).
        column: usize,
    },
    /// A YAML document is malformed, does not have the expected shape, or exceeds the parser's
    /// budget (depth, nodes, aliases, documents).
    #[error("{what} is not valid YAML of the expected shape (line {line}, column {column})")]
    Yaml {
        /// Which document (`RBAC objects`, `kube-rbac-proxy configuration`).
        what: &'static str,
        /// The line of the error, 1-based (0 when unknown).
        line: usize,
        /// The column of the error, 1-based (0 when unknown).
        column: usize,
    },
    /// An RBAC object is not one this crate reads (a `kind` other than `Role`, `ClusterRole`,
    /// `RoleBinding`, `ClusterRoleBinding` or a list of them, or another `apiVersion` than
    /// `rbac.authorization.k8s.io/v1`), or breaks a rule the API server enforces.
    #[error("RBAC object is not valid: {reason}")]
    InvalidRbacObject {
        /// What is wrong (a fixed description).
        reason: &'static str,
    },
    /// A label selector (an aggregation rule's `clusterRoleSelectors`) is not valid.
    #[error("label selector is not valid: {reason}")]
    InvalidLabelSelector {
        /// What is wrong (a fixed description).
        reason: &'static str,
    },
    /// A kube-rbac-proxy configuration or flag value is not valid.
    #[error("kube-rbac-proxy configuration is not valid: {reason}")]
    InvalidProxyConfig {
        /// What is wrong (a fixed description naming the field or flag).
        reason: &'static str,
    },
    /// Comparing rules for escalation would expand more than `limit` single-verb,
    /// single-resource rules (`verbs` × `apiGroups` × `resources` × `resourceNames`).
    #[error("the requested rules expand to more than {limit} single rules")]
    TooManyRules {
        /// The bound on the expansion.
        limit: usize,
    },
}
