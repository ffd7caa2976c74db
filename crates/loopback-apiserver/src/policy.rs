//! The default policy objects the double creates at start, as kube-apiserver's RBAC bootstrap
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`) and `kubeadm init` create them: the
//! roles users bind to (`cluster-admin`, and `admin`, `edit`, `view` aggregated from
//! `system:aggregate-to-*` with Kubernetes' rules whole), and the system roles and bindings
//! for what the double serves. They are ordinary objects: a test may read, change or delete
//! them.

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

fn metadata(name: &str, defaults: bool, labels: &[(&str, &str)]) -> Value {
    if defaults {
        let mut all = serde_json::Map::new();
        all.insert(
            "kubernetes.io/bootstrapping".to_owned(),
            Value::String(BOOTSTRAPPING.to_owned()),
        );
        for (k, v) in labels {
            all.insert((*k).to_owned(), Value::String((*v).to_owned()));
        }
        json!({
            "name": name,
            "labels": all,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        })
    } else {
        json!({"name": name})
    }
}

/// The label `admin` aggregates the roles that carry it by.
const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// The label `edit` aggregates by.
const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// The label `view` aggregates by.
const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The bootstrap policy's verb sets (`Read`, `Write`, `ReadWrite`), sorted as Kubernetes
/// stores them.
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Labels, as `(key, value)`.
type Labels = &'static [(&'static str, &'static str)];

/// The aggregated ClusterRoles users bind to: `(name, the label it aggregates by, its own
/// labels)`. Their rules are empty at creation; the aggregation controller
/// (in the store) fills them from the roles that carry the label.
const AGGREGATED: [(&str, &str, Labels); 3] = [
    ("admin", AGGREGATE_TO_ADMIN, &[]),
    ("edit", AGGREGATE_TO_EDIT, &[(AGGREGATE_TO_ADMIN, "true")]),
    ("view", AGGREGATE_TO_VIEW, &[(AGGREGATE_TO_EDIT, "true")]),
];

/// The roles aggregated into `admin`, `edit` and `view`: `(name, label, rules)`, Kubernetes'
/// rules whole (rules on resources the double does not serve are harmless, and a policy read
/// back from the double equals a cluster's).
fn aggregated_to() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    vec![
        (
            "system:aggregate-to-admin",
            AGGREGATE_TO_ADMIN,
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    READ_WRITE,
                ),
            ],
        ),
        (
            "system:aggregate-to-edit",
            AGGREGATE_TO_EDIT,
            vec![
                rule(
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    READ,
                ),
                rule(&[""], &["serviceaccounts"], &["impersonate"]),
                rule(
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    WRITE,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
                rule(&["batch"], &["cronjobs", "jobs"], WRITE),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                    WRITE,
                ),
                rule(&["policy"], &["poddisruptionbudgets"], WRITE),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                    WRITE,
                ),
                rule(&["coordination.k8s.io"], &["leases"], READ_WRITE),
            ],
        ),
        (
            "system:aggregate-to-view",
            AGGREGATE_TO_VIEW,
            vec![
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    READ,
                ),
                rule(
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    READ,
                ),
                rule(&[""], &["namespaces"], READ),
                rule(&["discovery.k8s.io"], &["endpointslices"], READ),
                rule(
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    READ,
                ),
                rule(
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                    READ,
                ),
                rule(
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                    READ,
                ),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                    READ,
                ),
                rule(
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                    READ,
                ),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                    READ,
                ),
            ],
        ),
    ]
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
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
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
    for (name, label, labels) in AGGREGATED {
        store.create(
            Resource::ClusterRoles,
            "",
            json!({
                "metadata": metadata(name, true, labels),
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
            }),
            false,
            now,
        )?;
    }
    for (name, label, rules) in aggregated_to() {
        store.create(
            Resource::ClusterRoles,
            "",
            json!({"metadata": metadata(name, true, &[(label, "true")]), "rules": rules}),
            false,
            now,
        )?;
    }
    for (name, defaults, rules) in cluster_roles() {
        store.create(
            Resource::ClusterRoles,
            "",
            json!({"metadata": metadata(name, defaults, &[]), "rules": rules}),
            false,
            now,
        )?;
    }
    for (name, defaults, role, subjects) in cluster_role_bindings() {
        store.create(
            Resource::ClusterRoleBindings,
            "",
            json!({
                "metadata": metadata(name, defaults, &[]),
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
