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
mod rbac;
#[cfg(feature = "yaml")]
mod yaml;
pub use rbac::{
    AggregationRule, ClusterRole, ClusterRoleBinding, LabelSelector, LabelSelectorRequirement,
    MAX_RBAC_DOCUMENT_BYTES, MAX_RULE_BREAKDOWN, ObjectMeta, Policy, PolicyRule, RBAC_API_VERSION,
    RbacDecision, RbacObjects, Role, RoleBinding, RoleRef, Subject, UserRules,
    aggregate_cluster_roles, covers, uncovered_rules,
};
mod kubelet;
pub use kubelet::{KubeletAuthz, kubelet_attributes};
mod path_pattern;
mod rbac_proxy_config;
pub use rbac_proxy_config::{
    MAX_PROXY_CONFIG_BYTES, PathRule, RbacProxyConfig, StaticAuthorization, StaticUser,
};
