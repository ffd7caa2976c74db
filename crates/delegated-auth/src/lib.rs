#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod attributes;
mod error;
mod user;

pub use attributes::{Attributes, ResourceAttributes, Target};
pub use error::Error;
pub use user::UserInfo;
mod label_selector;
mod list_options;
mod query;
mod request_info;
mod request_path;
pub use request_info::{ApiPrefixes, RequestInfo};
pub use request_path::{MAX_REQUEST_TARGET_BYTES, RequestPath};
