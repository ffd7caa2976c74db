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
}
