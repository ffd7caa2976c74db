//! Escalation prevention on writes of Roles, ClusterRoles and bindings, as kube-apiserver's RBAC
//! registry (`pkg/registry/rbac/*/policybased`) decides it: a user may write a role only with
//! rules they hold (or the `escalate` verb on it), and a binding only to a role whose rules they
//! hold (or the `bind` verb on it); `system:masters` may always.

use delegated_auth::{Attributes, ResourceAttributes, UserInfo};
use serde_json::Value;

use super::auth;
use super::rbac::{self, Decision, Policy, PolicyRule, RoleRef};
use super::status::ApiError;
use super::store::{Resource, Store};

/// Whether the write of `object` (replacing `old`, on update) of `resource` by `user` grants
/// nothing `user` does not hold; else the 403 kube-apiserver answers.
pub(crate) fn confirm(
    store: &Store,
    resource: Resource,
    user: &UserInfo,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    // kube's `EscalationAllowed`: the privileged group.
    if user.groups.iter().any(|g| g == auth::MASTERS) {
        return Ok(());
    }
    // kube's `IsOnlyMutatingGCFields`: owner references and finalizers may always change.
    if old.is_some_and(|old| without_gc_fields(old) == without_gc_fields(object)) {
        return Ok(());
    }
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let name = text("/metadata/name");
    let namespace = text("/metadata/namespace");
    let allowed = |verb: &str, plural: &str, target: &str| {
        let attrs = Attributes::resource(
            user.clone(),
            verb,
            ResourceAttributes::new(rbac::GROUP, "*", plural)
                .in_namespace(namespace)
                .with_name(target),
        );
        matches!(auth::authorize(store, &attrs), Decision::Allow(_))
    };
    let policy = Policy::from_store(store);
    let rules: Vec<PolicyRule> = match resource {
        Resource::Roles | Resource::ClusterRoles => {
            if allowed("escalate", resource.plural(), name) {
                return Ok(());
            }
            if resource == Resource::ClusterRoles && object.get("aggregationRule").is_some() {
                return Err(ApiError::forbidden(
                    resource.qualified(),
                    Some(name),
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
            object
                .get("rules")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default()
        }
        Resource::RoleBindings | Resource::ClusterRoleBindings => {
            let role_ref: RoleRef = object
                .get("roleRef")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            let plural = if role_ref.kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if allowed("bind", plural, &role_ref.name) {
                return Ok(());
            }
            policy.role_rules(&role_ref, namespace).map_err(|_| {
                let qualified = if role_ref.kind == "Role" {
                    Resource::Roles.qualified()
                } else {
                    Resource::ClusterRoles.qualified()
                };
                ApiError::not_found(qualified, &role_ref.name)
            })?
        }
        _ => return Ok(()),
    };
    let held = policy.rules_for(user, namespace);
    let missing = rbac::missing_rules(&held.rules, &rules)
        .map_err(|e| ApiError::forbidden(resource.qualified(), Some(name), &e.to_string()))?;
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::forbidden(
        resource.qualified(),
        Some(name),
        &rbac::escalation_message(user, &missing, &held.errors),
    ))
}

/// The object without the fields the garbage collector changes (and those the server sets).
fn without_gc_fields(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "ownerReferences",
            "finalizers",
            "resourceVersion",
            "managedFields",
            "generation",
        ] {
            meta.remove(field);
        }
    }
    object
}
