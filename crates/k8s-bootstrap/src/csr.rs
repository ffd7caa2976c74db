//! The kubelet's TLS bootstrap over the network: file the node's certificate signing request
//! with the bootstrap credentials, wait until the control plane approves and signs it (or
//! denies it, or time runs out), check the certificate, and write the node's credentials.
//!
//! The rules (the request, its name, what a valid certificate is) are the `tls-bootstrap`
//! core's, re-exported as [`crate::tls_bootstrap`]; this module only talks to the API server,
//! as the kubelet's `bootstrap` package and client-go's `certificate/csr` do:
//!
//! 1. create `certificatesigningrequests/node-csr-<hash>`; if it already exists (a restarted
//!    node), reuse it when it is compatible (same subject, signer and key, and no issued
//!    certificate expired);
//! 2. list it by `metadata.name` and watch it from that list's resource version, re-listing
//!    when the watch ends or expires (410);
//! 3. a `Denied` or `Failed` condition (whatever its status, as client-go reads them) ends the
//!    wait with its reason and message; deletion or a changed UID too; `Approved` with a
//!    certificate ends it with that certificate;
//! 4. the certificate is accepted only if it chains to the cluster CA from discovery, holds the
//!    node's key and subject, and allows client authentication.
//!
//! ```no_run
//! # async fn demo(bootstrap_kubeconfig_yaml: &str, ca_pem: &str) -> Result<(), k8s_bootstrap::csr::Error> {
//! use k8s_bootstrap::csr;
//! use k8s_bootstrap::tls_bootstrap::{NodeKey, NodeName};
//!
//! let client = csr::client_from_kubeconfig(bootstrap_kubeconfig_yaml).await?;
//! let node: NodeName = "worker-1".parse().map_err(csr::Error::Request)?;
//! let key = NodeKey::generate().map_err(csr::Error::Request)?;
//! let cert = csr::request_certificate(&client, &node, &key, ca_pem, &csr::Options::default()).await?;
//! csr::write_credentials(
//!     std::path::Path::new("/var/lib/kubelet/pki/kubelet-client-current.pem"),
//!     std::path::Path::new("/etc/kubernetes/kubelet.conf"),
//!     "https://10.0.0.1:6443",
//!     ca_pem,
//!     &cert,
//!     &key,
//!     k8s_bootstrap::files::Existing::Refuse,
//! )?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::TryStreamExt as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, IssuedCertificate, Issuer,
    KUBELET_CLIENT_SIGNER, NodeKey, NodeName, State, Waiting,
};

/// How long the kubelet waits for its bootstrap certificate (one hour).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// How long one watch request may last before it is renewed (as client-go's reflector asks).
const WATCH_TIMEOUT_SECONDS: u32 = 290;

/// What to ask for and how long to wait.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// `spec.expirationSeconds`: the lifetime asked for (the signer may shorten it); `None`
    /// leaves it to the signer, as the kubelet does.
    pub expiration: Option<Duration>,
    /// How long to wait for approval and issuance.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            expiration: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What can go wrong, one variant per step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bootstrap kubeconfig cannot be read or gives no client.
    #[error("couldn't build a client from the bootstrap kubeconfig: {0}")]
    Client(String),
    /// Building the request failed, or an argument was invalid.
    #[error("couldn't build the certificate signing request: {0}")]
    Request(#[source] tls_bootstrap::Error),
    /// The API server refused or failed the create.
    #[error("couldn't create certificate signing request {name}: {source}")]
    Create {
        /// The request's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A request of ours already exists but was filed for another key, subject or signer, or
    /// a certificate issued for it has expired.
    #[error("certificate signing request {name} already exists: {source}")]
    Incompatible {
        /// The request's name.
        name: String,
        /// What differs.
        #[source]
        source: tls_bootstrap::Error,
    },
    /// Reading or watching the request failed.
    #[error("couldn't watch certificate signing request {name}: {source}")]
    Watch {
        /// The request's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The object the server returned is not a valid request.
    #[error("certificate signing request {name} as returned is invalid: {source}")]
    Invalid {
        /// The request's name.
        name: String,
        /// Why.
        #[source]
        source: tls_bootstrap::Error,
    },
    /// The request was denied.
    #[error("certificate signing request is denied, reason: {reason}, message: {message}")]
    Denied {
        /// The condition's reason.
        reason: String,
        /// The condition's message.
        message: String,
    },
    /// The signer failed the request.
    #[error("certificate signing request failed, reason: {reason}, message: {message}")]
    Failed {
        /// The condition's reason.
        reason: String,
        /// The condition's message.
        message: String,
    },
    /// The request was deleted while waiting.
    #[error("csr {name:?} was deleted")]
    Deleted {
        /// The request's name.
        name: String,
    },
    /// The request was replaced by another one of the same name.
    #[error("csr {name:?} changed UIDs")]
    UidChanged {
        /// The request's name.
        name: String,
    },
    /// No certificate within the timeout, and the request was not approved.
    #[error(
        "timed out after {after:?} waiting for certificate signing request {name} to be approved and issued"
    )]
    Timeout {
        /// The request's name.
        name: String,
        /// The timeout.
        after: Duration,
    },
    /// No certificate within the timeout, although the request was approved: no signer issued
    /// it (for the kubelet's signer, kube-controller-manager's `csrsigning` controller is not
    /// running or has no signing CA).
    #[error(
        "timed out after {after:?} waiting for the certificate of certificate signing request \
         {name}: it is approved, but signer {signer_name} did not issue it ({issuer})"
    )]
    NotIssued {
        /// The request's name.
        name: String,
        /// The timeout.
        after: Duration,
        /// The request's `spec.signerName`.
        signer_name: String,
        /// Who issues for that name.
        issuer: Issuer,
    },
    /// The issued certificate is not acceptable.
    #[error("the issued certificate for {name} is not acceptable: {source}")]
    Certificate {
        /// The request's name.
        name: String,
        /// Why.
        #[source]
        source: tls_bootstrap::Error,
    },
    /// A credential file could not be written.
    #[error("couldn't write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A `kube::Client` from a kubeconfig's text (the TLS-bootstrap kubeconfig `join` writes),
/// using its current context.
///
/// # Errors
///
/// [`Error::Client`] when the YAML is not a kubeconfig or names no usable cluster.
pub async fn client_from_kubeconfig(yaml: &str) -> Result<kube::Client, Error> {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(yaml).map_err(|e| Error::Client(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| Error::Client(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| Error::Client(e.to_string()))
}

/// Files the node's request and waits for its certificate, which is returned only once
/// [`tls_bootstrap::accept_certificate`] accepts it against `ca_pem` (the cluster CA from
/// discovery).
///
/// # Errors
///
/// One variant per step; [`Error::Denied`], [`Error::Failed`], [`Error::Deleted`],
/// [`Error::UidChanged`], [`Error::Timeout`] and [`Error::NotIssued`] end the wait as the
/// kubelet's do.
pub async fn request_certificate(
    client: &kube::Client,
    node: &NodeName,
    key: &NodeKey,
    ca_pem: &str,
    options: &Options,
) -> Result<IssuedCertificate, Error> {
    request_certificate_with_progress(client, node, key, ca_pem, options, |_| {}).await
}

/// [`request_certificate`], calling `progress` with what the request waits for
/// ([`CertificateSigningRequest::waiting`]: approval, or a signer to issue the certificate of
/// the approved request) each time a version of it that still waits is read: for a progress
/// line that tells "pending approval" from "approved, no signer has issued it".
///
/// # Errors
///
/// As [`request_certificate`]: a timeout after the approval is [`Error::NotIssued`], naming
/// the signer.
#[tracing::instrument(skip_all, fields(node = %node))]
pub async fn request_certificate_with_progress(
    client: &kube::Client,
    node: &NodeName,
    key: &NodeKey,
    ca_pem: &str,
    options: &Options,
    progress: impl Fn(Waiting<'_>) + Send + Sync,
) -> Result<IssuedCertificate, Error> {
    let request = CertificateRequest::for_node(node, key).map_err(Error::Request)?;
    let object = CertificateSigningRequest::for_node(&request, options.expiration)
        .map_err(Error::Request)?;
    let name = object.name().unwrap_or_default().to_owned();
    let api: Api<ApiCsr> = Api::all(client.clone());
    let deadline = tokio::time::Instant::from_std(crate::clock::instant())
        .checked_add(options.timeout)
        .unwrap_or_else(|| tokio::time::Instant::from_std(crate::clock::instant()));
    // The signer of the request as last read, once approved without a certificate.
    let approved = std::sync::Mutex::new(None::<(String, Issuer)>);
    let observe = |waiting: Waiting<'_>| {
        let issuance = match waiting {
            Waiting::Issuance {
                signer_name,
                issuer,
            } => Some((signer_name.to_owned(), issuer)),
            _ => None,
        };
        if let Ok(mut last) = approved.lock()
            && *last != issuance
        {
            if let Some((signer, issuer)) = &issuance {
                tracing::info!(
                    csr = %name,
                    signer = %signer,
                    issuer = %issuer,
                    "certificate signing request approved, waiting for its signer to issue the certificate"
                );
            }
            *last = issuance;
        }
        progress(waiting);
    };
    let wait = async {
        let uid = create_or_reuse(&api, &object, &request, &name).await?;
        tracing::info!(csr = %name, "certificate signing request filed, waiting for approval");
        let accept = |pem: &[u8]| {
            tls_bootstrap::accept_certificate(
                pem,
                ca_pem.as_bytes(),
                key,
                node,
                crate::clock::now(),
            )
        };
        wait_for_certificate(&api, &name, uid.as_deref(), &accept, &observe).await
    };
    match tokio::time::timeout_at(deadline, wait).await {
        Ok(result) => result,
        Err(_) => Err(match approved.lock().ok().and_then(|mut a| a.take()) {
            Some((signer_name, issuer)) => Error::NotIssued {
                name,
                after: options.timeout,
                signer_name,
                issuer,
            },
            None => Error::Timeout {
                name,
                after: options.timeout,
            },
        }),
    }
}

/// The name of the certificate signing request [`request_certificate`] files for `node` and
/// `key` (`node-csr-<hash>`, as the kubelet names it): what an administrator approves with
/// `kubectl certificate approve <name>`.
///
/// # Errors
///
/// [`Error::Request`] when the request cannot be built.
pub fn request_name(node: &NodeName, key: &NodeKey) -> Result<String, Error> {
    let request = CertificateRequest::for_node(node, key).map_err(Error::Request)?;
    let object = CertificateSigningRequest::for_node(&request, None).map_err(Error::Request)?;
    Ok(object.name().unwrap_or_default().to_owned())
}

/// Writes the node's credentials as the kubelet keeps them: `pem_path` (the certificate, then
/// the key; mode 0600) and `kubeconfig_path` (mode 0600), whose user names `pem_path` as both
/// its `client-certificate` and `client-key` (made absolute). Each file is written whole, and
/// over an existing one only with [`Existing::Replace`](crate::files::Existing).
///
/// # Errors
///
/// [`Error::Write`] (with [`std::io::ErrorKind::AlreadyExists`] for a file `existing`
/// refuses), or [`Error::Request`] when `server` is not `https://`.
pub fn write_credentials(
    pem_path: &Path,
    kubeconfig_path: &Path,
    server: &str,
    ca_pem: &str,
    certificate: &IssuedCertificate,
    key: &NodeKey,
    existing: crate::files::Existing,
) -> Result<(), Error> {
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Write { path, source }
    };
    if let Some(dir) = pem_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(write_err(pem_path))?;
    }
    let pem = certificate.to_kubelet_pem(key).map_err(Error::Request)?;
    crate::files::write_private(pem_path, pem.as_bytes(), existing).map_err(write_err(pem_path))?;
    let absolute = std::path::absolute(pem_path).map_err(write_err(pem_path))?;
    let kubeconfig = tls_bootstrap::kubelet_kubeconfig(server, ca_pem, &absolute.to_string_lossy())
        .map_err(Error::Request)?;
    crate::files::write_private(kubeconfig_path, kubeconfig.as_bytes(), existing)
        .map_err(write_err(kubeconfig_path))
}

/// Creates the request, or on `AlreadyExists` reads the existing one and reuses it if it is
/// ours; returns its UID.
async fn create_or_reuse(
    api: &Api<ApiCsr>,
    object: &CertificateSigningRequest,
    request: &CertificateRequest,
    name: &str,
) -> Result<Option<String>, Error> {
    let typed = ApiCsr::try_from(object).map_err(Error::Request)?;
    match api.create(&PostParams::default(), &typed).await {
        Ok(created) => Ok(created.metadata.uid),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            tracing::info!(csr = %name, "csr for this node already exists, reusing");
            let existing = api.get(name).await.map_err(|source| Error::Create {
                name: name.to_owned(),
                source,
            })?;
            let ours = CertificateSigningRequest::try_from(&existing).map_err(|source| {
                Error::Invalid {
                    name: name.to_owned(),
                    source,
                }
            })?;
            ours.ensure_compatible(request, KUBELET_CLIENT_SIGNER, crate::clock::now())
                .map_err(|source| Error::Incompatible {
                    name: name.to_owned(),
                    source,
                })?;
            Ok(existing.metadata.uid)
        }
        Err(source) => Err(Error::Create {
            name: name.to_owned(),
            source,
        }),
    }
}

/// Lists and watches the request by name until it is decided, telling `observe` what each
/// version read that still waits is waiting for, and returning what `accept` makes of the
/// issued certificate's PEM.
pub(crate) async fn wait_for_certificate<T>(
    api: &Api<ApiCsr>,
    name: &str,
    uid: Option<&str>,
    accept: &(impl Fn(&[u8]) -> Result<T, tls_bootstrap::Error> + Sync),
    observe: &(impl Fn(Waiting<'_>) + Sync),
) -> Result<T, Error> {
    let watch_err = |source| Error::Watch {
        name: name.to_owned(),
        source,
    };
    let selector = format!("metadata.name={name}");
    loop {
        let list = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(watch_err)?;
        let Some(current) = list.items.first() else {
            return Err(Error::Deleted {
                name: name.to_owned(),
            });
        };
        if let Some(cert) = judge(current, name, uid, accept, observe)? {
            return Ok(cert);
        }
        let version = list.metadata.resource_version.unwrap_or_default();
        let params = WatchParams::default()
            .fields(&selector)
            .timeout(WATCH_TIMEOUT_SECONDS);
        let mut events = std::pin::pin!(api.watch(&params, &version).await.map_err(watch_err)?);
        while let Some(event) = events.try_next().await.map_err(watch_err)? {
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if let Some(cert) = judge(&o, name, uid, accept, observe)? {
                        return Ok(cert);
                    }
                }
                WatchEvent::Deleted(_) => {
                    return Err(Error::Deleted {
                        name: name.to_owned(),
                    });
                }
                WatchEvent::Bookmark(_) => {}
                // 410 Gone and other watch errors: list again.
                WatchEvent::Error(e) => {
                    tracing::debug!(code = e.code, "watch ended, listing again");
                    break;
                }
            }
        }
    }
}

/// What one observed version of the request means: still waiting (`None`, after telling
/// `observe` what for), a certificate, or the end of the wait.
fn judge<T>(
    object: &ApiCsr,
    name: &str,
    uid: Option<&str>,
    accept: &impl Fn(&[u8]) -> Result<T, tls_bootstrap::Error>,
    observe: &impl Fn(Waiting<'_>),
) -> Result<Option<T>, Error> {
    if uid.is_some() && object.metadata.uid.as_deref() != uid {
        return Err(Error::UidChanged {
            name: name.to_owned(),
        });
    }
    let csr = CertificateSigningRequest::try_from(object).map_err(|source| Error::Invalid {
        name: name.to_owned(),
        source,
    })?;
    let owned = |s: Option<&str>| s.unwrap_or_default().to_owned();
    match csr.state() {
        State::Issued(pem) => accept(pem).map(Some).map_err(|source| Error::Certificate {
            name: name.to_owned(),
            source,
        }),
        State::Denied { reason, message } => Err(Error::Denied {
            reason: owned(reason),
            message: owned(message),
        }),
        State::Failed { reason, message } => Err(Error::Failed {
            reason: owned(reason),
            message: owned(message),
        }),
        _ => {
            if let Some(waiting) = csr.waiting() {
                observe(waiting);
            }
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tls_bootstrap::{Issuer, KUBELET_CLIENT_SIGNER};

    use super::Error;

    /// A timeout before approval, and one after it: the second names the signer that did not
    /// issue and what issues for it.
    #[test]
    fn a_timeout_says_whether_the_request_was_approved() {
        let pending = Error::Timeout {
            name: "node-csr-x".to_owned(),
            after: Duration::from_secs(60),
        };
        assert_eq!(
            pending.to_string(),
            "timed out after 60s waiting for certificate signing request node-csr-x to be \
             approved and issued"
        );
        let approved = Error::NotIssued {
            name: "node-csr-x".to_owned(),
            after: Duration::from_secs(60),
            signer_name: KUBELET_CLIENT_SIGNER.to_owned(),
            issuer: Issuer::KubeControllerManager,
        };
        assert_eq!(
            approved.to_string(),
            "timed out after 60s waiting for the certificate of certificate signing request \
             node-csr-x: it is approved, but signer kubernetes.io/kube-apiserver-client-kubelet \
             did not issue it (kube-controller-manager's csrsigning controller issues it, and \
             runs only with --cluster-signing-cert-file and --cluster-signing-key-file)"
        );
    }

    /// client-go's `WaitForCertificate` messages for a denied and a failed request.
    #[test]
    fn denied_and_failed_read_as_client_go_writes_them() {
        let denied = Error::Denied {
            reason: "R".to_owned(),
            message: "M".to_owned(),
        };
        assert_eq!(
            denied.to_string(),
            "certificate signing request is denied, reason: R, message: M"
        );
        let failed = Error::Failed {
            reason: "SignerValidationFailure".to_owned(),
            message: "M".to_owned(),
        };
        assert_eq!(
            failed.to_string(),
            "certificate signing request failed, reason: SignerValidationFailure, message: M"
        );
    }
}
