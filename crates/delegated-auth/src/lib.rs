#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod attributes;
mod error;
mod user;

pub use attributes::{Attributes, ResourceAttributes, Target};
pub use error::Error;
pub use user::UserInfo;
