#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod b64;
mod detached;
mod error;
mod header;
mod json;
mod key;
mod limits;
mod mac;
mod payload;
mod sign;
mod verify;

pub use error::{Error, HeaderError, Segment};
pub use key::HmacKey;
pub use limits::{
    MAX_CONTENT_LEN, MAX_DETACHED_LEN, MAX_HEADER_DEPTH, MAX_HEADER_JSON_LEN, MAX_HEADER_MEMBERS,
    MAX_KID_LEN, SIGNATURE_B64_LEN,
};
pub use payload::PreparedPayload;
pub use sign::sign;
pub use verify::{verify, verify_kubernetes};
