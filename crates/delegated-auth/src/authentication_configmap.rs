//! The `kube-system/extension-apiserver-authentication` ConfigMap, read as aggregated API
//! servers read it (`k8s.io/apiserver`'s delegating authentication options): the client CA for
//! x509 users, and the front proxy's CA, allowed names and headers.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::bounded_json;
use crate::error::Error;
use crate::requestheader::{FrontProxyAuthenticator, RequestHeaderConfig};
use crate::x509::ClientCa;

/// The ConfigMap's namespace.
pub const AUTHENTICATION_CONFIGMAP_NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
pub const AUTHENTICATION_CONFIGMAP_NAME: &str = "extension-apiserver-authentication";
/// The largest ConfigMap read, in bytes (the API server's own bound on an object).
pub const MAX_CONFIGMAP_BYTES: usize = 1024 * 1024;

const WHAT: &str = "extension-apiserver-authentication ConfigMap";

/// What the ConfigMap configures: x509 client-certificate users (when `client-ca-file` is
/// set) and front-proxy users (when `requestheader-client-ca-file` is set).
///
/// ```
/// use delegated_auth::AuthenticationConfigMap;
/// let config = AuthenticationConfigMap::from_json(br#"{"apiVersion":"v1","kind":"ConfigMap",
///   "data":{"requestheader-username-headers":"[\"X-Remote-User\"]"}}"#)?;
/// assert!(config.client_ca().is_none());
/// assert!(config.front_proxy().is_none()); // no requestheader-client-ca-file
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct AuthenticationConfigMap {
    client_ca: Option<ClientCa>,
    front_proxy: Option<FrontProxyAuthenticator>,
}

impl AuthenticationConfigMap {
    /// Reads the ConfigMap object as the API server returns it (JSON, at most
    /// [`MAX_CONFIGMAP_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::Json`] when it is not a ConfigMap's JSON;
    /// [`Error::Invalid`] for another `apiVersion` or `kind`; the errors of
    /// [`AuthenticationConfigMap::from_data`].
    pub fn from_json(json: &[u8]) -> Result<AuthenticationConfigMap, Error> {
        #[derive(Deserialize)]
        struct ConfigMap {
            #[serde(rename = "apiVersion")]
            api_version: Option<String>,
            kind: Option<String>,
            data: Option<BTreeMap<String, String>>,
        }
        let cm: ConfigMap = bounded_json::from_slice(WHAT, MAX_CONFIGMAP_BYTES, json)?;
        bounded_json::check_type(
            WHAT,
            cm.api_version.as_deref(),
            cm.kind.as_deref(),
            "v1",
            "ConfigMap",
        )?;
        AuthenticationConfigMap::from_data(&cm.data.unwrap_or_default())
    }

    /// Reads the ConfigMap's `data`: `client-ca-file` and `requestheader-client-ca-file` (PEM
    /// bundles; empty or absent for none), and `requestheader-allowed-names`,
    /// `requestheader-username-headers`, `requestheader-uid-headers`,
    /// `requestheader-group-headers` and `requestheader-extra-headers-prefix` (JSON arrays of
    /// strings; empty or absent for none). Keys it does not know are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::Certificate`] when a CA bundle is not one; [`Error::Json`] when a list is not
    /// a JSON array of strings; [`Error::Invalid`] when a header name is not one.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<AuthenticationConfigMap, Error> {
        let get = |k: &str| data.get(k).map(String::as_str).unwrap_or_default();
        let client_ca = match get("client-ca-file") {
            "" => None,
            pem => Some(ClientCa::from_pem(pem.as_bytes())?),
        };
        let front_proxy = match get("requestheader-client-ca-file") {
            "" => None,
            pem => {
                let ca = ClientCa::from_pem(pem.as_bytes())?;
                let list = |k: &'static str| strings(k, get(k));
                let headers = RequestHeaderConfig::new(
                    &list("requestheader-username-headers")?,
                    &list("requestheader-group-headers")?,
                    &list("requestheader-extra-headers-prefix")?,
                )?
                .with_uid_headers(&list("requestheader-uid-headers")?)?;
                Some(FrontProxyAuthenticator::new(
                    ca,
                    list("requestheader-allowed-names")?,
                    headers,
                ))
            }
        };
        Ok(AuthenticationConfigMap {
            client_ca,
            front_proxy,
        })
    }

    /// The CA for x509 client-certificate users, if configured.
    #[must_use]
    pub fn client_ca(&self) -> Option<&ClientCa> {
        self.client_ca.as_ref()
    }

    /// The front-proxy authenticator, if configured.
    #[must_use]
    pub fn front_proxy(&self) -> Option<&FrontProxyAuthenticator> {
        self.front_proxy.as_ref()
    }
}

/// A JSON array of strings, as `deserializeStrings` reads it: empty for none.
fn strings(key: &'static str, value: &str) -> Result<Vec<String>, Error> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    bounded_json::from_slice(key, MAX_CONFIGMAP_BYTES, value.as_bytes())
}
