//! Interop with `k8s_openapi::api::core::v1::Secret` (feature `k8s-openapi`).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::constants::MAX_SECRET_DATA_LEN;
use crate::secret_object::is_valid_data_key;
use crate::{Error, SecretObject};

impl TryFrom<&Secret> for SecretObject {
    type Error = Error;

    /// Takes name, namespace, UID, deletion timestamp, type and `data`, with `stringData`
    /// merged over `data` as the API server does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDataKey`] for a key that is not a valid Secret key, [`Error::DataTooLarge`]
    /// beyond [`MAX_SECRET_DATA_LEN`].
    fn try_from(s: &Secret) -> Result<Self, Error> {
        let mut data: Option<BTreeMap<String, Vec<u8>>> = s
            .data
            .as_ref()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect());
        if let Some(sd) = &s.string_data {
            let map = data.get_or_insert_with(BTreeMap::new);
            for (k, v) in sd {
                map.insert(k.clone(), v.clone().into_bytes());
            }
        }
        if let Some(map) = &data {
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
            out = out.with_deletion_timestamp(
                t.0.to_rfc3339_opts(k8s_openapi::chrono::SecondsFormat::Secs, true),
            );
        }
        Ok(out)
    }
}

impl From<&SecretObject> for Secret {
    /// Name, namespace, UID, type and `data`. A deletion timestamp that is not RFC 3339 is
    /// carried as the Unix epoch, so the Secret stays marked as being deleted.
    fn from(s: &SecretObject) -> Self {
        let non_empty = |v: &str| (!v.is_empty()).then(|| v.to_owned());
        let deletion_timestamp = s.deletion_timestamp().map(|t| {
            use k8s_openapi::chrono::DateTime;
            let at = crate::rfc3339::parse(t.as_bytes())
                .ok()
                .and_then(|g| DateTime::from_timestamp(g.unix, g.nanos))
                .unwrap_or(DateTime::UNIX_EPOCH);
            Time(at)
        });
        Secret {
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
                    .map(|(k, v)| (k.clone(), ByteString(v.clone())))
                    .collect()
            }),
            ..Secret::default()
        }
    }
}
