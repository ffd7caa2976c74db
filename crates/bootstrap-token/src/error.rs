//! The crate's error type.

/// Everything that can go wrong in this crate.
///
/// Messages are lowercase, name the offending field, and never contain a token secret or an
/// unbounded piece of the input: parser errors from `serde_json`/`serde-saphyr` (which echo
/// scalar values) are reduced to a position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The string is not a bootstrap token (`\A([a-z0-9]{6})\.([a-z0-9]{16})\z`).
    #[error(
        "a bootstrap token is 6 characters of [a-z0-9], a dot, and 16 characters of [a-z0-9], as 07401b.f395accd246ae52d"
    )]
    InvalidToken,
    /// The string is not a token ID (`\A([a-z0-9]{6})\z`).
    #[error("a bootstrap token id is 6 characters of [a-z0-9], as 07401b")]
    InvalidTokenId,
    /// The string is not a token secret (16 characters of `[a-z0-9]`).
    #[error("bootstrap token secret is not 16 characters of [a-z0-9]")]
    InvalidTokenSecret,
    /// An `auth-extra-groups` entry does not match the group pattern.
    #[error("bootstrap group {group} is invalid (must match {pattern})", pattern = crate::GROUP_PATTERN)]
    InvalidGroup {
        /// The offending group, quoted and shortened to at most 300 bytes.
        group: String,
    },
    /// One or more usages are neither `signing` nor `authentication`.
    #[error(
        "invalid bootstrap token usage string: {usages}, valid usage options: signing,authentication"
    )]
    InvalidUsage {
        /// The bad usages, deduplicated, sorted and comma-joined (shortened to at most 300 bytes).
        usages: String,
    },
    /// An expiration is not an RFC 3339 time Go's `time.Parse(time.RFC3339, ..)` accepts.
    #[error("expiration is not an RFC 3339 time: {reason}")]
    InvalidExpiration {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A time cannot be represented (it is outside the years 0000 to 9999 or `SystemTime`'s range).
    #[error("time out of the representable range")]
    TimeOutOfRange,
    /// A duration string is not a Go duration (`24h0m0s`, `90m`, `1.5h`).
    #[error("invalid duration: {reason}")]
    InvalidDuration {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The input document is larger than the documented limit.
    #[error("document of {len} bytes exceeds the limit of {max} bytes")]
    DocumentTooLarge {
        /// Size of the input.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The decoded Secret data is larger than [`MAX_SECRET_DATA_LEN`](crate::MAX_SECRET_DATA_LEN).
    #[error("secret data exceeds the limit of {max} bytes")]
    DataTooLarge {
        /// The limit.
        max: usize,
    },
    /// The JSON document is malformed or has the wrong shape; the parser's message is dropped
    /// because it may echo input.
    #[error("malformed secret JSON at line {line}, column {column}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The YAML document is malformed or has the wrong shape; the parser's message is dropped
    /// because it may echo input.
    #[error("malformed secret YAML")]
    Yaml,
    /// A key appears twice in `data` or `stringData`.
    #[error("duplicate key in secret data")]
    DuplicateDataKey,
    /// A `data` key is not a valid Secret key (`[-._a-zA-Z0-9]+`, at most 253 bytes).
    #[error("invalid secret data key")]
    InvalidDataKey,
    /// A `data` value is not standard base64 with padding.
    #[error("secret data value for key {key:?} is not standard base64")]
    InvalidBase64 {
        /// The data key.
        key: String,
    },
    /// `kind` is present and is not `Secret`, or `apiVersion` is present and is not `v1`.
    #[error("document is not a v1 Secret")]
    NotASecret,
    /// The Secret's type is not `bootstrap.kubernetes.io/token`.
    #[error("secret type is not bootstrap.kubernetes.io/token")]
    WrongSecretType,
    /// The Secret is not in `kube-system`.
    #[error("secret is not in namespace kube-system")]
    WrongNamespace,
    /// The Secret name is not `bootstrap-token-<id>`.
    #[error("secret name is not of the form bootstrap-token-<id>")]
    InvalidSecretName,
    /// The Secret has no `data` at all.
    #[error("secret has no data")]
    NoData,
    /// A required data key is missing or empty.
    #[error("bootstrap token secret has no {key} data")]
    MissingData {
        /// The data key.
        key: &'static str,
    },
    /// `token-id` differs from the ID in the Secret name.
    #[error("bootstrap token secret name does not match its token-id")]
    TokenIdMismatch,
    /// The Secret has a deletion timestamp.
    #[error("bootstrap token secret is being deleted")]
    DeletionPending,
    /// Field validation of a kubeadm `BootstrapToken` failed.
    #[error("{}", join_field_errors(.0))]
    Validation(Vec<crate::FieldError>),
    /// The random source failed: the operating system's generator returned an error, or a
    /// caller's source never produced a usable byte.
    #[error("could not generate random integer")]
    Rng,
    /// Serialising the Secret failed.
    #[error("could not serialise the secret")]
    Serialize,
}

fn join_field_errors(errors: &[crate::FieldError]) -> String {
    let mut out = String::new();
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&e.to_string());
    }
    if errors.len() > 1 {
        format!("[{out}]")
    } else {
        out
    }
}

/// `s` quoted for an error message, shortened to at most `MAX` bytes of input.
pub(crate) fn shown(s: &str) -> String {
    const MAX: usize = 300;
    let mut end = s.len().min(MAX);
    while !s.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    match s.get(..end) {
        Some(head) if end < s.len() => format!("{head:?}..."),
        _ => format!("{s:?}"),
    }
}
