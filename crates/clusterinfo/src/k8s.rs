//! Interop with k8s-openapi's `ConfigMap` and RBAC types (features `k8s-openapi` for
//! k8s-openapi 0.29, `k8s-openapi-0-28` for 0.28). Both lines share one implementation,
//! instantiated for each crate.

use crate::ClusterInfoConfigMap;
use crate::configmap::{CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE};
use crate::error::Error;
use crate::rbac::{PolicyRule, Role, RoleBinding, Subject};

/// The parts of a ConfigMap this crate reads, from any k8s-openapi line.
fn configmap_from_parts(
    name: Option<&str>,
    namespace: Option<&str>,
    resource_version: Option<&str>,
    data: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<ClusterInfoConfigMap, Error> {
    if name.is_some_and(|n| n != CLUSTER_INFO_NAME) {
        return Err(Error::InvalidConfigMap {
            reason: "metadata.name is not cluster-info",
        });
    }
    if namespace.is_some_and(|n| n != CLUSTER_INFO_NAMESPACE) {
        return Err(Error::InvalidConfigMap {
            reason: "metadata.namespace is not kube-public",
        });
    }
    let mut cm = ClusterInfoConfigMap::from_data(data.cloned().unwrap_or_default());
    cm.set_resource_version(resource_version.map(str::to_owned));
    Ok(cm)
}

fn expect_kind(found: &'static str, expected: &'static str) -> Result<(), Error> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::WrongKind { expected, found })
    }
}

macro_rules! bridge {
    ($k:ident) => {
        impl From<&RoleBinding> for $k::api::rbac::v1::RoleRef {
            fn from(b: &RoleBinding) -> Self {
                $k::api::rbac::v1::RoleRef {
                    api_group: Some(b.role_ref_api_group().to_owned()),
                    kind: b.role_ref_kind().to_owned(),
                    name: b.role_ref_name().to_owned(),
                }
            }
        }

        impl TryFrom<&$k::api::core::v1::ConfigMap> for ClusterInfoConfigMap {
            type Error = Error;

            /// Takes `data` and `metadata.resourceVersion`; a ConfigMap without `data` (Go's
            /// nil map) has no keys.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidConfigMap`] when the name or namespace is set and is not that of
            /// `kube-public/cluster-info`.
            fn try_from(cm: &$k::api::core::v1::ConfigMap) -> Result<Self, Error> {
                configmap_from_parts(
                    cm.metadata.name.as_deref(),
                    cm.metadata.namespace.as_deref(),
                    cm.metadata.resource_version.as_deref(),
                    cm.data.as_ref(),
                )
            }
        }

        impl From<&ClusterInfoConfigMap> for $k::api::core::v1::ConfigMap {
            /// `kube-public/cluster-info` with the data and, when known, the resourceVersion
            /// (so an update is a compare-and-swap).
            fn from(cm: &ClusterInfoConfigMap) -> Self {
                $k::api::core::v1::ConfigMap {
                    metadata: $k::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(CLUSTER_INFO_NAME.to_owned()),
                        namespace: Some(CLUSTER_INFO_NAMESPACE.to_owned()),
                        resource_version: cm.resource_version().map(str::to_owned),
                        ..Default::default()
                    },
                    data: Some(cm.data().clone()),
                    ..Default::default()
                }
            }
        }

        impl From<&PolicyRule> for $k::api::rbac::v1::PolicyRule {
            fn from(r: &PolicyRule) -> Self {
                $k::api::rbac::v1::PolicyRule {
                    api_groups: Some(r.api_groups().to_vec()),
                    resources: Some(r.resources().to_vec()),
                    resource_names: (!r.resource_names().is_empty())
                        .then(|| r.resource_names().to_vec()),
                    verbs: r.verbs().to_vec(),
                    ..Default::default()
                }
            }
        }

        impl From<&Subject> for $k::api::rbac::v1::Subject {
            fn from(s: &Subject) -> Self {
                $k::api::rbac::v1::Subject {
                    api_group: Some(s.api_group().to_owned()),
                    kind: s.kind().to_owned(),
                    name: s.name().to_owned(),
                    namespace: None,
                }
            }
        }

        impl TryFrom<&Role> for $k::api::rbac::v1::Role {
            type Error = Error;

            /// # Errors
            ///
            /// [`Error::WrongKind`] for a ClusterRole.
            fn try_from(r: &Role) -> Result<Self, Error> {
                expect_kind(r.kind(), "Role")?;
                Ok($k::api::rbac::v1::Role {
                    metadata: $k::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(r.name().to_owned()),
                        namespace: r.namespace().map(str::to_owned),
                        ..Default::default()
                    },
                    rules: Some(r.rules().iter().map(Into::into).collect()),
                })
            }
        }

        impl TryFrom<&Role> for $k::api::rbac::v1::ClusterRole {
            type Error = Error;

            /// # Errors
            ///
            /// [`Error::WrongKind`] for a namespaced Role.
            fn try_from(r: &Role) -> Result<Self, Error> {
                expect_kind(r.kind(), "ClusterRole")?;
                Ok($k::api::rbac::v1::ClusterRole {
                    metadata: $k::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(r.name().to_owned()),
                        ..Default::default()
                    },
                    rules: Some(r.rules().iter().map(Into::into).collect()),
                    ..Default::default()
                })
            }
        }

        impl TryFrom<&RoleBinding> for $k::api::rbac::v1::RoleBinding {
            type Error = Error;

            /// # Errors
            ///
            /// [`Error::WrongKind`] for a ClusterRoleBinding.
            fn try_from(b: &RoleBinding) -> Result<Self, Error> {
                expect_kind(b.kind(), "RoleBinding")?;
                Ok($k::api::rbac::v1::RoleBinding {
                    metadata: $k::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(b.name().to_owned()),
                        namespace: b.namespace().map(str::to_owned),
                        ..Default::default()
                    },
                    role_ref: b.into(),
                    subjects: Some(b.subjects().iter().map(Into::into).collect()),
                })
            }
        }

        impl TryFrom<&RoleBinding> for $k::api::rbac::v1::ClusterRoleBinding {
            type Error = Error;

            /// # Errors
            ///
            /// [`Error::WrongKind`] for a namespaced RoleBinding.
            fn try_from(b: &RoleBinding) -> Result<Self, Error> {
                expect_kind(b.kind(), "ClusterRoleBinding")?;
                Ok($k::api::rbac::v1::ClusterRoleBinding {
                    metadata: $k::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        name: Some(b.name().to_owned()),
                        ..Default::default()
                    },
                    role_ref: b.into(),
                    subjects: Some(b.subjects().iter().map(Into::into).collect()),
                })
            }
        }
    };
}

#[cfg(feature = "k8s-openapi")]
bridge!(k8s_openapi);
#[cfg(feature = "k8s-openapi-0-28")]
bridge!(k8s_openapi_0_28);
