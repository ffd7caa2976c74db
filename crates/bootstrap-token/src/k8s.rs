//! Interop with `k8s_openapi::api::core::v1::Secret` (features `k8s-openapi` for k8s-openapi
//! 0.29, `k8s-openapi-0-28` for 0.28). Both lines share one implementation, instantiated for
//! each crate.

use std::collections::BTreeMap;

use crate::constants::MAX_SECRET_DATA_LEN;
use crate::rfc3339::GoTime;
use crate::secret_object::is_valid_data_key;
use crate::{Error, SecretObject};

/// `data` with `stringData` merged over it, as the API server does, checked for valid keys and
/// the total size.
fn merged_data<'a>(
    data: Option<impl Iterator<Item = (&'a String, &'a Vec<u8>)>>,
    string_data: Option<impl Iterator<Item = (&'a String, &'a String)>>,
) -> Result<Option<BTreeMap<String, Vec<u8>>>, Error> {
    let mut out: Option<BTreeMap<String, Vec<u8>>> =
        data.map(|d| d.map(|(k, v)| (k.clone(), v.clone())).collect());
    if let Some(sd) = string_data {
        let map = out.get_or_insert_with(BTreeMap::new);
        for (k, v) in sd {
            map.insert(k.clone(), v.clone().into_bytes());
        }
    }
    if let Some(map) = &out {
        let mut total = 0usize;
        for (k, v) in map {
            if !is_valid_data_key(k) {
                return Err(Error::InvalidDataKey);
            }
            total = total.saturating_add(k.len()).saturating_add(v.len());
        }
        if total > MAX_SECRET_DATA_LEN {
            return Err(Error::DataTooLarge {
                max: MAX_SECRET_DATA_LEN,
            });
        }
    }
    Ok(out)
}

/// A `metav1.Time` instant (whole seconds, as the API server serialises it) as RFC 3339.
fn format_unix(unix: i64) -> String {
    GoTime {
        unix,
        nanos: 0,
        offset: 0,
    }
    .format()
    .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// A deletion timestamp as whole Unix seconds; one that is not RFC 3339 is carried as the Unix
/// epoch, so the Secret stays marked as being deleted.
fn parse_unix(t: &str) -> i64 {
    crate::rfc3339::parse(t.as_bytes()).map_or(0, |g| g.unix)
}

macro_rules! bridge {
    ($k:ident) => {
        impl TryFrom<&$k::api::core::v1::Secret> for SecretObject {
            type Error = Error;

            /// Takes name, namespace, UID, deletion timestamp, type and `data`, with
            /// `stringData` merged over `data` as the API server does.
            ///
            /// # Errors
            ///
            /// [`Error::InvalidDataKey`] for a key that is not a valid Secret key,
            /// [`Error::DataTooLarge`] beyond [`MAX_SECRET_DATA_LEN`].
            fn try_from(s: &$k::api::core::v1::Secret) -> Result<Self, Error> {
                let data = merged_data(
                    s.data.as_ref().map(|d| d.iter().map(|(k, v)| (k, &v.0))),
                    s.string_data.as_ref().map(|d| d.iter()),
                )?;
                let meta = &s.metadata;
                let mut out = SecretObject::new(
                    meta.name.clone().unwrap_or_default(),
                    meta.namespace.clone().unwrap_or_default(),
                    s.type_.clone().unwrap_or_default(),
                    data,
                );
                if let Some(uid) = &meta.uid {
                    out = out.with_uid(uid.clone());
                }
                if let Some(t) = &meta.deletion_timestamp {
                    out = out.with_deletion_timestamp(format_unix(t.0.as_second()));
                }
                Ok(out)
            }
        }

        impl From<&SecretObject> for $k::api::core::v1::Secret {
            /// Name, namespace, UID, type and `data`. A deletion timestamp that is not RFC 3339
            /// is carried as the Unix epoch, so the Secret stays marked as being deleted.
            fn from(s: &SecretObject) -> Self {
                use $k::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
                let non_empty = |v: &str| (!v.is_empty()).then(|| v.to_owned());
                let deletion_timestamp = s.deletion_timestamp().map(|t| {
                    Time(
                        $k::jiff::Timestamp::from_second(parse_unix(t))
                            .unwrap_or($k::jiff::Timestamp::UNIX_EPOCH),
                    )
                });
                $k::api::core::v1::Secret {
                    metadata: ObjectMeta {
                        name: non_empty(s.name()),
                        namespace: non_empty(s.namespace()),
                        uid: s.uid().map(str::to_owned),
                        deletion_timestamp,
                        ..ObjectMeta::default()
                    },
                    type_: non_empty(s.secret_type()),
                    data: s.data_map().map(|d| {
                        d.iter()
                            .map(|(k, v)| (k.clone(), $k::ByteString(v.clone())))
                            .collect()
                    }),
                    ..Default::default()
                }
            }
        }
    };
}

#[cfg(feature = "k8s-openapi")]
bridge!(k8s_openapi);
#[cfg(feature = "k8s-openapi-0-28")]
bridge!(k8s_openapi_0_28);
