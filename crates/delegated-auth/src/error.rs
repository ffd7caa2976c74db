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

    /// A bearer token was refused before any review: empty, or not visible ASCII.
    #[error("invalid bearer token: {reason}")]
    InvalidToken {
        /// Why.
        reason: &'static str,
    },
    /// A review answer or a document was not the JSON expected. Only the position is kept:
    /// the parser's message could echo the input (a token, for one).
    #[error("{what} is not valid JSON of the expected shape (line {line}, column {column})")]
    Json {
        /// What was read.
        what: &'static str,
        /// The line of the problem (1-based; 0 when unknown).
        line: usize,
        /// The column of the problem (1-based; 0 when unknown).
        column: usize,
    },
    /// A review answer or a document parsed, but a field has a value it may not have.
    #[error("{what} is invalid: {reason}")]
    Invalid {
        /// What was read.
        what: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The API server did not answer a review with success (a 5xx, a 4xx such as a missing
    /// `create` permission on `tokenreviews`): a backend failure, never a decision.
    #[error("{what} failed with HTTP status {status}")]
    ReviewFailed {
        /// Which review.
        what: &'static str,
        /// The HTTP status code of the answer.
        status: u16,
    },
    /// A client certificate (chain) or a CA bundle was refused by rustls-webpki or its reader.
    #[error("client certificate: {0}")]
    Certificate(#[source] tls_bootstrap::Error),
    /// A front-proxy client certificate chained to the requestheader CA, but its common name is
    /// not in `requestheader-allowed-names`.
    #[error("the front-proxy client certificate's common name is not an allowed name")]
    NotAllowedName,
    /// A service-account token failed offline verification.
    #[error("service-account token: {0}")]
    Jwt(#[source] addon_jwt::Error),
}
