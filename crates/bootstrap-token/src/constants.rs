//! Wire constants from `k8s.io/cluster-bootstrap/token/api`.

/// Namespace holding bootstrap-token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// Prefix of every bootstrap-token Secret name (`bootstrap-token-<id>`).
pub const SECRET_NAME_PREFIX: &str = "bootstrap-token-";
/// The Secret `type` of a bootstrap token.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Data key holding the 6-character token ID.
pub const TOKEN_ID_KEY: &str = "token-id";
/// Data key holding the 16-character token secret.
pub const TOKEN_SECRET_KEY: &str = "token-secret";
/// Data key holding the RFC 3339 expiration instant.
pub const EXPIRATION_KEY: &str = "expiration";
/// Data key holding the free-text description.
pub const DESCRIPTION_KEY: &str = "description";
/// Data key holding the comma-separated extra groups.
pub const AUTH_EXTRA_GROUPS_KEY: &str = "auth-extra-groups";
/// Prefix of the usage data keys (`usage-bootstrap-<usage>`).
pub const USAGE_KEY_PREFIX: &str = "usage-bootstrap-";
/// Data key enabling the signing usage when its value is exactly `true`.
pub const USAGE_SIGNING_KEY: &str = "usage-bootstrap-signing";
/// Data key enabling the authentication usage when its value is exactly `true`.
pub const USAGE_AUTHENTICATION_KEY: &str = "usage-bootstrap-authentication";
/// Prefix of the user name an authenticated bootstrap token gets (`system:bootstrap:<id>`).
pub const BOOTSTRAP_USER_PREFIX: &str = "system:bootstrap:";
/// The group every authenticated bootstrap token belongs to.
pub const BOOTSTRAP_DEFAULT_GROUP: &str = "system:bootstrappers";
/// The extra group kubeadm gives tokens by default.
pub const KUBEADM_DEFAULT_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The token pattern, as Kubernetes spells it.
pub const TOKEN_PATTERN: &str = r"\A([a-z0-9]{6})\.([a-z0-9]{16})\z";
/// The token ID pattern, as Kubernetes spells it.
pub const ID_PATTERN: &str = r"\A([a-z0-9]{6})\z";
/// The extra-group pattern, as Kubernetes spells it.
pub const GROUP_PATTERN: &str = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z";
/// The Secret name pattern, as Kubernetes spells it.
pub const SECRET_NAME_PATTERN: &str = "^bootstrap-token-([a-z0-9]{6})$";
/// The 36 characters tokens are made of.
pub const TOKEN_CHARSET: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
/// Length of a token ID.
pub const TOKEN_ID_LEN: usize = 6;
/// Length of a token secret.
pub const TOKEN_SECRET_LEN: usize = 16;
/// Largest JSON or YAML Secret document [`SecretObject::from_json`](crate::SecretObject::from_json)
/// and `SecretObject::from_yaml` (feature `yaml`) read (4 MiB); larger input is rejected before
/// parsing.
pub const MAX_DOCUMENT_LEN: usize = 4 * 1024 * 1024;
/// Largest total size of a Secret's decoded `data` (keys plus values), 1 MiB, the API server's
/// own limit for a Secret.
pub const MAX_SECRET_DATA_LEN: usize = 1024 * 1024;

/// Whether `b` is in `[a-z0-9]`.
pub(crate) const fn is_token_char(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
}
