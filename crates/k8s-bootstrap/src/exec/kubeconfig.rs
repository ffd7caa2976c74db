//! Reading the exec stanza from a kubeconfig, and building a `kube::Client` whose
//! authentication is owned by [`ExecLayer`].

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use exec_credential::{CLUSTER_EXTENSION_KEY, Cluster, ExecConfig, ExecEnvVar, PluginPolicy};
use kube::config::{ExecInteractiveMode, KubeConfigOptions, Kubeconfig};
use tokio::io::AsyncReadExt as _;

use super::credentials::{ExecCredentials, TlsIdentity};
use super::error::Error;
use super::layer::ExecLayer;

/// The largest kubeconfig file read.
pub const MAX_KUBECONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// The largest certificate authority file read (for `provideClusterInfo`).
pub const MAX_CERTIFICATE_AUTHORITY_BYTES: u64 = 1024 * 1024;

/// How many requests kube's client stack may queue below [`ExecLayer`] (the
/// `tower::buffer::Buffer` that makes it `Clone`).
const BUFFER_BOUND: usize = 1024;

/// Where [`kube_client`] and [`ExecCredentials::from_options`] find the kubeconfig, which
/// context they use, and which credential plugin policy applies.
///
/// The defaults are kubectl's and `kube::Config::infer`'s: the files of `KUBECONFIG` that
/// exist (merged, the first to set a value wins), else `~/.kube/config`, else (with neither)
/// the in-cluster configuration of a pod; the `current-context`; and the policy of the kuberc
/// file kubectl reads (`KUBERC`, `off` for none, else `~/.kube/kuberc` when it exists).
///
/// ```
/// use k8s_bootstrap::exec::KubeconfigOptions;
/// use k8s_bootstrap::exec_credential::PluginPolicy;
///
/// let options = KubeconfigOptions::infer()
///     .kubeconfig("/etc/kubernetes/admin.conf")
///     .context("prod")
///     .plugin_policy(PluginPolicy::allowlist(["aws", "/usr/local/bin/kubelogin"])?);
/// # Ok::<(), k8s_bootstrap::exec_credential::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct KubeconfigOptions {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    policy: PolicySource,
}

#[derive(Debug, Clone, Default)]
enum PolicySource {
    /// kubectl's kuberc lookup.
    #[default]
    Kuberc,
    /// This kuberc file.
    KubercFile(PathBuf),
    /// This policy.
    Policy(PluginPolicy),
}

impl KubeconfigOptions {
    /// The defaults: inferred kubeconfig, its `current-context`, kubectl's kuberc policy.
    #[must_use]
    pub fn infer() -> KubeconfigOptions {
        KubeconfigOptions::default()
    }

    /// Reads this kubeconfig file only (kubectl's `--kubeconfig`).
    #[must_use]
    pub fn kubeconfig(mut self, path: impl Into<PathBuf>) -> KubeconfigOptions {
        self.kubeconfig = Some(path.into());
        self
    }

    /// Uses this context instead of the `current-context` (kubectl's `--context`).
    #[must_use]
    pub fn context(mut self, name: impl Into<String>) -> KubeconfigOptions {
        self.context = Some(name.into());
        self
    }

    /// Applies this credential plugin policy (no kuberc is read).
    #[must_use]
    pub fn plugin_policy(mut self, policy: PluginPolicy) -> KubeconfigOptions {
        self.policy = PolicySource::Policy(policy);
        self
    }

    /// Reads the credential plugin policy from this kuberc file (kubectl's `--kuberc`).
    #[must_use]
    pub fn kuberc(mut self, path: impl Into<PathBuf>) -> KubeconfigOptions {
        self.policy = PolicySource::KubercFile(path.into());
        self
    }
}

/// A `kube::Client` built by [`kube_client`], with kube's configuration (without the `exec`
/// stanza) and the exec credentials when the user has an `exec` stanza.
#[derive(Clone)]
pub struct ExecClient {
    client: kube::Client,
    config: kube::Config,
    credentials: Option<ExecCredentials>,
}

impl core::fmt::Debug for ExecClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExecClient")
            .field("cluster_url", &self.config.cluster_url)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl ExecClient {
    /// The client.
    #[must_use]
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The client, consuming this.
    #[must_use]
    pub fn into_client(self) -> kube::Client {
        self.client
    }

    /// kube's configuration of the context (server, CA, namespace, ...), without the `exec`
    /// stanza.
    #[must_use]
    pub fn config(&self) -> &kube::Config {
        &self.config
    }

    /// The exec credentials the client authenticates with, when the user has an `exec` stanza
    /// (`None` for a user with a token, a certificate, or in-cluster credentials, which kube
    /// handles).
    #[must_use]
    pub fn credentials(&self) -> Option<&ExecCredentials> {
        self.credentials.as_ref()
    }
}

/// A `kube::Client` inferred as `kube::Client::try_default` infers it (see
/// [`KubeconfigOptions::infer`]), whose exec plugin, if the user has one, runs under this
/// module's layer: client-go's rules, the 401 refresh and retry, single flight, the kuberc
/// plugin policy.
///
/// ```no_run
/// # async fn demo() -> Result<(), k8s_bootstrap::exec::Error> {
/// let client = k8s_bootstrap::exec::infer_kube_client().await?;
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`kube_client`].
pub async fn infer_kube_client() -> Result<kube::Client, Error> {
    Ok(kube_client(&KubeconfigOptions::infer()).await?.client)
}

/// A `kube::Client` for the kubeconfig, context and policy of `options`.
///
/// * A user with an `exec` stanza: [`ExecCredentials`] with client-go's defaulting,
///   validation and relative-command resolution, the policy of `options` (kuberc by default)
///   checked with Go's `PATH` lookup ([`look_path`](super::look_path)), and kube's
///   configuration without the stanza, so that kube does not run the plugin too. Building
///   does not run the plugin: the first request does. Requests carry the token; when the
///   plugin returns a client certificate, connections present the current one (a new
///   certificate, after expiry or a 401, is used from the next request on, over new
///   connections; the previous certificate's idle connections are closed).
/// * A user with a token, a certificate or a username (client-go then ignores `exec`), or
///   without credentials, and the in-cluster configuration: kube's own client.
///
/// Needs a tokio runtime.
///
/// # Errors
///
/// [`Error::NoKubeconfig`], [`Error::KubeconfigEnvMissing`], [`Error::ReadKubeconfig`],
/// [`Error::FileTooLarge`], [`Error::ParseKubeconfig`], [`Error::NoCurrentContext`], [`Error::MissingEntry`],
/// [`Error::InvalidExecStanza`], [`Error::InvalidCluster`],
/// [`Error::ReadCertificateAuthority`], [`Error::ReadKuberc`], [`Error::Kuberc`],
/// [`Error::Authenticator`], [`Error::KubeConfig`], [`Error::KubeClient`].
pub async fn kube_client(options: &KubeconfigOptions) -> Result<ExecClient, Error> {
    match load_options(options).await? {
        Some(loaded) => build_client(loaded),
        None => {
            let config = kube::Config::incluster().map_err(|e| Error::NoKubeconfig {
                in_cluster: Some(e),
            })?;
            let client = kube::Client::try_from(config.clone()).map_err(Error::KubeClient)?;
            Ok(ExecClient {
                client,
                config,
                credentials: None,
            })
        }
    }
}

fn build_client(loaded: Loaded) -> Result<ExecClient, Error> {
    let Some(exec) = loaded.exec else {
        let client = kube::Client::try_from(loaded.config.clone()).map_err(Error::KubeClient)?;
        return Ok(ExecClient {
            client,
            config: loaded.config,
            credentials: None,
        });
    };
    let credentials = ExecCredentials::with_policy(exec.exec, exec.cluster, exec.policy)?;
    let client = super::layer::following_client(loaded.config.clone(), credentials.clone())?;
    Ok(ExecClient {
        client,
        config: loaded.config,
        credentials: Some(credentials),
    })
}

/// kube's configuration for `context` (`None`: the `current-context`) of the kubeconfig at
/// `path`, with the user's `exec` stanza removed so that kube does not run the plugin too.
/// Everything else (server, CA, TLS server name, proxy, impersonation, namespace) is kube's
/// reading of the file.
///
/// # Errors
///
/// [`Error::ParseKubeconfig`] when kube cannot read the file; [`Error::NoCurrentContext`] or
/// [`Error::MissingEntry`] when the context is not there; [`Error::KubeConfig`] when kube
/// cannot build its configuration.
pub async fn kube_config_without_exec(
    path: impl AsRef<Path>,
    context: Option<&str>,
) -> Result<kube::Config, Error> {
    let path = path.as_ref();
    let mut kubeconfig = Kubeconfig::read_from(path).map_err(|source| Error::ParseKubeconfig {
        path: path.to_path_buf(),
        source,
    })?;
    let context = context_name(&kubeconfig, context)?;
    let user = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    if let Some(user) = user {
        for named in &mut kubeconfig.auth_infos {
            if named.name == user
                && let Some(auth_info) = &mut named.auth_info
            {
                auth_info.exec = None;
            }
        }
    }
    let options = KubeConfigOptions {
        context: Some(context),
        ..KubeConfigOptions::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(Error::KubeConfig)
}

/// A `kube::Client` for `config` that authenticates with `credentials` through
/// [`ExecLayer`] (below it a `tower::buffer::BufferLayer`, since kube's stack is not
/// `Clone`). When `identity` is given, the client presents that TLS client certificate
/// (replacing any in `config`); call this again with the new identity when
/// [`ExecCredentials::subscribe_client_identity`] reports a rotation.
///
/// `config` should not carry the `exec` stanza (see [`kube_config_without_exec`]), or kube
/// runs the plugin as well.
///
/// Needs a tokio runtime (kube's client spawns its buffer task).
///
/// # Errors
///
/// [`Error::KubeClient`] when kube cannot build the TLS connector.
pub fn kube_client_with_exec(
    mut config: kube::Config,
    credentials: &ExecCredentials,
    identity: Option<&TlsIdentity>,
) -> Result<kube::Client, Error> {
    if let Some(identity) = identity {
        let auth = &mut config.auth_info;
        auth.client_certificate = None;
        auth.client_key = None;
        auth.client_certificate_data = Some(STANDARD.encode(identity.certificate_pem()));
        auth.client_key_data = Some(STANDARD.encode(identity.key().expose_secret()).into());
    }
    let builder = kube::client::ClientBuilder::try_from(config).map_err(Error::KubeClient)?;
    Ok(builder
        .with_layer(&tower::buffer::BufferLayer::<
            http::Request<kube::client::Body>,
        >::new(BUFFER_BOUND))
        .with_layer(&ExecLayer::new(credentials.clone()))
        .build())
}

/// What the kubeconfig selected by the options holds.
pub(crate) struct Loaded {
    /// kube's configuration of the context, without the `exec` stanza.
    pub(crate) config: kube::Config,
    /// The exec stanza, when the user has one that client-go would run.
    pub(crate) exec: Option<LoadedExec>,
    /// The selected user's name.
    pub(crate) user: String,
}

/// An exec user's stanza (defaulted, validated, relative command resolved), cluster, and
/// the policy that applies.
pub(crate) struct LoadedExec {
    pub(crate) exec: ExecConfig,
    pub(crate) cluster: Cluster,
    pub(crate) policy: PluginPolicy,
}

/// Loads what `options` select; `None` when no kubeconfig was named and none exists (the
/// caller falls back to the in-cluster configuration, as `kube::Config::infer` does).
pub(crate) async fn load_options(options: &KubeconfigOptions) -> Result<Option<Loaded>, Error> {
    let Some(mut merged) = read_kubeconfigs(options).await? else {
        return Ok(None);
    };
    let context = context_name(&merged, options.context.as_deref())?;
    let ctx = merged
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| missing("context", &context))?;
    let user_name = ctx.user.clone().unwrap_or_default();
    let user = merged
        .auth_infos
        .iter_mut()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info.as_mut());
    // client-go ignores `exec` when the user has a token, basic or certificate credentials.
    let stanza = match user {
        Some(user) => {
            let other = user.token.is_some()
                || user.token_file.is_some()
                || user.username.is_some()
                || user.client_certificate.is_some()
                || user.client_certificate_data.is_some();
            let stanza = user.exec.take();
            if other && stanza.is_some() {
                tracing::warn!(
                    user = %user_name,
                    "the kubeconfig user has other credentials: its exec stanza is ignored, as client-go ignores it"
                );
            }
            stanza.filter(|_| !other)
        }
        None => None,
    };
    let exec = match stanza {
        None => None,
        Some(stanza) => {
            let mut exec = exec_config(&stanza);
            exec.apply_defaults();
            exec.validate(&user_name)
                .map_err(|source| Error::InvalidExecStanza {
                    user: user_name.clone(),
                    source,
                })?;
            let cluster = exec_cluster(&merged, &ctx.cluster, exec.provide_cluster_info).await?;
            let policy = policy(&options.policy).await?;
            Some(LoadedExec {
                exec,
                cluster,
                policy,
            })
        }
    };
    let kube_options = KubeConfigOptions {
        context: Some(context),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(merged, &kube_options)
        .await
        .map_err(Error::KubeConfig)?;
    Ok(Some(Loaded {
        config,
        exec,
        user: user_name,
    }))
}

/// The kubeconfig files `options` name (or kubectl's: the files of `KUBECONFIG` that exist,
/// else `~/.kube/config`),
/// each read with a size bound and its relative paths (files and a relative `exec` command
/// with a separator) made absolute against its own directory as client-go's loader does, then
/// merged (the first file to set a value wins). `None` when nothing was named and
/// `~/.kube/config` does not exist.
async fn read_kubeconfigs(options: &KubeconfigOptions) -> Result<Option<Kubeconfig>, Error> {
    let paths: Vec<PathBuf> = match &options.kubeconfig {
        Some(path) => vec![path.clone()],
        None => {
            let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
                .map(|v| {
                    std::env::split_paths(&v)
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default();
            if listed.is_empty() {
                match home().map(|h| h.join(".kube").join("config")) {
                    Some(default) if exists(&default).await => vec![default],
                    _ => return Ok(None),
                }
            } else {
                // kubectl skips the files of the list that do not exist; when none does, the
                // variable names nothing usable, and saying so beats falling back elsewhere.
                let mut present = Vec::new();
                let mut first_error = None;
                for path in &listed {
                    match tokio::fs::metadata(path).await {
                        Ok(_) => present.push(path.clone()),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                if present.is_empty() {
                    return Err(Error::KubeconfigEnvMissing {
                        paths: listed,
                        source: first_error
                            .unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)),
                    });
                }
                present
            }
        }
    };
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        let path = absolute(&path)?;
        let bytes = read_bounded(&path, MAX_KUBECONFIG_BYTES)
            .await
            .map_err(|e| {
                e.into_error(&path, |path, source| Error::ReadKubeconfig { path, source })
            })?;
        let text = String::from_utf8_lossy(&bytes);
        let parse = |source| Error::ParseKubeconfig {
            path: path.clone(),
            source,
        };
        let mut file = Kubeconfig::from_yaml(&text).map_err(parse)?;
        let dir = path.parent().unwrap_or(Path::new("/"));
        make_paths_absolute(&mut file, dir);
        merged = Some(match merged {
            None => file,
            Some(m) => m.merge(file).map_err(parse)?,
        });
    }
    Ok(merged)
}

/// client-go's `ResolveLocalPaths` for one file.
fn make_paths_absolute(kubeconfig: &mut Kubeconfig, dir: &Path) {
    let fix = |p: &mut Option<String>| {
        if let Some(path) = p
            && Path::new(path.as_str()).is_relative()
            && !path.is_empty()
        {
            *path = dir.join(path.as_str()).to_string_lossy().into_owned();
        }
    };
    for named in &mut kubeconfig.clusters {
        if let Some(cluster) = &mut named.cluster {
            fix(&mut cluster.certificate_authority);
        }
    }
    for named in &mut kubeconfig.auth_infos {
        if let Some(user) = &mut named.auth_info {
            fix(&mut user.client_certificate);
            fix(&mut user.client_key);
            fix(&mut user.token_file);
            if let Some(exec) = &mut user.exec
                && let Some(command) = &mut exec.command
            {
                let mut resolved = ExecConfig::default();
                resolved.command = core::mem::take(command);
                resolved.resolve_relative_to(dir);
                *command = resolved.command;
            }
        }
    }
}

/// The cluster the plugin is told about (`spec.cluster`), with the CA file's bytes when
/// `provideClusterInfo` is set.
async fn exec_cluster(
    kubeconfig: &Kubeconfig,
    name: &str,
    provide_cluster_info: bool,
) -> Result<Cluster, Error> {
    let entry = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| missing("cluster", name))?;
    let invalid = |source| Error::InvalidCluster {
        cluster: name.to_owned(),
        source,
    };
    let mut cluster: Cluster =
        serde_json::from_value(serde_json::to_value(entry).map_err(invalid)?).map_err(invalid)?;
    cluster.config = entry
        .extensions
        .iter()
        .flatten()
        .find(|e| e.name == CLUSTER_EXTENSION_KEY)
        .map(|e| e.extension.clone());
    if provide_cluster_info
        && cluster.certificate_authority_data.is_empty()
        && let Some(file) = &entry.certificate_authority
    {
        let ca = PathBuf::from(file);
        cluster.certificate_authority_data = read_bounded(&ca, MAX_CERTIFICATE_AUTHORITY_BYTES)
            .await
            .map_err(|e| {
                e.into_error(&ca, |path, source| Error::ReadCertificateAuthority {
                    path,
                    source,
                })
            })?;
    }
    Ok(cluster)
}

/// The largest kuberc file read (the core's [`exec_credential::MAX_KUBERC_BYTES`]).
pub const MAX_KUBERC_BYTES: u64 = 1024 * 1024;

/// The policy `source` gives. kubectl's lookup: `KUBERC` names the file (`off`: no kuberc; a
/// named file must exist), else `~/.kube/kuberc` when it exists; no file allows everything.
async fn policy(source: &PolicySource) -> Result<PluginPolicy, Error> {
    let path = match source {
        PolicySource::Policy(policy) => return Ok(policy.clone()),
        PolicySource::KubercFile(path) => path.clone(),
        PolicySource::Kuberc => match std::env::var_os("KUBERC") {
            Some(v) if v == "off" => return Ok(PluginPolicy::AllowAll),
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => match home().map(|h| h.join(".kube").join("kuberc")) {
                Some(default) if exists(&default).await => default,
                _ => return Ok(PluginPolicy::AllowAll),
            },
        },
    };
    let bytes = read_bounded(&path, MAX_KUBERC_BYTES)
        .await
        .map_err(|e| e.into_error(&path, |path, source| Error::ReadKuberc { path, source }))?;
    let text = String::from_utf8_lossy(&bytes);
    PluginPolicy::from_kuberc_yaml(&text).map_err(|source| Error::Kuberc { path, source })
}

async fn exists(path: &Path) -> bool {
    tokio::fs::try_exists(path).await.unwrap_or(false)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// kube's reading of the stanza in the core's type (kube has already parsed the YAML).
fn exec_config(stanza: &kube::config::ExecConfig) -> ExecConfig {
    let mut exec = ExecConfig::default();
    exec.command = stanza.command.clone().unwrap_or_default();
    exec.args = stanza.args.clone().unwrap_or_default();
    exec.env = stanza
        .env
        .iter()
        .flatten()
        .map(|entry| {
            ExecEnvVar::new(
                entry.get("name").cloned().unwrap_or_default(),
                entry.get("value").cloned().unwrap_or_default(),
            )
        })
        .collect();
    exec.api_version = stanza.api_version.clone().unwrap_or_default();
    exec.install_hint = stanza.install_hint.clone().unwrap_or_default();
    exec.provide_cluster_info = stanza.provide_cluster_info;
    exec.interactive_mode = match &stanza.interactive_mode {
        None => "",
        Some(ExecInteractiveMode::Never) => "Never",
        Some(ExecInteractiveMode::IfAvailable) => "IfAvailable",
        Some(ExecInteractiveMode::Always) => "Always",
    }
    .to_owned();
    exec
}

fn context_name(kubeconfig: &Kubeconfig, context: Option<&str>) -> Result<String, Error> {
    context
        .map(str::to_owned)
        .or_else(|| kubeconfig.current_context.clone())
        .filter(|c| !c.is_empty())
        .ok_or(Error::NoCurrentContext)
}

fn missing(kind: &'static str, name: &str) -> Error {
    Error::MissingEntry {
        kind,
        name: name.chars().take(256).collect(),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(path).map_err(|source| Error::ReadKubeconfig {
        path: path.to_path_buf(),
        source,
    })
}

enum ReadError {
    Io(std::io::Error),
    TooLarge(u64),
}

impl ReadError {
    fn into_error(self, path: &Path, io: impl FnOnce(PathBuf, std::io::Error) -> Error) -> Error {
        match self {
            ReadError::Io(e) => io(path.to_path_buf(), e),
            ReadError::TooLarge(limit) => Error::FileTooLarge {
                path: path.to_path_buf(),
                limit,
            },
        }
    }
}

async fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = tokio::fs::File::open(path).await.map_err(ReadError::Io)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(ReadError::Io)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}
