//! The cluster extension this crate adds to kubeconfig clusters.

use serde_json::{Map, Value};

use crate::error::Error;
use crate::server::validate_server;

/// The name under which [`ClusterExtension`] is stored in a kubeconfig cluster's
/// `extensions` list.
pub const CLUSTER_EXTENSION_NAME: &str = "k8s-bootstrap.rs/cluster";

/// Additions to a kubeconfig cluster, stored as a named cluster extension so that plain
/// kubeconfig readers (kubectl, client-go, kubeadm) ignore it and plain kubeconfigs without it
/// keep working:
///
/// ```yaml
/// clusters:
/// - cluster:
///     certificate-authority-data: LS0t...
///     extensions:
///     - extension:
///         clusterID: 5c0b6f5e-6bd1-4a3e-9c55-0e9c1d1f3c2a
///         serial: 7
///         servers:
///         - https://10.0.0.2:6443
///         - https://10.0.0.3:6443
///       name: k8s-bootstrap.rs/cluster
///     server: https://10.0.0.1:6443
///   name: ""
/// ```
///
/// * `clusterID`: a stable identifier a client compares to know it still talks to the same
///   cluster (it survives CA rotation and address changes).
/// * `serial`: increases whenever the published cluster information changes, so a client can
///   tell a newer copy from an older one.
/// * `servers`: addresses equivalent to `server`, tried in order after it (each must be an
///   acceptable `https://` URL).
///
/// The CA semantics are those of the cluster itself: `certificate-authority-data` is a bundle
/// (several CAs during a rotation, any of which may anchor the server's chain); no CA data and
/// no `insecure-skip-tls-verify` means the system trust roots.
///
/// ```
/// use clusterinfo::ClusterExtension;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ext = ClusterExtension::new("prod-eu-1", 7)
///     .with_server("https://10.0.0.2:6443")?;
/// assert_eq!(ext.cluster_id(), "prod-eu-1");
/// assert_eq!(ext.servers().collect::<Vec<_>>(), ["https://10.0.0.2:6443"]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterExtension {
    cluster_id: String,
    serial: u64,
    servers: Vec<String>,
}

/// The most equivalent servers an extension may list.
pub const MAX_EQUIVALENT_SERVERS: usize = 16;

impl ClusterExtension {
    /// An extension with an identifier and a serial number, and no equivalent servers.
    pub fn new(cluster_id: impl Into<String>, serial: u64) -> ClusterExtension {
        ClusterExtension {
            cluster_id: cluster_id.into(),
            serial,
            servers: Vec::new(),
        }
    }

    /// Add an equivalent server address.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidServer`] when the URL is not an acceptable `https://` URL, or
    /// [`Error::InvalidField`] beyond [`MAX_EQUIVALENT_SERVERS`].
    pub fn with_server(mut self, server: &str) -> Result<ClusterExtension, Error> {
        validate_server(server, "extension servers")?;
        if self.servers.len() >= MAX_EQUIVALENT_SERVERS {
            return Err(Error::InvalidField {
                field: "extension servers".to_owned(),
                reason: "too many equivalent servers",
            });
        }
        self.servers.push(server.to_owned());
        Ok(self)
    }

    /// The cluster identifier.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The serial number.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// The equivalent server addresses, in order.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(String::as_str)
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert(
            "clusterID".to_owned(),
            Value::String(self.cluster_id.clone()),
        );
        map.insert("serial".to_owned(), Value::from(self.serial));
        if !self.servers.is_empty() {
            map.insert(
                "servers".to_owned(),
                Value::Array(self.servers.iter().cloned().map(Value::String).collect()),
            );
        }
        Value::Object(map)
    }

    pub(crate) fn from_value(value: &Value, path: &str) -> Result<ClusterExtension, Error> {
        let invalid = |reason| Error::InvalidField {
            field: path.to_owned(),
            reason,
        };
        let map = value
            .as_object()
            .ok_or_else(|| invalid("must be a mapping"))?;
        let cluster_id = match map.get("clusterID") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.len() <= 256 => s.clone(),
            Some(_) => return Err(invalid("clusterID must be a string of at most 256 bytes")),
        };
        let serial = match map.get("serial") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| invalid("serial must be a non-negative integer"))?,
        };
        let mut ext = ClusterExtension::new(cluster_id, serial);
        match map.get("servers") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let s = item
                        .as_str()
                        .ok_or_else(|| invalid("servers must be strings"))?;
                    ext = ext.with_server(s)?;
                }
            }
            Some(_) => return Err(invalid("servers must be a sequence")),
        }
        Ok(ext)
    }
}
