//! Documented size limits, all enforced before any cryptography runs.

/// The largest content (the signed kubeconfig) accepted, in bytes: 1 MiB.
///
/// A Kubernetes ConfigMap cannot be larger than 1 MiB, so no `cluster-info` kubeconfig can be.
pub const MAX_CONTENT_LEN: usize = 1024 * 1024;

/// The longest detached JWS string accepted by the verifiers, in bytes: 4 KiB.
///
/// A Kubernetes detached JWS for a six-character token id is 87 bytes long.
pub const MAX_DETACHED_LEN: usize = 4096;

/// The longest decoded protected header accepted by [`verify`](crate::verify), in bytes: 2 KiB.
pub const MAX_HEADER_JSON_LEN: usize = 2048;

/// The most members the protected header object may have in [`verify`](crate::verify): 32.
pub const MAX_HEADER_MEMBERS: usize = 32;

/// The deepest nesting of arrays and objects inside protected header values in
/// [`verify`](crate::verify): 16.
pub const MAX_HEADER_DEPTH: usize = 16;

/// The longest `kid` accepted by signing and verification, in bytes: 256.
///
/// Kubernetes token ids are six bytes long.
pub const MAX_KID_LEN: usize = 256;

/// The length of the base64url-encoded HS256 signature segment: 43 characters (32 bytes).
pub const SIGNATURE_B64_LEN: usize = 43;

/// The length of an HS256 tag in bytes.
pub(crate) const MAC_LEN: usize = 32;

/// The largest canonical header JSON: `{"alg":"HS256","kid":""}` (24 bytes) plus a kid of
/// `MAX_KID_LEN` bytes, each escaped as `\u00XX` in the worst case.
pub(crate) const MAX_CANONICAL_HEADER_JSON_LEN: usize = 24 + 6 * MAX_KID_LEN;

/// The base64url length of the largest canonical header.
pub(crate) const MAX_CANONICAL_HEADER_B64_LEN: usize =
    (MAX_CANONICAL_HEADER_JSON_LEN * 4).div_ceil(3);

/// The longest header segment [`verify`](crate::verify) decodes.
pub(crate) const MAX_HEADER_B64_LEN: usize = (MAX_HEADER_JSON_LEN * 4).div_ceil(3);
