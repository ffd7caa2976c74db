#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod access_review;
mod attributes;
mod authentication_configmap;
mod bounded_json;
mod cache;
mod error;
mod requestheader;
mod service_account;
mod token;
mod token_review;
mod user;
mod x509;

pub use access_review::{
    AccessReviewKind, AccessReviewOutcome, Decision, MAX_ACCESS_REVIEW_BYTES, access_review_json,
    read_access_review,
};
pub use attributes::{Attributes, ResourceAttributes, Target};
pub use authentication_configmap::{
    AUTHENTICATION_CONFIGMAP_NAME, AUTHENTICATION_CONFIGMAP_NAMESPACE, AuthenticationConfigMap,
    MAX_CONFIGMAP_BYTES,
};
pub use cache::{
    AccessCache, AccessKey, CacheConfig, CachedToken, DEFAULT_ALLOW_CACHE_TTL, DEFAULT_CACHE_BYTES,
    DEFAULT_CACHE_ENTRIES, DEFAULT_DENY_CACHE_TTL, DEFAULT_TOKEN_CACHE_TTL, TokenCache,
    TokenCacheKey,
};
pub use error::Error;
pub use requestheader::{FrontProxyAuthenticator, MAX_CONFIGURED_HEADERS, RequestHeaderConfig};
pub use service_account::{MAX_DISCOVERY_BYTES, OidcDiscovery, ServiceAccountAuthenticator};
pub use token::{BearerToken, BearerTokenRef, MAX_TOKEN_BYTES};
pub use token_review::{
    MAX_REVIEW_AUDIENCES, MAX_REVIEW_ERROR_BYTES, MAX_TOKEN_REVIEW_BYTES, TokenReview,
    TokenReviewOutcome,
};
pub use user::UserInfo;
pub use x509::{CREDENTIAL_ID_EXTRA, ClientCa, VerifiedClientCertificate};
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
