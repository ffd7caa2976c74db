//! The k8s-openapi bridge, for k8s-openapi 0.29 (feature `k8s-openapi`) and 0.28 (feature
//! `k8s-openapi-0-28`; run with `--features k8s-openapi-0-28,k8s-openapi-0-28/latest`): every object converts to the typed k8s-openapi object whose JSON is
//! exactly what this crate writes, and back where the crate reads it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

macro_rules! bridge_tests {
    ($k:ident, $m:ident) => {
        mod $m {
            use std::collections::BTreeMap;

            use clusterinfo::{
                ClusterInfoConfigMap, Error, cluster_info_role, cluster_info_role_binding,
                node_bootstrap_objects,
            };
            use $k::api::core::v1::ConfigMap;
            use $k::api::rbac::v1 as rbac;

            fn json(v: &impl serde::Serialize) -> serde_json::Value {
                serde_json::to_value(v).unwrap()
            }

            #[test]
            fn k8s_openapi_configmap_round_trip() {
                let mut cm = ClusterInfoConfigMap::new("apiVersion: v1\n");
                let mut data = cm.data().clone();
                data.insert("jws-kubeconfig-abcdef".into(), "eyJ..sig".into());
                cm.set_data(data);
                cm.set_resource_version(Some("42".into()));
                let theirs = ConfigMap::from(&cm);
                // k8s-openapi's JSON (apiVersion/kind added by its Serialize) is the JSON we write.
                let ours: serde_json::Value = serde_json::from_str(&cm.to_json()).unwrap();
                assert_eq!(json(&theirs), ours);
                assert_eq!(ClusterInfoConfigMap::try_from(&theirs).unwrap(), cm);
            }

            #[test]
            fn k8s_openapi_configmap_nil_data_and_wrong_name() {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some("cluster-info".into());
                cm.metadata.namespace = Some("kube-public".into());
                let ours = ClusterInfoConfigMap::try_from(&cm).unwrap();
                assert_eq!(ours.data(), &BTreeMap::new());
                assert_eq!(ours.kubeconfig(), None);
                cm.metadata.namespace = Some("default".into());
                assert!(matches!(
                    ClusterInfoConfigMap::try_from(&cm).unwrap_err(),
                    Error::InvalidConfigMap { .. }
                ));
            }

            #[test]
            fn k8s_openapi_rbac_objects_are_ours_byte_for_byte() {
                let role = cluster_info_role();
                let k8s_role = rbac::Role::try_from(&role).unwrap();
                let ours: serde_json::Value = serde_json::from_str(&role.to_json()).unwrap();
                assert_eq!(json(&k8s_role), ours);

                let binding = cluster_info_role_binding();
                let k8s_binding = rbac::RoleBinding::try_from(&binding).unwrap();
                let ours: serde_json::Value = serde_json::from_str(&binding.to_json()).unwrap();
                assert_eq!(json(&k8s_binding), ours);

                let (roles, bindings) =
                    node_bootstrap_objects("system:bootstrappers:kubeadm:default-node-token");
                for r in &roles {
                    let ours: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
                    let theirs = match r.kind() {
                        "ClusterRole" => json(&rbac::ClusterRole::try_from(r).unwrap()),
                        _ => json(&rbac::Role::try_from(r).unwrap()),
                    };
                    assert_eq!(theirs, ours);
                }
                for b in &bindings {
                    let ours: serde_json::Value = serde_json::from_str(&b.to_json()).unwrap();
                    let theirs = match b.kind() {
                        "ClusterRoleBinding" => {
                            json(&rbac::ClusterRoleBinding::try_from(b).unwrap())
                        }
                        _ => json(&rbac::RoleBinding::try_from(b).unwrap()),
                    };
                    assert_eq!(theirs, ours);
                }
            }

            #[test]
            fn k8s_openapi_rbac_kind_mismatch_is_an_error() {
                let role = cluster_info_role();
                assert_eq!(
                    rbac::ClusterRole::try_from(&role).unwrap_err(),
                    Error::WrongKind {
                        expected: "ClusterRole",
                        found: "Role"
                    }
                );
                let binding = cluster_info_role_binding();
                assert!(matches!(
                    rbac::ClusterRoleBinding::try_from(&binding).unwrap_err(),
                    Error::WrongKind { .. }
                ));
            }
        }
    };
}

#[cfg(feature = "k8s-openapi")]
bridge_tests!(k8s_openapi, v0_29);
#[cfg(feature = "k8s-openapi-0-28")]
bridge_tests!(k8s_openapi_0_28, v0_28);
