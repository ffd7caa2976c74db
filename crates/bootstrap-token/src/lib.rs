#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod authenticator;
mod cleaner;
mod constants;
mod duration;
mod error;
mod expiration;
mod group;
mod id;
#[cfg(any(feature = "k8s-openapi", feature = "k8s-openapi-0-28"))]
mod k8s;
mod kubeadm;
mod model;
mod rfc3339;
mod secret;
mod secret_object;
mod token;
mod usage;

pub use authenticator::{AuthOutcome, Authenticated, RejectReason, authenticate};
pub use cleaner::{CleanerAction, CleanupPlan, cleaner_action, cleanup_plan};
pub use constants::{
    AUTH_EXTRA_GROUPS_KEY, BOOTSTRAP_DEFAULT_GROUP, BOOTSTRAP_USER_PREFIX, DESCRIPTION_KEY,
    EXPIRATION_KEY, GROUP_PATTERN, ID_PATTERN, KUBEADM_DEFAULT_GROUP, MAX_DOCUMENT_LEN,
    MAX_SECRET_DATA_LEN, NAMESPACE, SECRET_NAME_PATTERN, SECRET_NAME_PREFIX, SECRET_TYPE,
    TOKEN_CHARSET, TOKEN_ID_KEY, TOKEN_ID_LEN, TOKEN_PATTERN, TOKEN_SECRET_KEY, TOKEN_SECRET_LEN,
    USAGE_AUTHENTICATION_KEY, USAGE_KEY_PREFIX, USAGE_SIGNING_KEY,
};
pub use duration::{format_go_duration, short_human_duration};
pub use error::Error;
pub use expiration::ExpirationStatus;
pub use group::{ExtraGroup, parse_groups};
pub use id::{TokenId, parse_secret_name};
pub use kubeadm::{FieldError, KubeadmToken, LIST_HEADER, parse_delete_argument, validate_usages};
pub use model::BootstrapTokenSecret;
pub use rfc3339::{parse_expiration, parse_expiration_with_offset};
pub use secret::TokenSecret;
pub use secret_object::SecretObject;
pub use token::BootstrapToken;
pub use usage::Usage;
