//! `k8s-openapi` interop: the same tests for k8s-openapi 0.29 (feature `k8s-openapi`) and 0.28
//! (feature `k8s-openapi-0-28`; run with `--features k8s-openapi-0-28,k8s-openapi-0-28/latest`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

macro_rules! bridge_tests {
    ($k:ident, $m:ident) => {
        mod $m {
            use std::collections::BTreeMap;

            use bootstrap_token::{AuthOutcome, Error, SecretObject, authenticate};
            use $k::ByteString;
            use $k::api::core::v1::Secret;
            use $k::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn k8s_secret() -> Secret {
                Secret {
                    metadata: ObjectMeta {
                        name: Some("bootstrap-token-abcdef".into()),
                        namespace: Some("kube-system".into()),
                        uid: Some("u-1".into()),
                        ..ObjectMeta::default()
                    },
                    type_: Some("bootstrap.kubernetes.io/token".into()),
                    data: Some(BTreeMap::from([
                        ("token-id".to_owned(), ByteString(b"abcdef".to_vec())),
                        (
                            "token-secret".to_owned(),
                            ByteString(b"0123456789abcdef".to_vec()),
                        ),
                    ])),
                    string_data: Some(BTreeMap::from([(
                        "usage-bootstrap-authentication".to_owned(),
                        "true".to_owned(),
                    )])),
                    ..Secret::default()
                }
            }

            #[test]
            fn k8s_openapi_round_trip() {
                let ours = SecretObject::try_from(&k8s_secret()).unwrap();
                assert_eq!(ours.uid(), Some("u-1"));
                assert_eq!(
                    ours.data("usage-bootstrap-authentication"),
                    Some(&b"true"[..])
                );
                let out = authenticate("abcdef.0123456789abcdef", std::time::UNIX_EPOCH, |_| {
                    Ok::<_, ()>(Some(&ours))
                })
                .unwrap();
                assert!(matches!(out, AuthOutcome::Authenticated(_)));
                let back = Secret::from(&ours);
                assert_eq!(SecretObject::try_from(&back).unwrap(), ours);
                // The same JSON as ours.
                let theirs = serde_json::to_value(&back).unwrap();
                let mine: serde_json::Value =
                    serde_json::from_str(&ours.to_json().unwrap()).unwrap();
                assert_eq!(theirs["data"], mine["data"]);
                assert_eq!(theirs["metadata"], mine["metadata"]);
                assert_eq!(theirs["type"], mine["type"]);
            }

            #[test]
            fn k8s_openapi_deletion_and_bad_keys() {
                let mut s = k8s_secret();
                s.metadata.deletion_timestamp = Some($k::apimachinery::pkg::apis::meta::v1::Time(
                    $k::jiff::Timestamp::from_second(1_704_164_645).unwrap(),
                ));
                let ours = SecretObject::try_from(&s).unwrap();
                assert_eq!(ours.deletion_timestamp(), Some("2024-01-02T03:04:05Z"));
                assert_eq!(
                    Secret::from(&ours).metadata.deletion_timestamp,
                    s.metadata.deletion_timestamp
                );
                s.data
                    .as_mut()
                    .unwrap()
                    .insert("a/b".into(), ByteString(vec![]));
                assert_eq!(
                    SecretObject::try_from(&s).unwrap_err(),
                    Error::InvalidDataKey
                );
            }
        }
    };
}

#[cfg(feature = "k8s-openapi")]
bridge_tests!(k8s_openapi, v0_29);
#[cfg(feature = "k8s-openapi-0-28")]
bridge_tests!(k8s_openapi_0_28, v0_28);
