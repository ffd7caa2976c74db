//! The crate's error type.

/// Every way loading keys, verifying, minting or deciding can fail.
///
/// Messages are lowercase and never contain the token, a signature, key material or any other
/// part of the input beyond fixed names (claim names, algorithm names, limits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is larger than the documented limit.
    #[error("{what} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// What was too large (`token`, `header`, `jwks`, ...).
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
    /// The token is not a compact JWS: it does not have exactly three dot-separated segments.
    #[error("token is not a compact JWS (expected exactly three dot-separated segments)")]
    Malformed,
    /// A segment is not strict, canonical, unpadded base64url.
    #[error("{segment} is not canonical unpadded base64url")]
    Base64 {
        /// Which segment (`header`, `payload`, `signature`) or key parameter.
        segment: &'static str,
    },
    /// A JSON document is not valid, not an object, has duplicate member names or is too deep.
    #[error("{what} is not a valid JSON object: {problem}")]
    Json {
        /// Which document (`header`, `payload`, `jwks`, ...).
        what: &'static str,
        /// What is wrong with it (a fixed description; never the input).
        problem: JsonProblem,
    },
    /// The header has no `alg`, or its `alg` is not a string.
    #[error("header has no string `alg`")]
    MissingAlgorithm,
    /// The header's `alg` names an algorithm this crate does not implement (`none`, `HS512`, ...).
    #[error("algorithm is not supported")]
    UnsupportedAlgorithm,
    /// The header's `alg` is supported but not allowed by the validation policy.
    #[error("algorithm {0} is not allowed by the validation policy")]
    AlgorithmNotAllowed(crate::Algorithm),
    /// The header carries a parameter this crate refuses (`crit`, `b64`, `jwk`, `jku`, `x5u`, `x5c`,
    /// `zip`, `enc`, a nested `cty`).
    #[error("header parameter `{0}` is not accepted")]
    ForbiddenHeader(&'static str),
    /// The header's `typ` is not `JWT`.
    #[error("header `typ` is not JWT")]
    WrongType,
    /// The header's `kid` is not a string or is longer than the limit.
    #[error("header `kid` is not a string of at most 256 bytes")]
    InvalidKeyId,
    /// No key in the set has the token's `kid` (the caller may refresh its JWKS).
    #[error("no key with the token's key id")]
    UnknownKeyId,
    /// More keys than [`MAX_SIGNATURE_CHECKS`](crate::MAX_SIGNATURE_CHECKS) could verify the
    /// token (it has no `kid`, or the set has that many keys without one): nothing is tried. Name
    /// the keys (JWKS `kid`, [`KeySet::with_key_id`](crate::KeySet::with_key_id)) and put the
    /// `kid` in the tokens.
    #[error("token needs a `kid`: too many keys could verify it")]
    KeyIdRequired,
    /// No key in the set may verify a token with the token's algorithm.
    #[error("no key in the set is bound to algorithm {0}")]
    NoMatchingKey(crate::Algorithm),
    /// The signature does not verify.
    #[error("signature verification failed")]
    BadSignature,
    /// A required claim is absent.
    #[error("required claim `{0}` is missing")]
    MissingClaim(&'static str),
    /// A claim has the wrong JSON type or an invalid value.
    #[error("claim `{0}` has an invalid type or value")]
    InvalidClaim(&'static str),
    /// The token has expired (`exp`).
    #[error("token has expired")]
    Expired,
    /// The token is not valid yet (`nbf`).
    #[error("token is not valid yet")]
    NotYetValid,
    /// The token was issued in the future (`iat`).
    #[error("token is issued in the future")]
    IssuedInFuture,
    /// No `aud` value is one of the expected audiences.
    #[error("token audience is not accepted")]
    WrongAudience,
    /// The `iss` is not one of the accepted issuers.
    #[error("token issuer is not accepted")]
    WrongIssuer,
    /// A key could not be loaded.
    #[error("invalid key: {0}")]
    InvalidKey(KeyProblem),
    /// A JWKS document or JWK was rejected.
    #[error("invalid JWKS: {0}")]
    InvalidJwks(KeyProblem),
    /// The key cannot be used for this operation with the compiled-in backend.
    #[error("key type or operation is not supported by this build")]
    UnsupportedKey,
    /// Minting input was rejected (empty or unsafe user name or audience).
    #[error("{0} is not a valid non-empty header-safe string")]
    InvalidInput(&'static str),
    /// Signing failed.
    #[error("signing failed")]
    Signing,
}

/// What is wrong with a JSON document (see [`Error::Json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonProblem {
    /// Not UTF-8, a syntax error, trailing data or several JSON texts.
    #[error("syntax error")]
    Syntax,
    /// Valid JSON, but not an object.
    #[error("not an object")]
    NotObject,
    /// A member name occurs twice in one object.
    #[error("duplicate member name")]
    DuplicateMember,
    /// Nested deeper than the limit.
    #[error("nested too deeply")]
    TooDeep,
    /// Too many members or array elements.
    #[error("too many members")]
    TooManyMembers,
}

/// What is wrong with a key (see [`Error::InvalidKey`] and [`Error::InvalidJwks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyProblem {
    /// Not a PEM document of the expected kind, or junk around the PEM blocks.
    #[error("not a PUBLIC KEY or CERTIFICATE PEM document")]
    Pem,
    /// The DER structure (certificate or SubjectPublicKeyInfo) is invalid.
    #[error("malformed DER")]
    Der,
    /// The key type does not fit the algorithm it is bound to.
    #[error("key type does not match the algorithm")]
    AlgorithmMismatch,
    /// The key type or curve is not supported.
    #[error("unsupported key type or curve")]
    Unsupported,
    /// RSA modulus below 2048 bits, or an exponent that is even, below 3 or at least 2^33.
    #[error("RSA key size or exponent outside the accepted range")]
    RsaParameters,
    /// An RSA modulus larger than the [`KeyPolicy`](crate::KeyPolicy) allows (by default
    /// [`DEFAULT_MAX_RSA_BITS`](crate::DEFAULT_MAX_RSA_BITS), 4096 bits).
    #[error("RSA key is larger than the configured limit")]
    RsaTooLarge,
    /// An elliptic-curve point is not on the curve, or an Ed25519 key is weak.
    #[error("invalid public point")]
    InvalidPoint,
    /// Two keys share one `kid`.
    #[error("duplicate key id")]
    DuplicateKeyId,
    /// Private key material (`d`, `p`, `q`, ...) or a symmetric (`oct`) key in a public key set.
    #[error("private or symmetric key material in a public key set")]
    PrivateMaterial,
    /// `use` is not `sig`, or `key_ops` does not allow `verify`.
    #[error("key is not for signature verification")]
    WrongUse,
    /// A required JWK parameter is missing or has the wrong type or encoding.
    #[error("missing or malformed JWK parameter")]
    Parameter,
    /// More keys than the limit.
    #[error("too many keys")]
    TooManyKeys,
    /// No key at all.
    #[error("no keys")]
    Empty,
    /// An `HS256` secret shorter than 32 bytes (RFC 7518 §3.2), including an empty one.
    #[error("HS256 secret is shorter than 32 bytes")]
    HmacSecretTooShort,
    /// A private key PEM could not be read (PKCS#8 expected).
    #[error("not a PKCS#8 private key of a supported type")]
    PrivateKey,
    /// A private key PEM with a label other than `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY`
    /// (SEC1): `RSA PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, ... The message says how to convert.
    #[error(
        "private key PEM label is not supported: convert the key to unencrypted PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.pkcs8.pem`"
    )]
    PrivateKeyLabel,
}
