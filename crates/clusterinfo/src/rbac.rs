//! The RBAC objects a control plane creates for bootstrap tokens and cluster-info.

use serde::Serialize;

use crate::configmap::{CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE};

const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// kubeadm's name for the cluster-info Role and RoleBinding.
pub const CLUSTER_INFO_ROLE_NAME: &str = "kubeadm:bootstrap-signer-clusterinfo";
/// The group kubeadm's default node tokens carry.
pub const DEFAULT_NODE_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The anonymous user.
pub const ANONYMOUS_USER: &str = "system:anonymous";

/// One RBAC rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PolicyRule {
    verbs: Vec<String>,
    #[serde(rename = "apiGroups")]
    api_groups: Vec<String>,
    resources: Vec<String>,
    #[serde(rename = "resourceNames", skip_serializing_if = "Vec::is_empty")]
    resource_names: Vec<String>,
}

impl PolicyRule {
    /// A rule allowing `verbs` on `resources` of `api_group` (`""` is the core group),
    /// optionally only the named objects.
    pub fn new(
        verbs: &[&str],
        api_group: &str,
        resources: &[&str],
        resource_names: &[&str],
    ) -> PolicyRule {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        PolicyRule {
            verbs: own(verbs),
            api_groups: vec![api_group.to_owned()],
            resources: own(resources),
            resource_names: own(resource_names),
        }
    }

    /// The verbs allowed.
    pub fn verbs(&self) -> &[String] {
        &self.verbs
    }

    /// The API groups (`""` is the core group).
    pub fn api_groups(&self) -> &[String] {
        &self.api_groups
    }

    /// The resources.
    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// The object names the rule is limited to; empty for all.
    pub fn resource_names(&self) -> &[String] {
        &self.resource_names
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Metadata {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
}

/// A Role (namespaced) or ClusterRole, serialised as the API server's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Role {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Metadata,
    rules: Vec<PolicyRule>,
}

impl Role {
    /// A Role in `namespace`.
    pub fn namespaced(name: &str, namespace: &str, rules: Vec<PolicyRule>) -> Role {
        Role {
            kind: "Role",
            api_version: RBAC_API_VERSION,
            metadata: Metadata {
                name: name.to_owned(),
                namespace: Some(namespace.to_owned()),
            },
            rules,
        }
    }

    /// A ClusterRole.
    pub fn cluster(name: &str, rules: Vec<PolicyRule>) -> Role {
        Role {
            kind: "ClusterRole",
            api_version: RBAC_API_VERSION,
            metadata: Metadata {
                name: name.to_owned(),
                namespace: None,
            },
            rules,
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// `Role` or `ClusterRole`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The namespace of a Role; `None` for a ClusterRole.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    /// The rules.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// API-server JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// YAML, keys sorted as `kubectl -o yaml` prints them.
    pub fn to_yaml(&self) -> String {
        crate::yaml::document(&serde_json::to_value(self).unwrap_or_default())
    }
}

/// The kind of an RBAC subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubjectKind {
    /// A user.
    User,
    /// A group.
    Group,
}

/// An RBAC subject (user or group).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Subject {
    kind: &'static str,
    #[serde(rename = "apiGroup")]
    api_group: &'static str,
    name: String,
}

impl Subject {
    /// A subject of the given kind.
    pub fn new(kind: SubjectKind, name: &str) -> Subject {
        let kind = match kind {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
        };
        Subject {
            kind,
            api_group: RBAC_GROUP,
            name: name.to_owned(),
        }
    }

    /// `User` or `Group`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The subject's API group (`rbac.authorization.k8s.io`).
    pub fn api_group(&self) -> &'static str {
        self.api_group
    }

    /// The user or group name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct RoleRef {
    #[serde(rename = "apiGroup")]
    api_group: &'static str,
    kind: &'static str,
    name: String,
}

/// A RoleBinding (namespaced, to a Role) or ClusterRoleBinding (to a ClusterRole),
/// serialised as the API server's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoleBinding {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Metadata,
    subjects: Vec<Subject>,
    #[serde(rename = "roleRef")]
    role_ref: RoleRef,
}

impl RoleBinding {
    /// A RoleBinding in `namespace` granting the Role `role` to `subjects`.
    pub fn namespaced(
        name: &str,
        namespace: &str,
        role: &str,
        subjects: Vec<Subject>,
    ) -> RoleBinding {
        RoleBinding {
            kind: "RoleBinding",
            api_version: RBAC_API_VERSION,
            metadata: Metadata {
                name: name.to_owned(),
                namespace: Some(namespace.to_owned()),
            },
            subjects,
            role_ref: RoleRef {
                api_group: RBAC_GROUP,
                kind: "Role",
                name: role.to_owned(),
            },
        }
    }

    /// A ClusterRoleBinding granting the ClusterRole `cluster_role` to `subjects`.
    pub fn cluster(name: &str, cluster_role: &str, subjects: Vec<Subject>) -> RoleBinding {
        RoleBinding {
            kind: "ClusterRoleBinding",
            api_version: RBAC_API_VERSION,
            metadata: Metadata {
                name: name.to_owned(),
                namespace: None,
            },
            subjects,
            role_ref: RoleRef {
                api_group: RBAC_GROUP,
                kind: "ClusterRole",
                name: cluster_role.to_owned(),
            },
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// `RoleBinding` or `ClusterRoleBinding`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The namespace of a RoleBinding; `None` for a ClusterRoleBinding.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    /// The subjects granted the role.
    pub fn subjects(&self) -> &[Subject] {
        &self.subjects
    }

    /// The API group of the role referred to (`rbac.authorization.k8s.io`).
    pub fn role_ref_api_group(&self) -> &'static str {
        self.role_ref.api_group
    }

    /// The kind of the role referred to: `Role` or `ClusterRole`.
    pub fn role_ref_kind(&self) -> &'static str {
        self.role_ref.kind
    }

    /// The name of the role referred to.
    pub fn role_ref_name(&self) -> &str {
        &self.role_ref.name
    }

    /// API-server JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// YAML, keys sorted as `kubectl -o yaml` prints them.
    pub fn to_yaml(&self) -> String {
        crate::yaml::document(&serde_json::to_value(self).unwrap_or_default())
    }
}

/// The kube-public Role letting its subjects `get` only the `cluster-info` ConfigMap.
pub fn cluster_info_role() -> Role {
    Role::namespaced(
        CLUSTER_INFO_ROLE_NAME,
        CLUSTER_INFO_NAMESPACE,
        vec![PolicyRule::new(
            &["get"],
            "",
            &["configmaps"],
            &[CLUSTER_INFO_NAME],
        )],
    )
}

/// The kube-public RoleBinding granting [`cluster_info_role`] to `system:anonymous`.
pub fn cluster_info_role_binding() -> RoleBinding {
    RoleBinding::namespaced(
        CLUSTER_INFO_ROLE_NAME,
        CLUSTER_INFO_NAMESPACE,
        CLUSTER_INFO_ROLE_NAME,
        vec![Subject::new(SubjectKind::User, ANONYMOUS_USER)],
    )
}

/// kubeadm's node-bootstrap objects for a token group (kubeadm uses
/// [`DEFAULT_NODE_TOKEN_GROUP`]): the ClusterRole `kubeadm:get-nodes` and the
/// ClusterRoleBindings `kubeadm:kubelet-bootstrap`, `kubeadm:get-nodes`,
/// `kubeadm:node-autoapprove-bootstrap` and `kubeadm:node-autoapprove-certificate-rotation`.
///
/// ```
/// let (roles, bindings) = clusterinfo::node_bootstrap_objects(clusterinfo::DEFAULT_NODE_TOKEN_GROUP);
/// assert_eq!(roles[0].name(), "kubeadm:get-nodes");
/// assert_eq!(bindings.len(), 4);
/// assert!(bindings[0].to_json().contains("system:node-bootstrapper"));
/// ```
pub fn node_bootstrap_objects(token_group: &str) -> (Vec<Role>, Vec<RoleBinding>) {
    let group = || vec![Subject::new(SubjectKind::Group, token_group)];
    let roles = vec![Role::cluster(
        "kubeadm:get-nodes",
        vec![PolicyRule::new(&["get"], "", &["nodes"], &[])],
    )];
    let bindings = vec![
        RoleBinding::cluster(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            group(),
        ),
        RoleBinding::cluster("kubeadm:get-nodes", "kubeadm:get-nodes", group()),
        RoleBinding::cluster(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            group(),
        ),
        RoleBinding::cluster(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![Subject::new(SubjectKind::Group, "system:nodes")],
        ),
    ];
    (roles, bindings)
}
