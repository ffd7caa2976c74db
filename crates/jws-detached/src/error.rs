//! The crate's error type.

use core::fmt;

/// Everything that can go wrong when signing or verifying a detached JWS.
///
/// Messages say what was wrong without echoing keys, signatures or input bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The HMAC key is empty. Signing or verifying under an empty key is refused: anybody can
    /// compute such a signature.
    #[error("HMAC key is empty")]
    EmptyKey,
    /// The HMAC implementation rejected the key. HMAC-SHA-256 accepts keys of any length, so
    /// this is not expected to happen.
    #[error("HMAC key rejected")]
    InvalidKey,
    /// The `kid` is empty.
    #[error("kid is empty")]
    EmptyKid,
    /// The `kid` is longer than [`MAX_KID_LEN`](crate::MAX_KID_LEN).
    #[error("kid is {len} bytes long, more than the limit of {max}")]
    KidTooLong {
        /// The length of the kid given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The content is larger than [`MAX_CONTENT_LEN`](crate::MAX_CONTENT_LEN).
    #[error("content is {len} bytes long, more than the limit of {max}")]
    ContentTooLarge {
        /// The length of the content given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The detached JWS is longer than [`MAX_DETACHED_LEN`](crate::MAX_DETACHED_LEN).
    #[error("detached JWS is {len} bytes long, more than the limit of {max}")]
    TooLong {
        /// The length of the input.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The input does not have exactly three segments (exactly two `.`).
    #[error("a detached JWS has exactly two '.' separators, found {dots}")]
    SegmentCount {
        /// How many `.` the input holds.
        dots: usize,
    },
    /// The payload segment is not empty: this is a full compact JWS, not a detached one
    /// (`header..signature`).
    #[error("payload segment is not empty: a detached JWS has the form header..signature")]
    PayloadNotDetached,
    /// A segment is not canonical unpadded base64url (wrong alphabet, padding, whitespace,
    /// impossible length or non-zero trailing bits).
    #[error("{segment} segment is not canonical unpadded base64url")]
    InvalidBase64 {
        /// Which segment.
        segment: Segment,
    },
    /// The signature does not decode to exactly 32 bytes (HS256, no truncated tags).
    #[error("signature is {len} bytes long; HS256 needs exactly 32")]
    SignatureLength {
        /// The decoded length.
        len: usize,
    },
    /// The decoded protected header is longer than
    /// [`MAX_HEADER_JSON_LEN`](crate::MAX_HEADER_JSON_LEN).
    #[error("protected header is longer than the limit of {max} bytes")]
    HeaderTooLong {
        /// The limit.
        max: usize,
    },
    /// The protected header is not a valid JSON object.
    #[error("protected header is not a valid JSON object: {reason}")]
    InvalidHeader {
        /// What is wrong with it.
        reason: HeaderError,
    },
    /// Kubernetes mode: the header is not byte-for-byte the one Kubernetes writes,
    /// `{"alg":"HS256","kid":"<kid>"}`, for the expected `kid`.
    #[error("protected header is not the canonical Kubernetes header for the expected kid")]
    NonCanonicalHeader,
    /// A required header parameter is missing.
    #[error("protected header has no `{name}` parameter")]
    MissingHeaderParameter {
        /// The parameter's name.
        name: &'static str,
    },
    /// The header's `alg` is not `HS256`.
    #[error("algorithm is not HS256")]
    UnsupportedAlgorithm,
    /// The header's `kid` is not a string equal to the expected `kid`.
    #[error("kid in the header does not match the expected kid")]
    KidMismatch,
    /// The header has a `crit` parameter; no extensions are understood.
    #[error("protected header has a `crit` parameter; no extensions are supported")]
    CriticalHeader,
    /// The header asks for an unencoded payload (`"b64": false`, RFC 7797), or `b64` is not a
    /// boolean.
    #[error("unencoded payload (`b64` other than true) is not supported")]
    UnencodedPayload,
    /// The signature does not match the content under this key.
    #[error("signature does not match")]
    BadSignature,
}

/// A segment of a compact JWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Segment {
    /// The first segment, the protected header.
    Header,
    /// The third segment, the signature.
    Signature,
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Segment::Header => "header",
            Segment::Signature => "signature",
        })
    }
}

/// Why a protected header is not a valid JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The decoded bytes are not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The JSON text is not an object (an array, string, number or literal).
    #[error("not a JSON object")]
    NotObject,
    /// The JSON is malformed at this byte offset of the decoded header.
    #[error("syntax error at byte {offset}")]
    Syntax {
        /// The byte offset in the decoded header.
        offset: usize,
    },
    /// Something follows the object.
    #[error("trailing data after the object")]
    TrailingData,
    /// A member name occurs twice (after escape processing).
    #[error("duplicate member name")]
    DuplicateMember,
    /// More than [`MAX_HEADER_MEMBERS`](crate::MAX_HEADER_MEMBERS) members.
    #[error("too many members")]
    TooManyMembers,
    /// Values nested deeper than [`MAX_HEADER_DEPTH`](crate::MAX_HEADER_DEPTH).
    #[error("nested too deeply")]
    TooDeep,
    /// A known parameter has the wrong JSON type (e.g. `alg` that is not a string).
    #[error("`{name}` has the wrong type")]
    WrongType {
        /// The parameter's name.
        name: &'static str,
    },
}

impl From<HeaderError> for Error {
    fn from(reason: HeaderError) -> Self {
        Error::InvalidHeader { reason }
    }
}
