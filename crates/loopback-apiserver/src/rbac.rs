//! RBAC over the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, decided by
//! `delegated_auth`'s evaluator ([`delegated_auth::Policy`]: rule matching, subjects,
//! `rules_for`, aggregation, the escalation check), as kube-apiserver's RBAC authorizer and
//! registry decide. This module only reads the policy objects from the store, resolves a
//! binding's role for the escalation check, words the registry's messages, and validates
//! writes: the double's own authorization, its SubjectAccessReviews, rules reviews, escalation
//! checks and CSR approver all come here.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use delegated_auth::{Attributes, RbacObjects, UserInfo};
pub(crate) use delegated_auth::{PolicyRule, RoleRef};
use serde::Deserialize;
use serde_json::Value;

use super::status::{ApiError, FieldError};
use super::store::{Resource, Store};

/// The API group of the policy objects.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// kube's `CompactString` of a rule: `{APIGroups:["g"], Resources:["r"], Verbs:["get"]}`, the
/// non-empty fields only.
pub(crate) fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (name, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("ResourceNames", &rule.resource_names),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{name}:{}", go_quoted_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// A binding's subject, as validation reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Subject {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason (`RBAC: allowed by ClusterRoleBinding ...`).
    Allow(String),
    /// No binding grants it; the reason is empty unless some role could not be resolved.
    NoOpinion(String),
}

/// The rules a user holds in a namespace, and whether some could not be resolved.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    pub(crate) rules: Vec<PolicyRule>,
    /// The resolution errors (a binding to a missing role), as kube phrases them.
    pub(crate) errors: Vec<String>,
}

/// The [`Policy`] built from a store's RBAC objects, kept until one of them changes (the store
/// calls [`PolicyCache::invalidate`] on every write or delete of a Role, ClusterRole,
/// RoleBinding or ClusterRoleBinding), so requests do not rebuild it.
#[derive(Debug, Default)]
pub(crate) struct PolicyCache {
    built: Mutex<Option<Arc<Policy>>>,
}

impl PolicyCache {
    /// Forgets the built policy: the next request builds it from the store again.
    pub(crate) fn invalidate(&mut self) {
        *self.built.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The policy objects, read from the store, and the evaluator over them.
#[derive(Debug)]
pub(crate) struct Policy {
    objects: RbacObjects,
    evaluator: delegated_auth::Policy,
}

impl Policy {
    /// The Roles, ClusterRoles, RoleBindings and ClusterRoleBindings the store holds, with the
    /// aggregated ClusterRoles' rules computed as kube-controller-manager's aggregation
    /// controller writes them (objects that do not parse are skipped: validation keeps them
    /// out).
    ///
    /// The policy is built once and kept in the store's [`PolicyCache`] until an RBAC object
    /// is written or deleted.
    pub(crate) fn from_store(store: &Store) -> Arc<Policy> {
        let mut built = store
            .policy
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match &*built {
            Some(policy) => Arc::clone(policy),
            None => {
                let policy = Arc::new(Policy::build(store));
                *built = Some(Arc::clone(&policy));
                policy
            }
        }
    }

    /// The policy of the objects `store` holds now.
    fn build(store: &Store) -> Policy {
        let mut objects = RbacObjects::new();
        for resource in [
            Resource::Roles,
            Resource::ClusterRoles,
            Resource::RoleBindings,
            Resource::ClusterRoleBindings,
        ] {
            for object in store.list(resource, None) {
                if let Ok(json) = serde_json::to_vec(&object) {
                    let _ = objects.add_json(&json);
                }
            }
        }
        if delegated_auth::aggregate_cluster_roles(&mut objects.cluster_roles).is_err() {
            tracing::debug!("an aggregationRule does not convert; no role aggregated");
        }
        let evaluator = delegated_auth::Policy::new(&objects);
        Policy { objects, evaluator }
    }

    /// The decision on `attrs`.
    pub(crate) fn authorize(&self, attrs: &Attributes) -> Decision {
        let decision = self.evaluator.authorize(attrs);
        if decision.is_allowed() {
            Decision::Allow(decision.reason().to_owned())
        } else {
            Decision::NoOpinion(decision.reason().to_owned())
        }
    }

    /// Every rule `user` holds in `namespace` (the cluster scope when empty): the rules of the
    /// ClusterRoleBindings, then of the namespace's RoleBindings (kube's `RulesFor`).
    pub(crate) fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let held = self.evaluator.rules_for(user, namespace);
        Rules {
            rules: held.rules,
            errors: held.evaluation_error.into_iter().collect(),
        }
    }

    /// The rules of the role a binding in `namespace` refers to (kube's
    /// `GetRoleReferenceRules`).
    pub(crate) fn role_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .objects
                .roles
                .iter()
                .find(|r| r.metadata.name == role_ref.name && r.metadata.namespace == namespace)
                .map(|r| r.rules.clone())
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {:?} not found",
                        role_ref.name
                    )
                }),
            "ClusterRole" => self
                .objects
                .cluster_roles
                .iter()
                .find(|r| r.metadata.name == role_ref.name)
                .map(|r| r.rules.clone())
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        role_ref.name
                    )
                }),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }
}

/// The rules of `requested` that `owner` does not cover, as kube-apiserver lists them in an
/// escalation error: broken down by the evaluator, then compacted (simple resource rules merge
/// their verbs) and sorted. `Err` when the request expands beyond the evaluator's bound.
pub(crate) fn missing_rules(
    owner: &[PolicyRule],
    requested: &[PolicyRule],
) -> Result<Vec<PolicyRule>, delegated_auth::Error> {
    let missing = delegated_auth::uncovered_rules(owner, requested)?;
    let mut compacted: Vec<PolicyRule> = Vec::new();
    for rule in missing {
        let simple = rule.resource_names.is_empty() && !rule.resources.is_empty();
        let same = compacted.iter_mut().find(|c| {
            simple
                && c.resource_names.is_empty()
                && c.api_groups == rule.api_groups
                && c.resources == rule.resources
        });
        match same {
            Some(c) => {
                for v in rule.verbs {
                    if !c.verbs.contains(&v) {
                        c.verbs.push(v);
                    }
                }
            }
            None => compacted.push(rule),
        }
    }
    compacted.sort_by_key(compact_string);
    Ok(compacted)
}

/// kube's escalation sentence: `user "u" (groups=["a" "b"]) is attempting to grant RBAC
/// permissions not currently held:\n{...}\n{...}`, with the resolution errors after.
pub(crate) fn escalation_message(
    user: &UserInfo,
    missing: &[PolicyRule],
    errors: &[String],
) -> String {
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted_list(&user.groups),
        missing
            .iter()
            .map(compact_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    if !errors.is_empty() {
        let _ = write!(message, "; resolution errors: [{}]", errors.join(" "));
    }
    message
}

/// Validation of a Role, ClusterRole, RoleBinding or ClusterRoleBinding as kube-apiserver's RBAC
/// validation words it; `old` is the stored object on update (`roleRef` cannot change).
pub(crate) fn validate(
    resource: Resource,
    object: &Value,
    name: &str,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    match resource {
        Resource::Roles | Resource::ClusterRoles => {
            let rules = object.get("rules");
            let list = match rules {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list.clone(),
                Some(_) => {
                    return Err(ApiError::bad_request("rules must be a list"));
                }
            };
            for (i, rule) in list.iter().enumerate() {
                let Ok(rule) = serde_json::from_value::<PolicyRule>(rule.clone()) else {
                    return Err(ApiError::bad_request(format!(
                        "rules[{i}] is not a PolicyRule"
                    )));
                };
                validate_rule(&rule, i, resource == Resource::Roles, &mut errors);
            }
        }
        Resource::RoleBindings | Resource::ClusterRoleBindings => {
            let role_ref: RoleRef = object
                .get("roleRef")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            let kinds: &[&str] = if resource == Resource::RoleBindings {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            if role_ref.api_group != GROUP {
                errors.push(FieldError::not_supported(
                    "roleRef.apiGroup",
                    &shown(&role_ref.api_group),
                    &[GROUP],
                ));
            }
            if !kinds.contains(&role_ref.kind.as_str()) {
                errors.push(FieldError::not_supported(
                    "roleRef.kind",
                    &shown(&role_ref.kind),
                    kinds,
                ));
            }
            if role_ref.name.is_empty() {
                errors.push(FieldError::required("roleRef.name"));
            }
            if let Some(old) = old {
                let before: RoleRef = old
                    .get("roleRef")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .unwrap_or_default();
                if before != role_ref {
                    errors.push(FieldError::invalid(
                        "roleRef",
                        &format!(
                            "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                            shown(&role_ref.api_group),
                            shown(&role_ref.kind),
                            shown(&role_ref.name)
                        ),
                        "cannot change roleRef",
                    ));
                }
            }
            let subjects = match object.get("subjects") {
                None | Some(Value::Null) => Vec::new(),
                Some(s) => serde_json::from_value::<Vec<Subject>>(s.clone())
                    .map_err(|_| ApiError::bad_request("subjects must be a list of Subjects"))?,
            };
            for (i, s) in subjects.iter().enumerate() {
                if s.name.is_empty() {
                    errors.push(FieldError::required(format!("subjects[{i}].name")));
                }
                if !["User", "Group", "ServiceAccount"].contains(&s.kind.as_str()) {
                    errors.push(FieldError::not_supported(
                        format!("subjects[{i}].kind"),
                        &shown(&s.kind),
                        &["ServiceAccount", "User", "Group"],
                    ));
                }
                if s.kind == "ServiceAccount"
                    && s.namespace.is_empty()
                    && resource == Resource::ClusterRoleBindings
                {
                    errors.push(FieldError::required(format!("subjects[{i}].namespace")));
                }
            }
        }
        _ => {}
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(
        resource.kind(),
        GROUP,
        &shown(name),
        &errors,
    ))
}

fn validate_rule(rule: &PolicyRule, i: usize, namespaced: bool, errors: &mut Vec<FieldError>) {
    if rule.verbs.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        if namespaced {
            errors.push(FieldError::invalid(
                format!("rules[{i}].nonResourceURLs"),
                &format!("{:?}", rule.non_resource_urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty() || !rule.resources.is_empty() {
            errors.push(FieldError::invalid(
                format!("rules[{i}].nonResourceURLs"),
                &format!("{:?}", rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if rule.api_groups.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Whether the user-facing text of a value fits in a message (at most 253 characters).
fn shown(s: &str) -> String {
    s.chars().take(253).collect()
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quoted_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_kept_until_an_rbac_object_changes() {
        use delegated_auth::ResourceAttributes;
        use serde_json::json;
        let now = std::time::SystemTime::UNIX_EPOCH;
        let mut store = Store::new(false);
        let jane_lists = || {
            Attributes::resource(
                UserInfo::new("jane"),
                "list",
                ResourceAttributes::new("", "v1", "namespaces"),
            )
        };
        let allowed = |p: &Policy| matches!(p.authorize(&jane_lists()), Decision::Allow(_));
        let first = Policy::from_store(&store);
        assert!(!allowed(&first));
        assert!(Arc::ptr_eq(&first, &Policy::from_store(&store)));
        // Another object does not rebuild it.
        store
            .create(
                Resource::Namespaces,
                "",
                json!({"metadata": {"name": "other"}}),
                false,
                now,
            )
            .unwrap();
        assert!(Arc::ptr_eq(&first, &Policy::from_store(&store)));
        // A ClusterRole and its binding are seen by the next decision.
        store
            .create(
                Resource::ClusterRoles,
                "",
                json!({"metadata": {"name": "ns-reader"}, "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]}),
                false,
                now,
            )
            .unwrap();
        assert!(!allowed(&Policy::from_store(&store)));
        store
            .create(
                Resource::ClusterRoleBindings,
                "",
                json!({
                    "metadata": {"name": "jane"},
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "ns-reader"},
                    "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "jane"}],
                }),
                false,
                now,
            )
            .unwrap();
        let granted = Policy::from_store(&store);
        assert!(!Arc::ptr_eq(&first, &granted));
        assert!(allowed(&granted));
        assert!(Arc::ptr_eq(&granted, &Policy::from_store(&store)));
        // Deleting the binding takes it back.
        store
            .delete(
                Resource::ClusterRoleBindings,
                "",
                "jane",
                &Default::default(),
                false,
                now,
            )
            .unwrap();
        assert!(!allowed(&Policy::from_store(&store)));
    }

    #[test]
    fn missing_rules_are_broken_down_compacted_and_sorted() {
        let owner = vec![PolicyRule::new(["get"]).groups([""]).resources(["secrets"])];
        let requested = vec![
            PolicyRule::new(["get", "list", "delete"])
                .groups([""])
                .resources(["secrets", "configmaps"]),
        ];
        let missing: Vec<String> = missing_rules(&owner, &requested)
            .unwrap()
            .iter()
            .map(compact_string)
            .collect();
        assert_eq!(
            missing,
            [
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["list" "delete"]}"#,
            ]
        );
        let all = PolicyRule::new(["*"]).groups(["*"]).resources(["*"]);
        assert!(missing_rules(&[all], &requested).unwrap().is_empty());
        assert!(missing_rules(&owner, &[]).unwrap().is_empty());
    }
}
