#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod add_auth;
mod algorithm;
mod b64;
mod backend;
mod claims;
mod error;
#[cfg(feature = "http")]
pub mod http1;
mod json;
mod key;
mod names;
mod serviceaccount;
mod sidecar;
mod sign;
mod token;
mod validation;
mod verify;

pub use add_auth::{AddAuth, RequestUser};
pub use algorithm::Algorithm;
pub use backend::SIGNATURE_BACKEND;
pub use claims::{Claims, MAX_AUDIENCES, MAX_SUBJECT_BYTES};
pub use error::{Error, JsonProblem, KeyProblem};
pub use json::{MAX_JSON_DEPTH, MAX_JSON_MEMBERS};
pub use key::{
    DEFAULT_MAX_RSA_BITS, KeyPolicy, KeySet, MAX_JWKS_BYTES, MAX_KEYS, MAX_KID_BYTES,
    MAX_PEM_BYTES, MAX_RSA_BITS, MIN_HMAC_SECRET_BYTES, MIN_RSA_BITS,
};
pub use names::{Audience, Issuer};
pub use serviceaccount::{
    KubernetesClaims, ObjectRef, SERVICE_ACCOUNT_LEEWAY, ServiceAccountToken,
    ServiceAccountVerifier,
};
#[cfg(feature = "http")]
pub use sidecar::remove_hop_by_hop;
pub use sidecar::{
    AUTHENTICATED_USER_HEADER, DEFAULT_VERIFIED_CACHE, Decision, FORBIDDEN_TRAILERS, Forward,
    ForwardHeaders, HOP_BY_HOP_HEADERS, MAX_REQUEST_HEADER_BYTES, MAX_REQUEST_HEADERS,
    RejectReason, Rejection, STRIPPED_IDENTITY_HEADERS, Sidecar,
};
pub use sign::{DEFAULT_MINT_CACHE, DEFAULT_TTL, Minter, SigningKey};
pub use token::BearerToken;
pub use validation::Validation;
pub use verify::{MAX_HEADER_BYTES, MAX_SIGNATURE_CHECKS, MAX_TOKEN_BYTES, verify, verify_jws};

#[cfg(test)]
mod wycheproof_tests;
