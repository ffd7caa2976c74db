//! The raw Kubernetes Secret as the API server stores it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use zeroize::Zeroize;

use crate::constants::{
    MAX_DOCUMENT_LEN, MAX_SECRET_DATA_LEN, NAMESPACE, SECRET_TYPE, TOKEN_ID_KEY, TOKEN_SECRET_KEY,
    USAGE_SIGNING_KEY,
};
use crate::{Error, ExpirationStatus, TokenId, parse_secret_name};

/// A Kubernetes `v1` Secret as stored: name, namespace, UID, type, `data` as bytes, and whether a
/// deletion is pending. It is not validated as a bootstrap token; the authenticator, the cleaner,
/// [`signing_key`](Self::signing_key) and [`BootstrapTokenSecret`](crate::BootstrapTokenSecret)
/// each apply their own Kubernetes rules to it.
///
/// `Debug` prints the data keys and only the values of the public keys (`token-id`,
/// `expiration`, `description`, `usage-bootstrap-*`, `auth-extra-groups`); every other value is
/// redacted. Data values are zeroed on drop.
///
/// ```
/// use bootstrap_token::SecretObject;
/// let json = br#"{"apiVersion":"v1","kind":"Secret",
///   "metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system"},
///   "type":"bootstrap.kubernetes.io/token",
///   "data":{"token-id":"YWJjZGVm","token-secret":"MDEyMzQ1Njc4OWFiY2RlZg=="}}"#;
/// let secret = SecretObject::from_json(json)?;
/// assert_eq!(secret.name(), "bootstrap-token-abcdef");
/// assert_eq!(secret.data("token-id"), Some(&b"abcdef"[..]));
/// assert!(!format!("{secret:?}").contains("0123456789abcdef"));
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SecretObject {
    name: String,
    namespace: String,
    uid: Option<String>,
    deletion_timestamp: Option<String>,
    secret_type: String,
    data: Option<BTreeMap<String, Vec<u8>>>,
}

impl SecretObject {
    /// A Secret from its parts. `data: None` is a Secret without a `data` field (Go's nil map).
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        secret_type: impl Into<String>,
        data: Option<BTreeMap<String, Vec<u8>>>,
    ) -> Self {
        Self {
            name: name.into(),
            namespace: namespace.into(),
            uid: None,
            deletion_timestamp: None,
            secret_type: secret_type.into(),
            data,
        }
    }

    /// Sets `metadata.uid` (the token cleaner deletes with a UID precondition).
    #[must_use]
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// Sets `metadata.deletionTimestamp`: the Secret is being deleted.
    #[must_use]
    pub fn with_deletion_timestamp(mut self, timestamp: impl Into<String>) -> Self {
        self.deletion_timestamp = Some(timestamp.into());
        self
    }

    /// Parses the JSON the API server returns for a Secret (`data` in standard base64 with
    /// padding; `stringData`, as found in manifests, is merged over `data` as the API server
    /// does). `kind` and `apiVersion` are optional but must be `Secret` and `v1` when present.
    ///
    /// Limits: the document is at most [`MAX_DOCUMENT_LEN`] bytes, the decoded data at most
    /// [`MAX_SECRET_DATA_LEN`]; nesting is bounded by `serde_json`'s recursion limit (128).
    ///
    /// # Errors
    ///
    /// [`Error::DocumentTooLarge`], [`Error::Json`] (position only: the parser's message is
    /// dropped because it may echo input), [`Error::DuplicateDataKey`], [`Error::InvalidDataKey`],
    /// [`Error::InvalidBase64`], [`Error::DataTooLarge`], [`Error::NotASecret`].
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        check_len(json)?;
        let raw: RawSecret = serde_json::from_slice(json).map_err(|e| {
            typed_error(&e.to_string()).unwrap_or(Error::Json {
                line: e.line(),
                column: e.column(),
            })
        })?;
        raw.into_object()
    }

    /// Parses a Secret in YAML, as `kubectl get secret -o yaml` prints it or a manifest holds it
    /// (feature `yaml`). Same rules and limits as [`from_json`](Self::from_json); duplicate
    /// mapping keys are rejected everywhere; one document only; aliases, anchors, nesting (64)
    /// and nodes (100,000) are bounded.
    ///
    /// # Errors
    ///
    /// As [`from_json`](Self::from_json), with [`Error::Yaml`] for malformed YAML.
    #[cfg(feature = "yaml")]
    pub fn from_yaml(yaml: &[u8]) -> Result<Self, Error> {
        check_len(yaml)?;
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_reader_input_bytes: Some(MAX_DOCUMENT_LEN),
                max_depth: 64,
                max_nodes: 100_000,
                max_events: 400_000,
                max_aliases: 64,
                max_anchors: 64,
                max_documents: 1,
                max_total_scalar_bytes: MAX_DOCUMENT_LEN,
                max_merge_keys: 16,
            },
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            with_snippet: false,
        };
        let raw: RawSecret = serde_saphyr::from_slice_with_options(yaml, options)
            .map_err(|e| typed_error(&e.to_string()).unwrap_or(Error::Yaml))?;
        raw.into_object()
    }

    /// The Secret as API JSON (`apiVersion`, `kind`, `metadata`, `type`, `data` in standard
    /// base64; map keys sorted).
    ///
    /// # Errors
    ///
    /// [`Error::Serialize`] if `serde_json` fails (it does not for these types).
    pub fn to_json(&self) -> Result<String, Error> {
        let data = self.data.as_ref().map(|d| {
            d.iter()
                .map(|(k, v)| (k.as_str(), zeroize::Zeroizing::new(STANDARD.encode(v))))
                .collect::<BTreeMap<_, _>>()
        });
        let out = OutSecret {
            api_version: "v1",
            kind: "Secret",
            metadata: OutMeta {
                name: &self.name,
                namespace: &self.namespace,
                uid: self.uid.as_deref(),
                deletion_timestamp: self.deletion_timestamp.as_deref(),
            },
            secret_type: &self.secret_type,
            data: data.as_ref().map(|d| {
                d.iter()
                    .map(|(k, v)| (*k, v.as_str()))
                    .collect::<BTreeMap<_, _>>()
            }),
        };
        serde_json::to_string(&out).map_err(|_| Error::Serialize)
    }

    /// `metadata.name`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `metadata.namespace`.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `metadata.uid`, if known.
    #[must_use]
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// `metadata.deletionTimestamp`, if set.
    #[must_use]
    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.deletion_timestamp.as_deref()
    }

    /// Whether a deletion is pending (`metadata.deletionTimestamp` is set).
    #[must_use]
    pub fn is_deletion_pending(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// The Secret `type` (empty when absent).
    #[must_use]
    pub fn secret_type(&self) -> &str {
        &self.secret_type
    }

    /// The value of a data key, or `None` when `data` is absent or lacks the key.
    #[must_use]
    pub fn data(&self, key: &str) -> Option<&[u8]> {
        self.data.as_ref()?.get(key).map(Vec::as_slice)
    }

    /// cluster-bootstrap's `GetData`: the value, or empty when missing (a present but empty value
    /// is indistinguishable from a missing one).
    #[must_use]
    pub fn data_or_empty(&self, key: &str) -> &[u8] {
        self.data(key).unwrap_or_default()
    }

    /// The whole `data` map; `None` when the Secret has no `data` field.
    #[must_use]
    pub fn data_map(&self) -> Option<&BTreeMap<String, Vec<u8>>> {
        self.data.as_ref()
    }

    /// cluster-bootstrap's `GetExpiration(secret, now)`: never (missing or empty), valid with the
    /// time remaining, expired at or after the instant, or unparseable (treated as expired).
    #[must_use]
    pub fn expiration(&self, now: SystemTime) -> ExpirationStatus {
        ExpirationStatus::at(self.data_or_empty(crate::EXPIRATION_KEY), now)
    }

    /// cluster-bootstrap's `HasExpired(secret, now)`.
    #[must_use]
    pub fn has_expired(&self, now: SystemTime) -> bool {
        self.expiration(now).is_expired()
    }

    /// The token ID and HMAC key the bootstrap signer would sign `cluster-info` with, or `None`
    /// when the Secret does not qualify. This is the signer's `validateSecretForSigning` plus its
    /// listing filter:
    ///
    /// 1. type `bootstrap.kubernetes.io/token` in `kube-system` (the signer only lists those);
    /// 2. the name matches `^bootstrap-token-([a-z0-9]{6})$`;
    /// 3. `token-id` is non-empty and equals the ID in the name;
    /// 4. `token-secret` is non-empty; its format is **not** checked (any non-empty value is the key);
    /// 5. not expired per [`expiration`](Self::expiration) (unparseable counts as expired);
    /// 6. `usage-bootstrap-signing` is exactly `true`.
    ///
    /// A pending deletion and the authentication usage are not checked, as in Kubernetes.
    ///
    /// ```
    /// use bootstrap_token::SecretObject;
    /// use std::collections::BTreeMap;
    /// use std::time::UNIX_EPOCH;
    /// let data: BTreeMap<String, Vec<u8>> = [
    ///     ("token-id", "abcdef"),
    ///     ("token-secret", "not-the-usual-format"),
    ///     ("usage-bootstrap-signing", "true"),
    /// ]
    /// .into_iter()
    /// .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
    /// .collect();
    /// let secret = SecretObject::new(
    ///     "bootstrap-token-abcdef", "kube-system", "bootstrap.kubernetes.io/token", Some(data),
    /// );
    /// let (id, key) = secret.signing_key(UNIX_EPOCH).unwrap();
    /// assert_eq!((id.as_str(), key), ("abcdef", &b"not-the-usual-format"[..]));
    /// ```
    #[must_use]
    pub fn signing_key(&self, now: SystemTime) -> Option<(TokenId, &[u8])> {
        if self.secret_type != SECRET_TYPE || self.namespace != NAMESPACE {
            return None;
        }
        let id = parse_secret_name(&self.name)?;
        let data_id = self.data_or_empty(TOKEN_ID_KEY);
        if data_id.is_empty() || data_id != id.as_bytes() {
            return None;
        }
        let key = self.data_or_empty(TOKEN_SECRET_KEY);
        if key.is_empty() || self.has_expired(now) {
            return None;
        }
        (self.data_or_empty(USAGE_SIGNING_KEY) == b"true").then_some((id, key))
    }
}

impl Drop for SecretObject {
    fn drop(&mut self) {
        if let Some(data) = self.data.as_mut() {
            for v in data.values_mut() {
                v.zeroize();
            }
        }
    }
}

impl fmt::Debug for SecretObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Data<'a>(&'a BTreeMap<String, Vec<u8>>);
        struct Redacted;
        impl fmt::Debug for Redacted {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("<redacted>")
            }
        }
        impl fmt::Debug for Data<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut m = f.debug_map();
                for (k, v) in self.0 {
                    if is_public_key(k) {
                        m.entry(k, &String::from_utf8_lossy(v));
                    } else {
                        m.entry(k, &Redacted);
                    }
                }
                m.finish()
            }
        }
        f.debug_struct("SecretObject")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("uid", &self.uid)
            .field("deletion_timestamp", &self.deletion_timestamp)
            .field("secret_type", &self.secret_type)
            .field("data", &self.data.as_ref().map(Data))
            .finish()
    }
}

fn is_public_key(k: &str) -> bool {
    k == TOKEN_ID_KEY
        || k == crate::EXPIRATION_KEY
        || k == crate::DESCRIPTION_KEY
        || k == crate::AUTH_EXTRA_GROUPS_KEY
        || k.starts_with(crate::USAGE_KEY_PREFIX)
}

fn check_len(input: &[u8]) -> Result<(), Error> {
    if input.len() > MAX_DOCUMENT_LEN {
        Err(Error::DocumentTooLarge {
            len: input.len(),
            max: MAX_DOCUMENT_LEN,
        })
    } else {
        Ok(())
    }
}

/// Errors raised by our own visitors travel through serde as messages starting with a NUL
/// marker; serde never echoes input with a raw NUL (it escapes strings with `{:?}`).
const MARK_DUP: &str = "\0bt:duplicate";
const MARK_KEY: &str = "\0bt:key";
const MARK_B64: &str = "\0bt:base64:";
const MARK_SIZE: &str = "\0bt:size";

fn typed_error(msg: &str) -> Option<Error> {
    if msg.contains(MARK_DUP) {
        Some(Error::DuplicateDataKey)
    } else if msg.contains(MARK_KEY) {
        Some(Error::InvalidDataKey)
    } else if msg.contains(MARK_SIZE) {
        Some(Error::DataTooLarge {
            max: MAX_SECRET_DATA_LEN,
        })
    } else if let Some((_, rest)) = msg.split_once(MARK_B64) {
        let key: String = rest
            .chars()
            .take_while(|&c| is_data_key_char(c))
            .take(253)
            .collect();
        Some(Error::InvalidBase64 { key })
    } else {
        None
    }
}

fn is_data_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')
}

/// Kubernetes' `IsConfigMapKey`: `[-._a-zA-Z0-9]+`, at most 253 bytes, not `.` or `..`.
pub(crate) fn is_valid_data_key(k: &str) -> bool {
    !k.is_empty() && k.len() <= 253 && k != "." && k != ".." && k.chars().all(is_data_key_char)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSecret {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<RawMeta>,
    #[serde(default, rename = "type")]
    secret_type: Option<String>,
    #[serde(default)]
    data: Option<DataMap<true>>,
    #[serde(default)]
    string_data: Option<DataMap<false>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
}

impl RawSecret {
    fn into_object(self) -> Result<SecretObject, Error> {
        if self.kind.as_deref().is_some_and(|k| k != "Secret")
            || self.api_version.as_deref().is_some_and(|v| v != "v1")
        {
            return Err(Error::NotASecret);
        }
        let meta = self.metadata.unwrap_or_default();
        let mut data = self.data.map(|d| d.0);
        if let Some(DataMap(extra)) = self.string_data {
            let map = data.get_or_insert_with(BTreeMap::new);
            for (k, v) in extra {
                map.insert(k, v);
            }
            let total = map.iter().fold(0usize, |n, (k, v)| {
                n.saturating_add(k.len()).saturating_add(v.len())
            });
            if total > MAX_SECRET_DATA_LEN {
                return Err(Error::DataTooLarge {
                    max: MAX_SECRET_DATA_LEN,
                });
            }
        }
        Ok(SecretObject {
            name: meta.name.unwrap_or_default(),
            namespace: meta.namespace.unwrap_or_default(),
            uid: meta.uid,
            deletion_timestamp: meta.deletion_timestamp,
            secret_type: self.secret_type.unwrap_or_default(),
            data,
        })
    }
}

/// `data` (`BASE64 = true`, standard base64 values) or `stringData` (plain string values),
/// rejecting duplicate and invalid keys and bounding the total size while reading.
struct DataMap<const BASE64: bool>(BTreeMap<String, Vec<u8>>);

impl<'de, const BASE64: bool> Deserialize<'de> for DataMap<BASE64> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const B: bool>;
        impl<'de, const B: bool> Visitor<'de> for V<B> {
            type Value = DataMap<B>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = BTreeMap::new();
                let mut total = 0usize;
                while let Some(key) = access.next_key::<String>()? {
                    if !is_valid_data_key(&key) {
                        return Err(de::Error::custom(MARK_KEY));
                    }
                    if map.contains_key(&key) {
                        return Err(de::Error::custom(MARK_DUP));
                    }
                    let value = access
                        .next_value::<Option<String>>()?
                        .map(zeroize::Zeroizing::new)
                        .unwrap_or_default();
                    let bytes = if B {
                        STANDARD
                            .decode(value.as_bytes())
                            .map_err(|_| de::Error::custom(format!("{MARK_B64}{key}")))?
                    } else {
                        value.as_bytes().to_vec()
                    };
                    total = total.saturating_add(key.len()).saturating_add(bytes.len());
                    if total > MAX_SECRET_DATA_LEN {
                        return Err(de::Error::custom(MARK_SIZE));
                    }
                    map.insert(key, bytes);
                }
                Ok(DataMap(map))
            }
        }
        d.deserialize_map(V::<BASE64>)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutSecret<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: OutMeta<'a>,
    #[serde(rename = "type")]
    secret_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<BTreeMap<&'a str, &'a str>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutMeta<'a> {
    name: &'a str,
    namespace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<&'a str>,
}
