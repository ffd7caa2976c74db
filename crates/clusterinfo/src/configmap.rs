//! The `kube-public/cluster-info` ConfigMap.

use std::collections::BTreeMap;

use bootstrap_token::{BootstrapToken, TokenId};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The ConfigMap's namespace.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
/// The ConfigMap's name.
pub const CLUSTER_INFO_NAME: &str = "cluster-info";
/// The data key holding the kubeconfig.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The prefix of the signature data keys: `jws-kubeconfig-<token-id>`.
pub const JWS_KEY_PREFIX: &str = "jws-kubeconfig-";
/// The API path of the ConfigMap.
pub const CLUSTER_INFO_PATH: &str = "/api/v1/namespaces/kube-public/configmaps/cluster-info";
/// The largest ConfigMap JSON accepted, in bytes. A ConfigMap's data cannot exceed 1 MiB;
/// JSON string escaping can at most double text such as PEM, so 4 MiB bounds any genuine one.
pub const MAX_CONFIGMAP_JSON_BYTES: usize = 4 * 1024 * 1024;

/// The cluster-info ConfigMap: its data keys (`kubeconfig`, `jws-kubeconfig-<id>`, and any
/// others, kept untouched) and the metadata needed to write it back.
///
/// ```
/// use clusterinfo::ClusterInfoConfigMap;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let json = br#"{"apiVersion":"v1","kind":"ConfigMap",
///   "metadata":{"name":"cluster-info","namespace":"kube-public","resourceVersion":"42"},
///   "data":{"kubeconfig":"apiVersion: v1\n","jws-kubeconfig-abcdef":"eyJ..sig"}}"#;
/// let cm = ClusterInfoConfigMap::from_json(json)?;
/// assert_eq!(cm.kubeconfig(), Some("apiVersion: v1\n"));
/// assert_eq!(cm.resource_version(), Some("42"));
/// assert_eq!(cm.signature("abcdef".parse()?), Some("eyJ..sig"));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ClusterInfoConfigMap {
    resource_version: Option<String>,
    data: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawConfigMap {
    kind: Option<String>,
    #[serde(default)]
    metadata: RawMeta,
    data: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Serialize, Default)]
struct RawMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(rename = "resourceVersion", skip_serializing_if = "Option::is_none")]
    resource_version: Option<String>,
}

#[derive(Serialize)]
struct OutConfigMap<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    metadata: RawMeta,
    data: &'a BTreeMap<String, String>,
}

impl ClusterInfoConfigMap {
    /// A ConfigMap holding only a kubeconfig, as kubeadm creates it.
    pub fn new(kubeconfig: impl Into<String>) -> ClusterInfoConfigMap {
        let mut data = BTreeMap::new();
        data.insert(KUBECONFIG_KEY.to_owned(), kubeconfig.into());
        ClusterInfoConfigMap {
            resource_version: None,
            data,
        }
    }

    /// A ConfigMap from its data map.
    pub fn from_data(data: BTreeMap<String, String>) -> ClusterInfoConfigMap {
        ClusterInfoConfigMap {
            resource_version: None,
            data,
        }
    }

    /// Parse the ConfigMap as the API server returns it (JSON). Unknown fields are ignored; a
    /// duplicated data key keeps its last value, as Go's `encoding/json` does.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_CONFIGMAP_JSON_BYTES`] (checked before parsing),
    /// [`Error::ConfigMapSyntax`] for malformed JSON or wrong types (nesting deeper than 128
    /// levels included), [`Error::InvalidConfigMap`] when `kind` or the name is not that of
    /// the cluster-info ConfigMap.
    pub fn from_json(json: &[u8]) -> Result<ClusterInfoConfigMap, Error> {
        if json.len() > MAX_CONFIGMAP_JSON_BYTES {
            return Err(Error::TooLarge {
                what: "ConfigMap",
                len: json.len(),
                max: MAX_CONFIGMAP_JSON_BYTES,
            });
        }
        let raw: RawConfigMap =
            serde_json::from_slice(json).map_err(|e| Error::ConfigMapSyntax {
                line: e.line(),
                column: e.column(),
            })?;
        if raw.kind.as_deref().is_some_and(|k| k != "ConfigMap") {
            return Err(Error::InvalidConfigMap {
                reason: "kind is not ConfigMap",
            });
        }
        if raw
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n != CLUSTER_INFO_NAME)
        {
            return Err(Error::InvalidConfigMap {
                reason: "metadata.name is not cluster-info",
            });
        }
        if raw
            .metadata
            .namespace
            .as_deref()
            .is_some_and(|n| n != CLUSTER_INFO_NAMESPACE)
        {
            return Err(Error::InvalidConfigMap {
                reason: "metadata.namespace is not kube-public",
            });
        }
        Ok(ClusterInfoConfigMap {
            resource_version: raw.metadata.resource_version,
            data: raw.data.unwrap_or_default(),
        })
    }

    /// The ConfigMap as API-server JSON (`apiVersion`, `kind`, `metadata` with name, namespace
    /// and the resourceVersion when known, `data` with keys sorted).
    pub fn to_json(&self) -> String {
        let out = OutConfigMap {
            api_version: "v1",
            kind: "ConfigMap",
            metadata: RawMeta {
                name: Some(CLUSTER_INFO_NAME.to_owned()),
                namespace: Some(CLUSTER_INFO_NAMESPACE.to_owned()),
                resource_version: self.resource_version.clone(),
            },
            data: &self.data,
        };
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// `metadata.resourceVersion`, when the ConfigMap came from the API server.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Set `metadata.resourceVersion` (carried by an update).
    pub fn set_resource_version(&mut self, version: Option<String>) {
        self.resource_version = version;
    }

    /// The whole data map.
    pub fn data(&self) -> &BTreeMap<String, String> {
        &self.data
    }

    /// Replace the whole data map (e.g. with the signer's output).
    pub fn set_data(&mut self, data: BTreeMap<String, String>) {
        self.data = data;
    }

    /// The exact `kubeconfig` string, when present.
    pub fn kubeconfig(&self) -> Option<&str> {
        self.data.get(KUBECONFIG_KEY).map(String::as_str)
    }

    /// The signature for a token: the value under exactly `jws-kubeconfig-<id>` (no case
    /// folding, no trimming).
    pub fn signature(&self, id: TokenId) -> Option<&str> {
        self.data.get(&signature_key(id)).map(String::as_str)
    }

    /// Check the ConfigMap for a token as kubeadm's `validateClusterInfoToken` does, **before**
    /// any YAML is parsed, and return the exact signed kubeconfig string.
    ///
    /// ```
    /// use clusterinfo::ClusterInfoConfigMap;
    /// use bootstrap_token::BootstrapToken;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let token: BootstrapToken = "abcdef.0123456789abcdef".parse()?;
    /// let mut cm = ClusterInfoConfigMap::new("hello");
    /// let mut data = cm.data().clone();
    /// data.insert("jws-kubeconfig-abcdef".into(),
    ///     "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s".into());
    /// cm.set_data(data);
    /// assert_eq!(cm.verify(&token)?, "hello");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::MissingKubeconfig`] when `kubeconfig` is missing or empty, [`Error::TooLarge`]
    /// when it exceeds [`MAX_KUBECONFIG_BYTES`](crate::MAX_KUBECONFIG_BYTES) (checked before
    /// any cryptography),
    /// [`Error::TokenNotValidForCluster`] when `jws-kubeconfig-<id>` is missing or empty,
    /// [`Error::BadSignature`] when the detached JWS does not verify (compared in constant
    /// time, header bytes exactly as Kubernetes writes them).
    pub fn verify(&self, token: &BootstrapToken) -> Result<&str, Error> {
        let kubeconfig = self
            .kubeconfig()
            .filter(|k| !k.is_empty())
            .ok_or(Error::MissingKubeconfig)?;
        if kubeconfig.len() > crate::yaml::MAX_KUBECONFIG_BYTES {
            return Err(Error::TooLarge {
                what: "kubeconfig",
                len: kubeconfig.len(),
                max: crate::yaml::MAX_KUBECONFIG_BYTES,
            });
        }
        let id = *token.id();
        let sig = self
            .signature(id)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Error::TokenNotValidForCluster {
                token_id: id.to_string(),
            })?;
        jws_detached::verify_kubernetes(
            sig,
            kubeconfig.as_bytes(),
            id.as_str(),
            token.secret().expose_secret().as_bytes(),
        )
        .map_err(|_| Error::BadSignature)?;
        Ok(kubeconfig)
    }
}

/// `jws-kubeconfig-<id>`.
pub fn signature_key(id: TokenId) -> String {
    let mut key = String::with_capacity(JWS_KEY_PREFIX.len().saturating_add(id.as_str().len()));
    key.push_str(JWS_KEY_PREFIX);
    key.push_str(id.as_str());
    key
}
