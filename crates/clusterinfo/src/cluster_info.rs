//! The limited kubeconfig that identifies a cluster.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::ca_bundle::CaBundle;
use crate::error::Error;
use crate::extension::{CLUSTER_EXTENSION_NAME, ClusterExtension};
use crate::server::validate_server;
use crate::yaml::{YamlWriter, parse_document, scalar};

/// How a client is to trust the cluster's serving certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trust {
    /// Verify against this CA bundle (`certificate-authority-data`).
    CaBundle(CaBundle),
    /// No CA data and no insecure flag: verify against the system trust roots.
    SystemRoots,
    /// `insecure-skip-tls-verify: true`, accepted only when the caller opted in with
    /// [`ParseOptions::dangerous_allow_insecure_skip_tls_verify`].
    DangerousSkipVerify,
}

/// Options for [`ClusterInfo::parse_with`].
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    allow_insecure: bool,
}

impl ParseOptions {
    /// The default, strict options.
    pub fn new() -> ParseOptions {
        ParseOptions::default()
    }

    /// Accept `insecure-skip-tls-verify: true` (yielding [`Trust::DangerousSkipVerify`])
    /// instead of rejecting it. Never use this for a kubeconfig obtained from the network.
    pub fn dangerous_allow_insecure_skip_tls_verify(mut self) -> ParseOptions {
        self.allow_insecure = true;
        self
    }
}

/// A named kubeconfig cluster extension other than [`ClusterExtension`], kept verbatim so it
/// is written back out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedExtension {
    name: String,
    value: Value,
}

impl NamedExtension {
    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The extension's content as compact JSON.
    pub fn to_json(&self) -> String {
        self.value.to_string()
    }
}

/// The kubeconfig that identifies a cluster and nothing more: one cluster entry with a server
/// URL, its CA bundle (or system trust), an optional TLS server name and extensions.
///
/// Parsing ([`ClusterInfo::parse`]) accepts kubeconfig YAML and JSON as kubectl does, with
/// unknown fields tolerated and cluster `extensions` preserved, under documented limits
/// ([`MAX_KUBECONFIG_BYTES`](crate::MAX_KUBECONFIG_BYTES),
/// [`MAX_KUBECONFIG_DEPTH`](crate::MAX_KUBECONFIG_DEPTH), one document, bounded aliases,
/// duplicate keys rejected, merge keys expanded as kubectl does). It rejects, naming the field and never its value:
///
/// * any user credential: `token`, `tokenFile`, `client-certificate[-data]`,
///   `client-key[-data]`, `username`, `password`, `exec`, `auth-provider`, impersonation;
/// * `certificate-authority` (a file path), `proxy-url`, and `insecure-skip-tls-verify: true`
///   unless the caller opts in;
/// * anything but exactly one cluster, and a `server` that is not `https://` without userinfo.
///
/// ```
/// use clusterinfo::{ClusterInfo, Trust};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let yaml = "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: https://10.0.0.1:6443\n";
/// let info = ClusterInfo::parse(yaml.as_bytes())?;
/// assert_eq!(info.server(), "https://10.0.0.1:6443");
/// assert_eq!(info.trust(), &Trust::SystemRoots);
///
/// let with_token = format!("{yaml}users:\n- name: x\n  user:\n    token: CANARY\n");
/// let err = ClusterInfo::parse(with_token.as_bytes()).unwrap_err().to_string();
/// assert!(err.contains("users[0].user.token") && !err.contains("CANARY"));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    name: String,
    server: String,
    trust: Trust,
    tls_server_name: Option<String>,
    extension: Option<ClusterExtension>,
    other_extensions: Vec<NamedExtension>,
}

/// User fields that authenticate; their presence rejects a discovery kubeconfig.
const CREDENTIAL_FIELDS: &[&str] = &[
    "token",
    "tokenFile",
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "username",
    "password",
    "exec",
    "auth-provider",
    "as",
    "as-uid",
    "as-groups",
    "as-user-extra",
];

impl ClusterInfo {
    /// A cluster with a server and a CA bundle.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidServer`] when `server` is not an acceptable `https://` URL.
    pub fn new(server: &str, ca: CaBundle) -> Result<ClusterInfo, Error> {
        ClusterInfo::with_trust(server, Trust::CaBundle(ca))
    }

    /// A cluster with a server and an explicit trust choice.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidServer`] when `server` is not an acceptable `https://` URL.
    pub fn with_trust(server: &str, trust: Trust) -> Result<ClusterInfo, Error> {
        validate_server(server, "server")?;
        Ok(ClusterInfo {
            name: String::new(),
            server: server.to_owned(),
            trust,
            tls_server_name: None,
            extension: None,
            other_extensions: Vec::new(),
        })
    }

    /// Set the TLS server name (`tls-server-name`).
    pub fn set_tls_server_name(&mut self, name: Option<String>) {
        self.tls_server_name = name;
    }

    /// Set this crate's cluster extension.
    pub fn set_extension(&mut self, extension: Option<ClusterExtension>) {
        self.extension = extension;
    }

    /// Parse a kubeconfig (YAML or JSON) with the default, strict options.
    ///
    /// # Errors
    ///
    /// See the type documentation; every failure is a typed [`Error`].
    pub fn parse(kubeconfig: &[u8]) -> Result<ClusterInfo, Error> {
        ClusterInfo::parse_with(kubeconfig, &ParseOptions::new())
    }

    /// Parse a kubeconfig (YAML or JSON) with explicit options.
    ///
    /// # Errors
    ///
    /// See the type documentation; every failure is a typed [`Error`].
    pub fn parse_with(kubeconfig: &[u8], options: &ParseOptions) -> Result<ClusterInfo, Error> {
        let doc = parse_document(kubeconfig)?;
        let root = doc
            .as_object()
            .ok_or_else(|| invalid("(root)", "a kubeconfig must be a mapping"))?;
        check_users(root)?;
        let clusters = match root.get("clusters") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(invalid("clusters", "must be a sequence")),
        };
        let [entry] = clusters else {
            return Err(Error::ClusterCount {
                found: clusters.len(),
            });
        };
        let entry = entry
            .as_object()
            .ok_or_else(|| invalid("clusters[0]", "must be a mapping"))?;
        let name = opt_str(entry, "name", "clusters[0].name")?
            .unwrap_or_default()
            .to_owned();
        let cluster = match entry.get("cluster") {
            Some(Value::Object(c)) => c,
            _ => return Err(invalid("clusters[0].cluster", "must be a mapping")),
        };
        parse_cluster(name, cluster, options)
    }

    /// The cluster entry's name (`""` in what kubeadm publishes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The server followed by the extension's equivalent servers, without repeats: the
    /// addresses a client may try in turn.
    pub fn servers(&self) -> Vec<&str> {
        let mut out = vec![self.server.as_str()];
        if let Some(ext) = &self.extension {
            for s in ext.servers() {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// How to trust the server.
    pub fn trust(&self) -> &Trust {
        &self.trust
    }

    /// The CA bundle, when the trust is a bundle.
    pub fn ca_bundle(&self) -> Option<&CaBundle> {
        match &self.trust {
            Trust::CaBundle(b) => Some(b),
            _ => None,
        }
    }

    /// The TLS server name, when set.
    pub fn tls_server_name(&self) -> Option<&str> {
        self.tls_server_name.as_deref()
    }

    /// This crate's cluster extension, when present.
    pub fn extension(&self) -> Option<&ClusterExtension> {
        self.extension.as_ref()
    }

    /// Other cluster extensions, preserved in order.
    pub fn other_extensions(&self) -> &[NamedExtension] {
        &self.other_extensions
    }

    /// The kubeconfig kubeadm publishes under the cluster-info ConfigMap's `kubeconfig` key:
    /// only `clusters`, one entry named `""`, in client-go's `Write` layout.
    ///
    /// Signatures cover these exact bytes: publish them once and never re-serialise a parsed
    /// copy for verification.
    pub fn to_kubeconfig_yaml(&self) -> String {
        let mut w = YamlWriter::new();
        w.line(0, false, "apiVersion", "v1");
        w.line(0, false, "clusters", "");
        self.write_cluster(&mut w, "\"\"");
        w.line(0, false, "contexts", "null");
        w.line(0, false, "current-context", "\"\"");
        w.line(0, false, "kind", "Config");
        w.line(0, false, "preferences", "{}");
        w.line(0, false, "users", "null");
        w.finish()
    }

    /// A kubeconfig a client can use after discovery, carrying **no credentials**: cluster
    /// `kubernetes`, user `token-bootstrap-client` (empty), context
    /// `token-bootstrap-client@kubernetes`, as kubeadm names them.
    pub fn to_client_kubeconfig_yaml(&self) -> String {
        const CLUSTER: &str = "kubernetes";
        const USER: &str = "token-bootstrap-client";
        const CONTEXT: &str = "token-bootstrap-client@kubernetes";
        let mut w = YamlWriter::new();
        w.line(0, false, "apiVersion", "v1");
        w.line(0, false, "clusters", "");
        self.write_cluster(&mut w, CLUSTER);
        w.line(0, false, "contexts", "");
        w.line(2, true, "context", "");
        w.line(4, false, "cluster", CLUSTER);
        w.line(4, false, "user", USER);
        w.line(2, false, "name", &scalar(CONTEXT));
        w.line(0, false, "current-context", &scalar(CONTEXT));
        w.line(0, false, "kind", "Config");
        w.line(0, false, "preferences", "{}");
        w.line(0, false, "users", "");
        w.line(2, true, "name", USER);
        w.line(2, false, "user", "{}");
        w.finish()
    }

    pub(crate) fn with_trust_from(mut self, bundle: CaBundle) -> ClusterInfo {
        self.trust = Trust::CaBundle(bundle);
        self
    }

    fn write_cluster(&self, w: &mut YamlWriter, name: &str) {
        w.line(2, true, "cluster", "");
        match &self.trust {
            Trust::CaBundle(b) => {
                let data = base64::engine::general_purpose::STANDARD.encode(b.as_pem());
                w.line(4, false, "certificate-authority-data", &data);
            }
            Trust::SystemRoots => {}
            Trust::DangerousSkipVerify => {}
        }
        let mut extensions = Vec::new();
        if let Some(ext) = &self.extension {
            extensions.push((CLUSTER_EXTENSION_NAME.to_owned(), ext.to_value()));
        }
        for other in &self.other_extensions {
            extensions.push((other.name.clone(), other.value.clone()));
        }
        if !extensions.is_empty() {
            w.line(4, false, "extensions", "");
            for (name, value) in extensions {
                w.value(6, true, "extension", &value);
                w.line(6, false, "name", &scalar(&name));
            }
        }
        if self.trust == Trust::DangerousSkipVerify {
            w.line(4, false, "insecure-skip-tls-verify", "true");
        }
        w.line(4, false, "server", &scalar(&self.server));
        if let Some(n) = &self.tls_server_name {
            w.line(4, false, "tls-server-name", &scalar(n));
        }
        w.line(2, false, "name", name);
    }
}

fn invalid(field: &str, reason: &'static str) -> Error {
    Error::InvalidField {
        field: field.to_owned(),
        reason,
    }
}

fn opt_str<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, Error> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(path, "must be a string")),
    }
}

fn present(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Bool(_) | Value::Number(_)) => true,
    }
}

fn check_users(root: &Map<String, Value>) -> Result<(), Error> {
    let users = match root.get("users") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(invalid("users", "must be a sequence")),
    };
    for (i, entry) in users.iter().enumerate() {
        let Some(entry) = entry.as_object() else {
            return Err(Error::InvalidField {
                field: format!("users[{i}]"),
                reason: "must be a mapping",
            });
        };
        let user = match entry.get("user") {
            None | Some(Value::Null) => continue,
            Some(Value::Object(u)) => u,
            Some(_) => {
                return Err(Error::InvalidField {
                    field: format!("users[{i}].user"),
                    reason: "must be a mapping",
                });
            }
        };
        for field in CREDENTIAL_FIELDS {
            if present(user.get(*field)) {
                return Err(Error::CredentialsPresent {
                    field: format!("users[{i}].user.{field}"),
                });
            }
        }
    }
    Ok(())
}

fn parse_cluster(
    name: String,
    c: &Map<String, Value>,
    options: &ParseOptions,
) -> Result<ClusterInfo, Error> {
    const P: &str = "clusters[0].cluster";
    let server = opt_str(c, "server", "clusters[0].cluster.server")?.unwrap_or_default();
    validate_server(server, "clusters[0].cluster.server")?;
    if present(c.get("certificate-authority")) {
        return Err(Error::ForbiddenField {
            field: format!("{P}.certificate-authority"),
            reason: "CA file paths are not honoured; embed certificate-authority-data",
        });
    }
    if present(c.get("proxy-url")) {
        return Err(Error::ForbiddenField {
            field: format!("{P}.proxy-url"),
            reason: "a discovery kubeconfig must not redirect traffic through a proxy",
        });
    }
    let insecure = match c.get("insecure-skip-tls-verify") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(invalid(
                "clusters[0].cluster.insecure-skip-tls-verify",
                "must be a boolean",
            ));
        }
    };
    let ca_data = opt_str(
        c,
        "certificate-authority-data",
        "clusters[0].cluster.certificate-authority-data",
    )?
    .unwrap_or_default();
    let trust = if !ca_data.is_empty() {
        if insecure {
            return Err(invalid(
                "clusters[0].cluster.insecure-skip-tls-verify",
                "specifying a root certificates file with the insecure flag is not allowed",
            ));
        }
        let cleaned: String = ca_data
            .chars()
            .filter(|c| *c != '\r' && *c != '\n')
            .collect();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(cleaned.as_bytes())
            .map_err(|_| {
                invalid(
                    "clusters[0].cluster.certificate-authority-data",
                    "invalid base64",
                )
            })?;
        Trust::CaBundle(CaBundle::from_pem(&pem)?)
    } else if insecure {
        if !options.allow_insecure {
            return Err(Error::ForbiddenField {
                field: format!("{P}.insecure-skip-tls-verify"),
                reason: "disabling TLS verification requires an explicit opt-in",
            });
        }
        Trust::DangerousSkipVerify
    } else {
        Trust::SystemRoots
    };
    let tls_server_name = opt_str(c, "tls-server-name", "clusters[0].cluster.tls-server-name")?
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut extension = None;
    let mut other_extensions = Vec::new();
    match c.get("extensions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let path = format!("{P}.extensions[{i}]");
                let Some(item) = item.as_object() else {
                    return Err(Error::InvalidField {
                        field: path,
                        reason: "must be a mapping",
                    });
                };
                let ext_name = match item.get("name") {
                    Some(Value::String(s)) => s.clone(),
                    _ => {
                        return Err(Error::InvalidField {
                            field: path,
                            reason: "name must be a string",
                        });
                    }
                };
                let value = item.get("extension").cloned().unwrap_or(Value::Null);
                // What is accepted must be written back in a form that parses again.
                if !crate::yaml::keys_writable(&value) {
                    return Err(Error::InvalidField {
                        field: format!("{path}.extension"),
                        reason: "mapping key longer than 1024 characters",
                    });
                }
                if ext_name == CLUSTER_EXTENSION_NAME {
                    if extension.is_some() {
                        return Err(Error::InvalidField {
                            field: path,
                            reason: "duplicate extension",
                        });
                    }
                    extension = Some(ClusterExtension::from_value(
                        &value,
                        &format!("{path}.extension"),
                    )?);
                } else {
                    other_extensions.push(NamedExtension {
                        name: ext_name,
                        value,
                    });
                }
            }
        }
        Some(_) => {
            return Err(invalid(
                "clusters[0].cluster.extensions",
                "must be a sequence",
            ));
        }
    }
    Ok(ClusterInfo {
        name,
        server: server.to_owned(),
        trust,
        tls_server_name,
        extension,
        other_extensions,
    })
}
