//! The default policy objects the double creates at start, as kube-apiserver's RBAC bootstrap
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`) and `kubeadm init` create them, for
//! the resources the double serves. They are ordinary objects: a test may read, change or
//! delete them.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::status::ApiError;
use super::store::{Resource, Store};

/// The label kube-apiserver puts on its bootstrap policy.
const BOOTSTRAPPING: &str = "rbac-defaults";

/// kubeadm's default-node-token group.
pub(crate) const DEFAULT_NODE_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";

/// A resource rule.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// A non-resource rule.
fn urls(urls: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

fn metadata(name: &str, defaults: bool) -> Value {
    if defaults {
        json!({
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": BOOTSTRAPPING},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        })
    } else {
        json!({"name": name})
    }
}

/// The ClusterRoles: `(name, kube-apiserver's default (else kubeadm's), rules)`.
fn cluster_roles() -> Vec<(&'static str, bool, Vec<Value>)> {
    vec![
        (
            "cluster-admin",
            true,
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        (
            "system:discovery",
            true,
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        (
            "system:public-info-viewer",
            true,
            vec![urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )],
        ),
        (
            "system:basic-user",
            true,
            vec![
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
            ],
        ),
        (
            "system:auth-delegator",
            true,
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
            ],
        ),
        (
            "system:service-account-issuer-discovery",
            true,
            vec![urls(
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                &["get"],
            )],
        ),
        (
            "system:node-bootstrapper",
            true,
            vec![rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &["create", "get", "list", "watch"],
            )],
        ),
        (
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            true,
            vec![rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests/nodeclient"],
                &["create"],
            )],
        ),
        (
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            true,
            vec![rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests/selfnodeclient"],
                &["create"],
            )],
        ),
    ]
}

/// The ClusterRoleBindings: `(name, default, role, subjects)`.
fn cluster_role_bindings() -> Vec<(&'static str, bool, &'static str, Vec<Value>)> {
    vec![
        (
            "cluster-admin",
            true,
            "cluster-admin",
            vec![group("system:masters")],
        ),
        (
            "system:discovery",
            true,
            "system:discovery",
            vec![group("system:authenticated")],
        ),
        (
            "system:basic-user",
            true,
            "system:basic-user",
            vec![group("system:authenticated")],
        ),
        (
            "system:public-info-viewer",
            true,
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        (
            "system:service-account-issuer-discovery",
            true,
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
        // kubeadm's.
        (
            "kubeadm:cluster-admins",
            false,
            "cluster-admin",
            vec![group("kubeadm:cluster-admins")],
        ),
        // kubeadm binds the default-node-token group; the double binds every bootstrap token.
        (
            "kubeadm:kubelet-bootstrap",
            false,
            "system:node-bootstrapper",
            vec![group("system:bootstrappers")],
        ),
        (
            "kubeadm:node-autoapprove-bootstrap",
            false,
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![group(DEFAULT_NODE_TOKEN_GROUP)],
        ),
        (
            "kubeadm:node-autoapprove-certificate-rotation",
            false,
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![group("system:nodes")],
        ),
    ]
}

/// Creates the default policy in `store`.
pub(crate) fn bootstrap(store: &mut Store, now: SystemTime) -> Result<(), ApiError> {
    for (name, defaults, rules) in cluster_roles() {
        store.create(
            Resource::ClusterRoles,
            "",
            json!({"metadata": metadata(name, defaults), "rules": rules}),
            false,
            now,
        )?;
    }
    for (name, defaults, role, subjects) in cluster_role_bindings() {
        store.create(
            Resource::ClusterRoleBindings,
            "",
            json!({
                "metadata": metadata(name, defaults),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": subjects,
            }),
            false,
            now,
        )?;
    }
    // kubeadm: anyone may read kube-public/cluster-info (kubeadm binds `system:anonymous`; the
    // double also binds `system:authenticated`, so a token holder may read it too).
    let name = "kubeadm:bootstrap-signer-clusterinfo";
    store.create(
        Resource::Roles,
        clusterinfo::CLUSTER_INFO_NAMESPACE,
        json!({
            "metadata": {"name": name},
            "rules": [{
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [clusterinfo::CLUSTER_INFO_NAME],
                "verbs": ["get"],
            }],
        }),
        false,
        now,
    )?;
    store.create(
        Resource::RoleBindings,
        clusterinfo::CLUSTER_INFO_NAMESPACE,
        json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [user(super::auth::ANONYMOUS), group("system:authenticated")],
        }),
        false,
        now,
    )?;
    Ok(())
}
