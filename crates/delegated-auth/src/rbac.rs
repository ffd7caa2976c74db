//! RBAC: the `rbac.authorization.k8s.io/v1` objects, rule matching, the static authorizer,
//! aggregated ClusterRoles and the escalation check.

mod aggregation;
mod covers;
mod objects;
mod policy;
mod rule;

pub use aggregation::aggregate_cluster_roles;
pub use covers::{MAX_RULE_BREAKDOWN, covers, uncovered_rules};
pub use objects::{
    AggregationRule, ClusterRole, ClusterRoleBinding, LabelSelector, LabelSelectorRequirement,
    MAX_RBAC_DOCUMENT_BYTES, ObjectMeta, PolicyRule, RBAC_API_VERSION, RbacObjects, Role,
    RoleBinding, RoleRef, Subject,
};
pub use policy::{Policy, RbacDecision, UserRules};
