//! The `rbac.authorization.k8s.io/v1` objects RBAC decides from, and how they are read.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Error;

/// The largest document of RBAC objects read, in bytes (a list of all of a cluster's roles and
/// bindings fits; one object is at most ~1.5 MiB in etcd).
pub const MAX_RBAC_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;

/// The API version of every RBAC object this crate reads.
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// One rule of a Role or ClusterRole (`PolicyRule`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PolicyRule {
    /// The verbs allowed (`get`, `list`, ...), `*` for all.
    #[serde(default, deserialize_with = "nullable")]
    pub verbs: Vec<String>,
    /// The API groups (empty string for the core group), `*` for all.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub api_groups: Vec<String>,
    /// The resources (`pods`, `pods/log`, `*/scale`), `*` for all.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub resources: Vec<String>,
    /// The object names allowed; empty allows every name.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub resource_names: Vec<String>,
    /// The non-resource URLs (`/healthz`, `/metrics/*`, `*`).
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A rule for `verbs`, with no groups, resources, names or URLs yet (as Kubernetes'
    /// `rbacv1helpers.NewRule`).
    #[must_use]
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(verbs: I) -> Self {
        Self {
            verbs: strings(verbs),
            ..Self::default()
        }
    }

    /// The same rule for API `groups`.
    #[must_use]
    pub fn groups<I: IntoIterator<Item = S>, S: Into<String>>(mut self, groups: I) -> Self {
        self.api_groups = strings(groups);
        self
    }

    /// The same rule for `resources`.
    #[must_use]
    pub fn resources<I: IntoIterator<Item = S>, S: Into<String>>(mut self, resources: I) -> Self {
        self.resources = strings(resources);
        self
    }

    /// The same rule for the objects `names` only.
    #[must_use]
    pub fn names<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.resource_names = strings(names);
        self
    }

    /// The same rule for non-resource `urls`.
    #[must_use]
    pub fn urls<I: IntoIterator<Item = S>, S: Into<String>>(mut self, urls: I) -> Self {
        self.non_resource_urls = strings(urls);
        self
    }
}

/// The metadata RBAC reads: name, namespace and labels.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ObjectMeta {
    /// The object's name.
    #[serde(default)]
    pub name: String,
    /// The object's namespace, empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's labels (what aggregation rules select ClusterRoles by).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub labels: BTreeMap<String, String>,
}

impl ObjectMeta {
    /// Metadata with `name` and `namespace` (empty for cluster-scoped objects).
    #[must_use]
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: namespace.into(),
            labels: BTreeMap::new(),
        }
    }
}

/// A namespaced set of rules.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Role {
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// The rules.
    #[serde(default, deserialize_with = "nullable")]
    pub rules: Vec<PolicyRule>,
}

impl Role {
    /// A Role `name` in `namespace` with `rules`.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        rules: Vec<PolicyRule>,
    ) -> Self {
        Self {
            metadata: ObjectMeta::new(name, namespace),
            rules,
        }
    }
}

/// A cluster-wide set of rules, possibly aggregated from others.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClusterRole {
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// The rules (for an aggregated ClusterRole, what the aggregation computed).
    #[serde(default, deserialize_with = "nullable")]
    pub rules: Vec<PolicyRule>,
    /// Which ClusterRoles' rules this one aggregates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation_rule: Option<AggregationRule>,
}

impl ClusterRole {
    /// A ClusterRole `name` with `rules`.
    #[must_use]
    pub fn new(name: impl Into<String>, rules: Vec<PolicyRule>) -> Self {
        Self {
            metadata: ObjectMeta::new(name, ""),
            rules,
            aggregation_rule: None,
        }
    }
}

/// The selectors of an aggregated ClusterRole.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AggregationRule {
    /// A ClusterRole matching any of these is aggregated.
    #[serde(default, deserialize_with = "nullable")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

impl AggregationRule {
    /// An aggregation rule over `selectors`.
    #[must_use]
    pub fn new(selectors: Vec<LabelSelector>) -> Self {
        Self {
            cluster_role_selectors: selectors,
        }
    }
}

/// A label selector (`metav1.LabelSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LabelSelector {
    /// Labels that must have exactly these values.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements, all of which must hold.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl LabelSelector {
    /// A selector requiring the label `key` to be `value`.
    #[must_use]
    pub fn matching(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            match_labels: BTreeMap::from([(key.into(), value.into())]),
            match_expressions: Vec::new(),
        }
    }
}

/// One requirement of a label selector: `key` `operator` (`In`, `NotIn`, `Exists`,
/// `DoesNotExist`) `values`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values, for `In` and `NotIn`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable"
    )]
    pub values: Vec<String>,
}

impl LabelSelectorRequirement {
    /// A requirement.
    #[must_use]
    pub fn new(key: impl Into<String>, operator: impl Into<String>, values: Vec<String>) -> Self {
        Self {
            key: key.into(),
            operator: operator.into(),
            values,
        }
    }
}

/// Who a binding grants to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount` (any other kind applies to no one).
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, empty for service accounts (not
    /// compared, as Kubernetes does not compare it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The user, group or service-account name.
    pub name: String,
    /// A service account's namespace; in a RoleBinding, empty means the binding's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

impl Subject {
    /// The user `name`.
    #[must_use]
    pub fn user(name: impl Into<String>) -> Self {
        Self {
            kind: "User".into(),
            api_group: "rbac.authorization.k8s.io".into(),
            name: name.into(),
            namespace: String::new(),
        }
    }

    /// The group `name`.
    #[must_use]
    pub fn group(name: impl Into<String>) -> Self {
        Self {
            kind: "Group".into(),
            ..Self::user(name)
        }
    }

    /// The service account `name` in `namespace` (empty: the RoleBinding's namespace).
    #[must_use]
    pub fn service_account(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind: "ServiceAccount".into(),
            api_group: String::new(),
            name: name.into(),
            namespace: namespace.into(),
        }
    }
}

/// The role a binding grants.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RoleRef {
    /// `rbac.authorization.k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// The role's name.
    pub name: String,
}

impl RoleRef {
    /// A reference to the Role `name` (in the binding's namespace).
    #[must_use]
    pub fn role(name: impl Into<String>) -> Self {
        Self {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.into(),
        }
    }

    /// A reference to the ClusterRole `name`.
    #[must_use]
    pub fn cluster_role(name: impl Into<String>) -> Self {
        Self {
            kind: "ClusterRole".into(),
            ..Self::role(name)
        }
    }
}

/// Grants a role to subjects within one namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RoleBinding {
    /// Name and namespace.
    pub metadata: ObjectMeta,
    /// Who is granted.
    #[serde(default, deserialize_with = "nullable")]
    pub subjects: Vec<Subject>,
    /// What is granted: a Role of this namespace, or a ClusterRole's rules in this namespace.
    pub role_ref: RoleRef,
}

impl RoleBinding {
    /// A RoleBinding `name` in `namespace` of `role_ref` to `subjects`.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        role_ref: RoleRef,
        subjects: Vec<Subject>,
    ) -> Self {
        Self {
            metadata: ObjectMeta::new(name, namespace),
            subjects,
            role_ref,
        }
    }
}

/// Grants a ClusterRole to subjects across the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClusterRoleBinding {
    /// Name.
    pub metadata: ObjectMeta,
    /// Who is granted.
    #[serde(default, deserialize_with = "nullable")]
    pub subjects: Vec<Subject>,
    /// What is granted (a ClusterRole).
    pub role_ref: RoleRef,
}

impl ClusterRoleBinding {
    /// A ClusterRoleBinding `name` of the ClusterRole `role` to `subjects`.
    #[must_use]
    pub fn new(name: impl Into<String>, role: impl Into<String>, subjects: Vec<Subject>) -> Self {
        Self {
            metadata: ObjectMeta::new(name, ""),
            subjects,
            role_ref: RoleRef::cluster_role(role),
        }
    }
}

/// Roles, ClusterRoles and their bindings, as read from documents.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RbacObjects {
    /// Roles.
    pub roles: Vec<Role>,
    /// ClusterRoles.
    pub cluster_roles: Vec<ClusterRole>,
    /// RoleBindings.
    pub role_bindings: Vec<RoleBinding>,
    /// ClusterRoleBindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

impl RbacObjects {
    /// No objects.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one JSON document: a Role, ClusterRole, RoleBinding or ClusterRoleBinding
    /// (`rbac.authorization.k8s.io/v1`), or a list of them (`kind: List` as `kubectl get -o
    /// json` prints, or `RoleList`, ... as the API returns), and adds its objects.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_RBAC_DOCUMENT_BYTES`]; [`Error::Json`] for malformed
    /// JSON, a missing required field, a duplicate field; [`Error::InvalidRbacObject`] for
    /// another kind or API version, or a list inside a list.
    pub fn add_json(&mut self, json: &[u8]) -> Result<(), Error> {
        check_len(json.len())?;
        let raw: RawObject = serde_json::from_slice(json).map_err(|e| Error::Json {
            what: "RBAC object",
            line: e.line(),
            column: e.column(),
        })?;
        self.add_raw(raw, None)
    }

    /// Reads a YAML stream (`---`-separated documents, as manifests hold them) of the objects
    /// [`add_json`](Self::add_json) reads, and adds them (feature `yaml`). Depth, nodes,
    /// aliases and documents (1,000) are bounded; duplicate keys are refused.
    ///
    /// # Errors
    ///
    /// As [`add_json`](Self::add_json), with [`Error::Yaml`] for malformed YAML or a budget
    /// exceeded.
    #[cfg(feature = "yaml")]
    pub fn add_yaml(&mut self, yaml: &[u8]) -> Result<(), Error> {
        check_len(yaml.len())?;
        let text = std::str::from_utf8(yaml).map_err(|_| Error::Yaml {
            what: "RBAC objects",
            line: 0,
            column: 0,
        })?;
        let docs: Vec<Option<RawObject>> =
            serde_saphyr::from_multiple_with_options(text, crate::yaml::options(1000)).map_err(
                |e| {
                    let (line, column) = crate::yaml::location(&e);
                    Error::Yaml {
                        what: "RBAC objects",
                        line,
                        column,
                    }
                },
            )?;
        for raw in docs.into_iter().flatten() {
            self.add_raw(raw, None)?;
        }
        Ok(())
    }

    fn add_raw(&mut self, raw: RawObject, list_kind: Option<&str>) -> Result<(), Error> {
        let kind = match (raw.kind.as_deref(), list_kind) {
            (Some(kind), _) => kind.to_owned(),
            (None, Some(item_kind)) => item_kind.to_owned(),
            (None, None) => {
                return Err(Error::InvalidRbacObject { reason: "no kind" });
            }
        };
        if let Some(items) = raw.items {
            if list_kind.is_some() {
                return Err(Error::InvalidRbacObject {
                    reason: "a list inside a list",
                });
            }
            let Some(item_kind) = kind.strip_suffix("List") else {
                return Err(Error::InvalidRbacObject {
                    reason: "items outside a list",
                });
            };
            for item in items {
                self.add_raw(item, Some(item_kind))?;
            }
            return Ok(());
        }
        match raw.api_version.as_deref() {
            Some(RBAC_API_VERSION) => {}
            None if list_kind.is_some() => {}
            _ => {
                return Err(Error::InvalidRbacObject {
                    reason: "apiVersion is not rbac.authorization.k8s.io/v1",
                });
            }
        }
        let metadata = raw.metadata.unwrap_or_default();
        let role_ref = || {
            raw.role_ref.clone().ok_or(Error::InvalidRbacObject {
                reason: "a binding without roleRef",
            })
        };
        match kind.as_str() {
            "Role" => self.roles.push(Role {
                metadata,
                rules: raw.rules,
            }),
            "ClusterRole" => self.cluster_roles.push(ClusterRole {
                metadata,
                rules: raw.rules,
                aggregation_rule: raw.aggregation_rule,
            }),
            "RoleBinding" => self.role_bindings.push(RoleBinding {
                metadata,
                subjects: raw.subjects.clone(),
                role_ref: role_ref()?,
            }),
            "ClusterRoleBinding" => self.cluster_role_bindings.push(ClusterRoleBinding {
                metadata,
                subjects: raw.subjects.clone(),
                role_ref: role_ref()?,
            }),
            _ => {
                return Err(Error::InvalidRbacObject {
                    reason: "kind is not Role, ClusterRole, RoleBinding, ClusterRoleBinding or a list of them",
                });
            }
        }
        Ok(())
    }
}

/// Any of the objects, or a list of them, before its kind is known.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawObject {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<ObjectMeta>,
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<PolicyRule>,
    aggregation_rule: Option<AggregationRule>,
    #[serde(default, deserialize_with = "nullable")]
    subjects: Vec<Subject>,
    role_ref: Option<RoleRef>,
    items: Option<Vec<RawObject>>,
}

fn check_len(len: usize) -> Result<(), Error> {
    if len > MAX_RBAC_DOCUMENT_BYTES {
        return Err(Error::TooLarge {
            what: "RBAC document",
            limit: MAX_RBAC_DOCUMENT_BYTES,
        });
    }
    Ok(())
}

fn strings<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

/// `null` read as the empty value, as Go reads it into a nil slice or map.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
