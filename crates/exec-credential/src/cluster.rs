//! `spec.cluster`: what a client tells a plugin about the cluster (`provideClusterInfo`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use core::fmt;

use serde::ser::SerializeStruct as _;
use sha2::{Digest as _, Sha256};

/// The name of the kubeconfig cluster extension whose object becomes [`Cluster::config`].
pub const CLUSTER_EXTENSION_KEY: &str = "client.authentication.k8s.io/exec";

/// The cluster a credential is for, as sent in `spec.cluster` when the exec configuration sets
/// `provideClusterInfo: true`.
///
/// Field-for-field the `Cluster` type of `client.authentication.k8s.io/v1` and `v1beta1`; empty
/// strings, `false` and empty data are omitted on the wire, `config` is always written (`null`
/// when there is no extension). A JSON `null` reads as the field's zero value (no data, no
/// extension), as in Go.
#[derive(Clone, PartialEq, Eq, Default, serde::Deserialize)]
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

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field(
                "certificate_authority_data",
                &CaSummary(&self.certificate_authority_data),
            )
            .field("proxy_url", &self.proxy_url)
            .field("disable_compression", &self.disable_compression)
            .field(
                "config",
                &self.config.as_ref().map(|_| crate::exec_config::REDACTED),
            )
            .finish()
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

/// `Debug` of a CA bundle: `"<n> bytes, <m> PEM certificates, sha256:<hex>"`, or `"empty"`.
struct CaSummary<'a>(&'a [u8]);

impl fmt::Debug for CaSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("\"empty\"");
        }
        let certificates = self
            .0
            .split(|&b| b == b'\n')
            .filter(|line| line.trim_ascii() == b"-----BEGIN CERTIFICATE-----")
            .count();
        let plural = if certificates == 1 { "" } else { "s" };
        write!(
            f,
            "\"{} bytes, {certificates} PEM certificate{plural}, sha256:",
            self.0.len()
        )?;
        for b in Sha256::digest(self.0) {
            write!(f, "{b:02x}")?;
        }
        f.write_str("\"")
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
