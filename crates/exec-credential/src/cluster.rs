//! `spec.cluster`: what a client tells a plugin about the cluster (`provideClusterInfo`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::ser::SerializeStruct as _;

/// The name of the kubeconfig cluster extension whose object becomes [`Cluster::config`].
pub const CLUSTER_EXTENSION_KEY: &str = "client.authentication.k8s.io/exec";

/// The cluster a credential is for, as sent in `spec.cluster` when the exec configuration sets
/// `provideClusterInfo: true`.
///
/// Field-for-field the `Cluster` type of `client.authentication.k8s.io/v1` and `v1beta1`; empty
/// strings, `false` and empty data are omitted on the wire, `config` is always written (`null`
/// when there is no extension). A JSON `null` reads as the field's zero value (no data, no
/// extension), as in Go.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[non_exhaustive]
pub struct Cluster {
    /// `server`: the API server URL.
    #[serde(default, deserialize_with = "crate::wire::null_as_default")]
    pub server: String,
    /// `tls-server-name`: the name to verify the server certificate against, if not the host.
    #[serde(
        default,
        deserialize_with = "crate::wire::null_as_default",
        rename = "tls-server-name"
    )]
    pub tls_server_name: String,
    /// `insecure-skip-tls-verify`.
    #[serde(
        default,
        deserialize_with = "crate::wire::null_as_default",
        rename = "insecure-skip-tls-verify"
    )]
    pub insecure_skip_tls_verify: bool,
    /// `certificate-authority-data`: the CA bundle (PEM bytes; base64 on the wire).
    #[serde(
        default,
        rename = "certificate-authority-data",
        deserialize_with = "de_base64"
    )]
    pub certificate_authority_data: Vec<u8>,
    /// `proxy-url`.
    #[serde(
        default,
        deserialize_with = "crate::wire::null_as_default",
        rename = "proxy-url"
    )]
    pub proxy_url: String,
    /// `disable-compression`.
    #[serde(
        default,
        deserialize_with = "crate::wire::null_as_default",
        rename = "disable-compression"
    )]
    pub disable_compression: bool,
    /// `config`: the kubeconfig cluster's [`CLUSTER_EXTENSION_KEY`] extension object, if any.
    #[serde(default)]
    pub config: Option<serde_json::Value>,
}

impl Cluster {
    /// A cluster with only a server URL.
    #[must_use]
    pub fn new(server: impl Into<String>) -> Cluster {
        Cluster {
            server: server.into(),
            ..Cluster::default()
        }
    }

    /// Sets the CA bundle (PEM bytes).
    #[must_use]
    pub fn with_certificate_authority_data(mut self, pem: impl Into<Vec<u8>>) -> Cluster {
        self.certificate_authority_data = pem.into();
        self
    }

    /// Sets the cluster extension object ([`CLUSTER_EXTENSION_KEY`]).
    #[must_use]
    pub fn with_config(mut self, config: serde_json::Value) -> Cluster {
        self.config = Some(config);
        self
    }
}

impl serde::Serialize for Cluster {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Cluster", 7)?;
        st.serialize_field("server", &self.server)?;
        if !self.tls_server_name.is_empty() {
            st.serialize_field("tls-server-name", &self.tls_server_name)?;
        }
        if self.insecure_skip_tls_verify {
            st.serialize_field("insecure-skip-tls-verify", &true)?;
        }
        if !self.certificate_authority_data.is_empty() {
            st.serialize_field(
                "certificate-authority-data",
                &STANDARD.encode(&self.certificate_authority_data),
            )?;
        }
        if !self.proxy_url.is_empty() {
            st.serialize_field("proxy-url", &self.proxy_url)?;
        }
        if self.disable_compression {
            st.serialize_field("disable-compression", &true)?;
        }
        st.serialize_field("config", &self.config)?;
        st.end()
    }
}

fn de_base64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s: Option<std::borrow::Cow<'de, str>> = serde::Deserialize::deserialize(d)?;
    match s {
        None => Ok(Vec::new()),
        Some(s) => STANDARD.decode(s.as_bytes()).map_err(|_| {
            serde::de::Error::custom("certificate-authority-data is not valid base64")
        }),
    }
}
