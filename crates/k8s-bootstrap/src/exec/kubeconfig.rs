//! Reading the exec stanza from a kubeconfig, and building a `kube::Client` whose
//! authentication is owned by [`ExecLayer`].

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use exec_credential::{CLUSTER_EXTENSION_KEY, Cluster, ExecConfig, ExecEnvVar};
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

/// Loads the context's exec stanza and cluster, builds [`ExecCredentials`] for them, runs the
/// plugin once (so that a TLS client certificate, if the plugin returns one, is in place before
/// the first connection), and builds a `kube::Client` that authenticates with [`ExecLayer`].
///
/// `context` selects the kubeconfig context (`None`: its `current-context`). kube does not run
/// the plugin itself: the user's `exec` stanza is removed from the configuration kube sees (see
/// [`kube_config_without_exec`]), so the layer owns authentication. When the plugin returns a
/// client certificate, the client presents the one current at build time; to follow
/// rotations, watch [`ExecCredentials::subscribe_client_identity`] and build a new client
/// with [`kube_client_with_exec`].
///
/// # Errors
///
/// As [`ExecCredentials::from_kubeconfig`] and [`ExecCredentials::credential`] (the first
/// plugin run), [`Error::KubeConfig`] and [`Error::KubeClient`].
pub async fn kube_client_from_kubeconfig(
    path: impl AsRef<Path>,
    context: Option<&str>,
) -> Result<(kube::Client, ExecCredentials), Error> {
    let path = absolute(path.as_ref())?;
    let loaded = load(&path, context).await?;
    let credentials = ExecCredentials::new(loaded.exec, loaded.cluster)?;
    let config = kube_config_without_exec(&path, Some(&loaded.context)).await?;
    let identity = credentials
        .credential()
        .await?
        .client_identity()
        .is_some()
        .then(|| credentials.subscribe_client_identity().borrow().clone())
        .flatten();
    let client = kube_client_with_exec(config, &credentials, identity.as_ref())?;
    Ok((client, credentials))
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

/// What [`ExecCredentials::from_kubeconfig`] needs from a kubeconfig.
pub(crate) struct Loaded {
    pub(crate) exec: ExecConfig,
    pub(crate) cluster: Cluster,
    pub(crate) context: String,
}

/// Reads the context's exec stanza (defaulted, validated, relative command resolved against
/// the kubeconfig's directory, all as the core says) and its cluster.
pub(crate) async fn load(path: &Path, context: Option<&str>) -> Result<Loaded, Error> {
    let path = absolute(path)?;
    let bytes = read_bounded(&path, MAX_KUBECONFIG_BYTES)
        .await
        .map_err(|e| e.into_error(&path, |path, source| Error::ReadKubeconfig { path, source }))?;
    let text = String::from_utf8_lossy(&bytes);
    let kubeconfig = Kubeconfig::from_yaml(&text).map_err(|source| Error::ParseKubeconfig {
        path: path.clone(),
        source,
    })?;
    let context = context_name(&kubeconfig, context)?;
    let ctx = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| missing("context", &context))?;
    let user_name = ctx.user.clone().unwrap_or_default();
    let user = kubeconfig
        .auth_infos
        .iter()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info.as_ref())
        .ok_or_else(|| missing("user", &user_name))?;
    let stanza = user.exec.as_ref().ok_or_else(|| Error::NoExecStanza {
        user: user_name.clone(),
    })?;
    let mut exec = exec_config(stanza);
    exec.apply_defaults();
    exec.validate(&user_name)
        .map_err(|source| Error::InvalidExecStanza {
            user: user_name.clone(),
            source,
        })?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    exec.resolve_relative_to(dir);

    let entry = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| missing("cluster", &ctx.cluster))?;
    let invalid = |source| Error::InvalidCluster {
        cluster: ctx.cluster.clone(),
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
    if exec.provide_cluster_info
        && cluster.certificate_authority_data.is_empty()
        && let Some(file) = &entry.certificate_authority
    {
        let ca = dir.join(file);
        cluster.certificate_authority_data = read_bounded(&ca, MAX_CERTIFICATE_AUTHORITY_BYTES)
            .await
            .map_err(|e| {
                e.into_error(&ca, |path, source| Error::ReadCertificateAuthority {
                    path,
                    source,
                })
            })?;
    }
    Ok(Loaded {
        exec,
        cluster,
        context,
    })
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
