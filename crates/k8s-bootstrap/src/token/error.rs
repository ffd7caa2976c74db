//! The token module's error type and the operations it names.

use std::fmt;

use bootstrap_token::TokenId;

/// The most characters of a server-provided message kept in an [`Error`].
const MAX_MESSAGE_CHARS: usize = 512;

/// The API operation that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// Creating `bootstrap-token-<id>`.
    Create {
        /// The token's ID (public).
        id: TokenId,
    },
    /// Listing the bootstrap-token Secrets.
    List,
    /// Deleting `bootstrap-token-<id>`.
    Delete {
        /// The token's ID (public).
        id: TokenId,
    },
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Create { id } => write!(f, "create bootstrap token {:?}", id.as_str()),
            Operation::List => f.write_str("list bootstrap tokens"),
            Operation::Delete { id } => write!(f, "delete bootstrap token {:?}", id.as_str()),
        }
    }
}

/// Why a token operation failed. Messages never contain a token secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The token options are invalid (the core's validation, kubeadm's messages).
    #[error("invalid bootstrap token options: {0}")]
    Invalid(#[source] bootstrap_token::Error),
    /// Building the Secret from the options failed (an unrepresentable expiry).
    #[error("failed to build the bootstrap token secret: {0}")]
    BuildSecret(#[source] bootstrap_token::Error),
    /// Generating a random token failed.
    #[error("failed to generate a bootstrap token: {0}")]
    Generate(#[source] bootstrap_token::Error),
    /// A `token delete` argument is neither a token ID nor a token (the argument is not echoed:
    /// it may be a mistyped secret).
    #[error(
        "the argument is neither a token id (6 characters of [a-z0-9], as 07401b) nor a token (the id, a dot, and 16 characters of [a-z0-9], as 07401b.f395accd246ae52d)"
    )]
    DeleteArgument,
    /// `bootstrap-token-<id>` already exists (kubeadm's message).
    #[error("a token with id {:?} already exists", .id.as_str())]
    AlreadyExists {
        /// The existing token's ID.
        id: TokenId,
    },
    /// The Secret does not exist.
    #[error("failed to {operation}: not found: {message}")]
    NotFound {
        /// What was attempted.
        operation: Operation,
        /// The server's message (bounded).
        message: String,
    },
    /// The credentials may not perform the operation (HTTP 403).
    #[error("failed to {operation}: forbidden: {message}")]
    Forbidden {
        /// What was attempted.
        operation: Operation,
        /// The server's message (bounded).
        message: String,
    },
    /// A conflicting change (HTTP 409 other than AlreadyExists).
    #[error("failed to {operation}: conflict: {message}")]
    Conflict {
        /// What was attempted.
        operation: Operation,
        /// The server's message (bounded).
        message: String,
    },
    /// Any other error status from the API server.
    #[error("failed to {operation}: the server answered {code} {reason}: {message}")]
    Api {
        /// What was attempted.
        operation: Operation,
        /// The HTTP status code.
        code: u16,
        /// The machine-readable reason (bounded).
        reason: String,
        /// The server's message (bounded).
        message: String,
    },
    /// The request did not get an API answer (connection, TLS, credentials, decoding).
    #[error("failed to {operation}: {source}")]
    Request {
        /// What was attempted.
        operation: Operation,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// Maps a `kube` error for `operation` to the typed error: Forbidden, NotFound,
    /// AlreadyExists (only for a create), Conflict, other API statuses, transport failures.
    pub(crate) fn from_kube(operation: Operation, err: kube::Error) -> Error {
        let kube::Error::Api(status) = err else {
            return Error::Request {
                operation,
                source: err,
            };
        };
        let message = bounded(&status.message);
        match (&operation, status.reason.as_str(), status.code) {
            (_, "Forbidden", _) | (_, "", 403) => Error::Forbidden { operation, message },
            (_, "NotFound", _) | (_, "", 404) => Error::NotFound { operation, message },
            (Operation::Create { id }, "AlreadyExists", _)
            | (Operation::Create { id }, "", 409) => Error::AlreadyExists { id: *id },
            (_, "Conflict" | "AlreadyExists", _) | (_, "", 409) => {
                Error::Conflict { operation, message }
            }
            (_, reason, code) => Error::Api {
                operation,
                code,
                reason: bounded(reason),
                message,
            },
        }
    }
}

/// `s` cut to [`MAX_MESSAGE_CHARS`] characters, marked with `...` when cut.
fn bounded(s: &str) -> String {
    match s.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((end, _)) => {
            let head = s.get(..end).unwrap_or_default();
            format!("{head}...")
        }
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn id() -> TokenId {
        TokenId::from_bytes(b"abcdef").unwrap()
    }

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Status::failure("msg", reason).with_code(code).boxed())
    }

    #[test]
    fn maps_statuses() {
        let create = || Operation::Create { id: id() };
        assert!(matches!(
            Error::from_kube(create(), api(409, "AlreadyExists")),
            Error::AlreadyExists { .. }
        ));
        assert!(matches!(
            Error::from_kube(create(), api(409, "")),
            Error::AlreadyExists { .. }
        ));
        assert!(matches!(
            Error::from_kube(Operation::Delete { id: id() }, api(409, "Conflict")),
            Error::Conflict { .. }
        ));
        assert!(matches!(
            Error::from_kube(Operation::List, api(403, "Forbidden")),
            Error::Forbidden { .. }
        ));
        assert!(matches!(
            Error::from_kube(Operation::Delete { id: id() }, api(404, "NotFound")),
            Error::NotFound { .. }
        ));
        let e = Error::from_kube(Operation::List, api(500, "InternalError"));
        assert!(matches!(e, Error::Api { code: 500, .. }));
        assert_eq!(
            e.to_string(),
            "failed to list bootstrap tokens: the server answered 500 InternalError: msg"
        );
        assert_eq!(
            Error::from_kube(Operation::Delete { id: id() }, api(404, "NotFound")).to_string(),
            "failed to delete bootstrap token \"abcdef\": not found: msg"
        );
    }

    #[test]
    fn bounds_messages() {
        let long = "x".repeat(2000);
        assert_eq!(bounded(&long).len(), MAX_MESSAGE_CHARS + 3);
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn delete_argument_message() {
        // In words, with examples: never the regular expressions.
        let message = Error::DeleteArgument.to_string();
        assert!(message.contains("as 07401b.f395accd246ae52d"), "{message}");
        assert!(
            !message.contains(bootstrap_token::TOKEN_PATTERN),
            "{message}"
        );
    }
}
