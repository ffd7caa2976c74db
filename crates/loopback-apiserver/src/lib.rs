#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod access_review;
mod auth;
mod ca;
mod clock;
mod crypto;
mod csr;
mod discovery;
mod escalation;
mod handler;
mod ids;
mod impersonation;
mod kcm;
mod policy;
mod protobuf;
mod rbac;
mod review;
mod sa_token;
mod selector;
mod server;
mod service_proxy;
mod status;
mod store;
mod table;
mod tls;
mod watch;
mod x509;

use std::collections::VecDeque;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use zeroize::Zeroizing;

pub use self::service_proxy::{
    DEFAULT_SERVICE_PROXY_MAX_DURATION, ProxyRequest, ProxyResponse, ProxyService,
};

use self::auth::StaticToken;
use self::handler::{Shared, lock};
use self::store::{Resource, Store};

/// The admin user's name.
const ADMIN_USER: &str = "loopback-admin";
/// How often the bootstrap signer runs without a trigger (tokens expire with time).
const SIGNER_RESYNC: Duration = Duration::from_secs(10);

/// Why the loopback API server (a test double) could not start, or a test helper failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Building a `kube::Client` for the server failed.
    #[cfg(feature = "kube")]
    #[error("loopback API server: building the admin client: {0}")]
    Client(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Binding the listening socket failed.
    #[error("loopback API server: binding {addr} failed")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Generating the CA or serving certificate failed.
    #[error("loopback API server: generating the certificates failed")]
    Certificate(#[source] rcgen::Error),
    /// Building the rustls server configuration failed.
    #[error("loopback API server: building the TLS configuration failed")]
    TlsConfig(#[source] rustls::Error),
    /// Building the client-certificate verifier failed.
    #[error("loopback API server: building the client-certificate verifier failed")]
    ClientVerifier(#[source] rustls::server::VerifierBuilderError),
    /// A certificate's validity period cannot be represented (before 1970 or too far ahead).
    #[error("loopback API server: the certificate validity period is out of range")]
    Validity,
    /// [`LoopbackApiServer::revoke_client_certificate`] was given text that holds no PEM
    /// `CERTIFICATE`.
    #[error("loopback API server: no PEM certificate to revoke")]
    InvalidCertificate,
    /// A client certificate was asked for with more subject organizations than the double can
    /// encode.
    #[error("loopback API server: a client certificate carries at most {max} organizations")]
    TooManyOrganizations {
        /// The most organizations a certificate can carry.
        max: usize,
    },
    /// No rustls crypto provider: enable the `ring` or `aws-lc-rs` feature.
    #[error("loopback API server: no rustls crypto provider (enable `ring` or `aws-lc-rs`)")]
    NoCryptoProvider,
    /// The OS random number generator failed.
    #[error("loopback API server: the OS random number generator failed")]
    Random,
    /// The key given to [`Builder::service_account_signing_key`] cannot sign service-account
    /// tokens (not a PEM private key, or neither RSA nor ECDSA P-256/P-384).
    #[error("loopback API server: the service-account signing key is not usable")]
    ServiceAccountKey(#[source] addon_jwt::Error),
    /// Building the cluster-info kubeconfig failed.
    #[error("loopback API server: building the cluster-info kubeconfig failed")]
    ClusterInfo(#[source] clusterinfo::Error),
    /// A test helper's server-side write was refused, as the API would refuse it.
    #[error("loopback API server: the object was refused ({code} {reason}): {message}")]
    Insert {
        /// The HTTP status the API would answer.
        code: u16,
        /// The `Status` reason.
        reason: String,
        /// The `Status` message.
        message: String,
    },
}

impl From<status::ApiError> for Error {
    fn from(e: status::ApiError) -> Error {
        Error::Insert {
            code: e.code,
            reason: e.reason.to_owned(),
            message: e.message,
        }
    }
}

/// One request the double answered, for tests. Never holds the token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The HTTP method (`GET`, `POST`, ...).
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string (empty when none).
    pub query: String,
    /// The authenticated user's name; `None` for anonymous requests and failed authentication.
    pub user: Option<String>,
    /// The response's HTTP status.
    pub status: u16,
}

/// Configures a [`LoopbackApiServer`] (a test double).
pub struct Builder {
    port: u16,
    statics: Vec<StaticToken>,
    cluster_info: bool,
    bootstrap_signer: bool,
    csr_approver: bool,
    csr_signer: bool,
    max_objects: usize,
    watch_history: usize,
    proxy_layer: Option<service_proxy::LayerFn>,
    proxy_max_duration: Duration,
    loopback_endpoints: bool,
    max_token_expiration: Option<Duration>,
    signing_key: Option<Zeroizing<String>>,
    certificate_lifetime: Option<Duration>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("port", &self.port)
            .field("static_tokens", &self.statics)
            .field("cluster_info", &self.cluster_info)
            .field("bootstrap_signer", &self.bootstrap_signer)
            .field("csr_approver", &self.csr_approver)
            .field("csr_signer", &self.csr_signer)
            .field("max_objects", &self.max_objects)
            .field("watch_history", &self.watch_history)
            .field(
                "service_proxy_layer",
                &self.proxy_layer.as_ref().map(|_| "<layer>"),
            )
            .field("service_proxy_max_duration", &self.proxy_max_duration)
            .field(
                "dangerous_allow_loopback_endpoints",
                &self.loopback_endpoints,
            )
            .field(
                "service_account_max_token_expiration",
                &self.max_token_expiration,
            )
            .field(
                "service_account_signing_key",
                &self.signing_key.as_ref().map(|_| "<redacted>"),
            )
            .field("test_certificate_lifetime", &self.certificate_lifetime)
            .finish()
    }
}

impl Builder {
    /// Listen on this port of `127.0.0.1` (default 0: any free port).
    #[must_use]
    pub fn port(mut self, port: u16) -> Builder {
        self.port = port;
        self
    }

    /// Accept `token` as `user` in `groups` (like a line of kube-apiserver's
    /// `--token-auth-file`).
    #[must_use]
    pub fn static_token(mut self, token: &str, user: &str, groups: &[&str]) -> Builder {
        self.statics.push(static_token(token, user, groups));
        self
    }

    /// Create `kube-public/cluster-info` at start, holding the kubeconfig
    /// [`clusterinfo::ClusterInfo::to_kubeconfig_yaml`] builds for the server's URL and CA
    /// (default on).
    #[must_use]
    pub fn cluster_info(mut self, on: bool) -> Builder {
        self.cluster_info = on;
        self
    }

    /// Act as kube-controller-manager's bootstrap signer (default on): after every change to a
    /// Secret in `kube-system` or to cluster-info, run [`clusterinfo::reconcile`] and write the
    /// `jws-kubeconfig-<id>` signatures it decides.
    #[must_use]
    pub fn bootstrap_signer(mut self, on: bool) -> Builder {
        self.bootstrap_signer = on;
        self
    }

    /// Run kube-controller-manager's CSR approver for kubelet client requests (default on):
    /// requests recognized by the `tls-bootstrap` core are approved when kubeadm's RBAC allows
    /// the requester (`nodeclient` for `system:bootstrappers:kubeadm:default-node-token`,
    /// `selfnodeclient` for `system:nodes`). Off, requests wait for a client's approval
    /// (`kubectl certificate approve`).
    pub fn csr_approver(mut self, on: bool) -> Builder {
        self.csr_approver = on;
        self
    }

    /// Run kube-controller-manager's signers for `kubernetes.io/kube-apiserver-client-kubelet`
    /// and `kubernetes.io/kubelet-serving` (default on): approved requests get a certificate
    /// from the server's CA, with the subject, subject alternative names, lifetime and usages
    /// the `tls-bootstrap` core's signer rules give, or a `Failed` condition. Serving requests
    /// are never approved automatically (as kube-controller-manager's approver, the double's
    /// handles only client requests): they wait for `kubectl certificate approve` or an
    /// approver controller. Off, `status.certificate` is left to clients.
    pub fn csr_signer(mut self, on: bool) -> Builder {
        self.csr_signer = on;
        self
    }

    /// For rotation tests only: every certificate the CSR signer issues is valid from the
    /// second it is signed for `lifetime` (cut to the CA's `notAfter`), whatever the request's
    /// `spec.expirationSeconds` and without the five-minute backdate, so that a test sees
    /// certificates of a few seconds expire and be replaced. Kubernetes' signer never issues
    /// less than ten minutes ([`tls_bootstrap::MIN_LIFETIME`]) and always backdates, and no
    /// kube-controller-manager flag changes that: a test that uses this option exercises the
    /// client under lifetimes a real cluster does not give. Every other signer rule (which
    /// requests are signed, usages, names, `Failed` conditions) stays the core's. Default:
    /// none (the core's lifetimes).
    #[must_use]
    pub fn test_certificate_lifetime(mut self, lifetime: Duration) -> Builder {
        self.certificate_lifetime = Some(lifetime);
        self
    }

    /// Hold at most `objects` objects, all resources together (default 10,000, at most
    /// 100,000), for scale tests; creating one more answers 429.
    #[must_use]
    pub fn max_objects(mut self, objects: usize) -> Builder {
        self.max_objects = objects.min(store::MAX_OBJECTS_LIMIT);
        self
    }

    /// Retain `events` watch events (default 1,000, at most 100,000) for watches that resume
    /// from a `resourceVersion`, and let a live watcher fall as far behind before it is ended;
    /// kube-apiserver's watch cache holds more than the default under load, so scale tests
    /// raise it.
    #[must_use]
    pub fn watch_history(mut self, events: usize) -> Builder {
        self.watch_history = events.clamp(1, store::MAX_OBJECTS_LIMIT);
        self
    }

    /// Run every Service proxy request through `layer` before the double forwards it.
    ///
    /// The layer wraps a [`ProxyService`] (the double's forwarder: a
    /// `tower::util::BoxCloneSyncService<ProxyRequest, ProxyResponse, Infallible>`, where
    /// [`ProxyRequest`] is `http::Request<axum::body::Body>` and [`ProxyResponse`] is
    /// `http::Response<axum::body::Body>`). Its service sees each request once it is
    /// authenticated and authorized (`services/proxy`) and its Service endpoint is resolved:
    ///
    /// * the URI is the API path the client sent
    ///   (`/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>?<query>`); the query
    ///   the inner service gets is the one forwarded (a layer may remove parameters), the path
    ///   forwarded is fixed by the route;
    /// * the client's `Authorization` header is already removed (as kube-apiserver's
    ///   authentication filter removes it), as are the front-proxy identity headers
    ///   (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-*`) and
    ///   `Impersonate-*`; a header
    ///   the layer adds (an `Authorization` with a minted token, say) is forwarded, hop-by-hop
    ///   headers excepted;
    /// * the extensions hold [`addon_jwt::RequestUser`] (the authenticated user's name)
    ///   and [`addon_jwt::add_auth::ProxiedService`] (the namespace and the Service's name
    ///   without scheme or port).
    ///
    /// The layer may answer itself (nothing is forwarded then). An error from the layer's
    /// service is answered with a 500 `Status` (its text is not shown: it could hold a secret).
    /// The whole exchange is bounded by [`Self::service_proxy_max_duration`]. Without a layer,
    /// requests are forwarded as kube-apiserver forwards them (an `add-auth=true` parameter is
    /// passed on like any other; no token is added). A later call replaces the layer, and so
    /// does [`LoopbackApiServer::set_service_proxy_layer`] on the running server (for a layer
    /// that needs the serving key).
    #[must_use]
    pub fn service_proxy_layer<L>(mut self, layer: L) -> Builder
    where
        L: tower::Layer<ProxyService> + Send + Sync + 'static,
        L::Service:
            tower::Service<ProxyRequest, Response = ProxyResponse> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<ProxyRequest>>::Error:
            Into<Box<dyn std::error::Error + Send + Sync>>,
        <L::Service as tower::Service<ProxyRequest>>::Future: Send + 'static,
    {
        self.proxy_layer = Some(layer_fn(layer));
        self
    }

    /// The longest a Service proxy request may take, from the moment it is authorized to the
    /// last byte of the response (default [`DEFAULT_SERVICE_PROXY_MAX_DURATION`], 60 seconds).
    /// A request still waiting for the response head then is answered 504 (`Timeout`); a
    /// response still streaming is cut (the connection to the client ends mid-body), and so is
    /// the upstream connection, or an upgraded (WebSocket) connection. kube-apiserver has no
    /// such bound for the proxy (it is a long-running request); the double has one so that no
    /// test hangs on an upstream.
    #[must_use]
    pub fn service_proxy_max_duration(mut self, duration: Duration) -> Builder {
        self.proxy_max_duration = duration;
        self
    }

    /// Accept EndpointSlice addresses in the loopback range (`127.0.0.0/8`, `::1`), which
    /// kube-apiserver refuses (default `false`: refused as kube-apiserver refuses them, with 422
    /// `endpoints[i].addresses[j]: Invalid value: "127.0.0.1": may not be in the loopback range
    /// (127.0.0.0/8, ::1/128)`).
    ///
    /// kube-apiserver refuses them so that its Service proxy never reaches a port on its own
    /// host that only local programs should reach; the double listens on `127.0.0.1` only, and a
    /// test or demo that proxies to an upstream on the same machine needs this. With it on, the
    /// Service proxy reaches any loopback port an EndpointSlice names, so turn it on only where
    /// every client that may write EndpointSlices is trusted with the machine's loopback
    /// services. Unspecified, link-local and link-local multicast addresses stay refused.
    #[must_use]
    pub fn dangerous_allow_loopback_endpoints(mut self, on: bool) -> Builder {
        self.loopback_endpoints = on;
        self
    }

    /// The longest lifetime a TokenRequest is granted (kube-apiserver's
    /// `--service-account-max-token-expiration`): a longer `expirationSeconds` is cut to it.
    /// Default: none (a request may ask for up to 2^32 seconds; the shortest is 10 minutes).
    #[must_use]
    pub fn service_account_max_token_expiration(mut self, max: Duration) -> Builder {
        self.max_token_expiration = Some(max);
        self
    }

    /// Sign service-account tokens with this private key (kube-apiserver's
    /// `--service-account-signing-key-file`) instead of a P-256 key generated at start: a PKCS#8
    /// `PRIVATE KEY` PEM (RSA, as kubeadm's `sa.key` once converted with
    /// `openssl pkcs8 -topk8 -nocrypt`, signs `RS256`; ECDSA P-256 `ES256`, P-384 `ES384`) or a
    /// SEC1 `EC PRIVATE KEY`. The OIDC discovery documents publish its public half and
    /// algorithm.
    ///
    /// The key is read by [`Builder::start`], which fails with [`Error::ServiceAccountKey`]
    /// when it cannot sign.
    #[must_use]
    pub fn service_account_signing_key(mut self, pem: &str) -> Builder {
        self.signing_key = Some(Zeroizing::new(pem.to_owned()));
        self
    }

    /// Generate the certificates, bind, seed the namespaces (and cluster-info), and serve.
    /// Must be called within a tokio runtime; the server runs on it until dropped.
    ///
    /// # Errors
    ///
    /// [`Error::Certificate`], [`Error::TlsConfig`] or [`Error::NoCryptoProvider`] when TLS
    /// cannot be set up, [`Error::Bind`] when the port is taken, [`Error::Random`],
    /// [`Error::ClusterInfo`] when the cluster-info kubeconfig cannot be built,
    /// [`Error::ServiceAccountKey`] when the key given to
    /// [`Builder::service_account_signing_key`] cannot sign.
    pub async fn start(self) -> Result<LoopbackApiServer, Error> {
        let ca = ca::Ca::generate()?;
        let tls::Tls {
            config: tls_config,
            client_verifier,
            serving,
        } = tls::server_config(&ca)?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let url = format!("https://{local}");
        let token = ids::random_bytes::<32>().map_err(|_| Error::Random)?;
        let admin_token = Zeroizing::new(ids::hex(&token));

        let now = crate::clock::now();
        let mut store = Store::with_history(self.bootstrap_signer, self.watch_history);
        store.max_objects = self.max_objects;
        store.loopback_endpoints = self.loopback_endpoints;
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            store.create(
                Resource::Namespaces,
                "",
                json!({"metadata": {"name": ns}}),
                false,
                now,
            )?;
        }
        policy::bootstrap(&mut store, now)?;
        if self.cluster_info {
            let bundle =
                clusterinfo::CaBundle::from_pem(ca.pem().as_bytes()).map_err(Error::ClusterInfo)?;
            let kubeconfig = clusterinfo::ClusterInfo::new(&url, bundle)
                .map_err(Error::ClusterInfo)?
                .to_kubeconfig_yaml();
            store.create(
                Resource::ConfigMaps,
                clusterinfo::CLUSTER_INFO_NAMESPACE,
                json!({
                    "metadata": {"name": clusterinfo::CLUSTER_INFO_NAME},
                    "data": {clusterinfo::KUBECONFIG_KEY: kubeconfig},
                }),
                false,
                now,
            )?;
        }
        let shared = Arc::new(Shared {
            store: Mutex::new(store),
            admin_token,
            statics: Mutex::new(self.statics),
            requests: Mutex::new(VecDeque::new()),
            watchers: Arc::new(AtomicUsize::new(0)),
            address: local.to_string(),
            ca,
            csr_approver: self.csr_approver,
            csr_signer: self.csr_signer,
            certificate_lifetime: self.certificate_lifetime,
            revoked: Mutex::new(std::collections::BTreeSet::new()),
            proxy: Mutex::new(service_proxy::service(self.proxy_layer.as_ref())),
            proxy_max_duration: self.proxy_max_duration,
            issuer: match &self.signing_key {
                Some(pem) => sa_token::TokenIssuer::from_pem(pem, &url, self.max_token_expiration)?,
                None => sa_token::TokenIssuer::generate(&url, self.max_token_expiration)?,
            },
            clock_offset: Mutex::new(Duration::ZERO),
        });
        let router = axum::Router::new()
            .fallback(handler::handle)
            .with_state(Arc::clone(&shared));
        let mut tasks = vec![tokio::spawn(server::serve(
            listener,
            tls_config,
            client_verifier,
            router,
        ))];
        if self.bootstrap_signer {
            let shared = Arc::clone(&shared);
            tasks.push(tokio::spawn(async move {
                let mut interval = tokio::time::interval(SIGNER_RESYNC);
                loop {
                    interval.tick().await;
                    lock(&shared.store).sign(crate::clock::now());
                }
            }));
        }
        tracing::info!(%url, "loopback API server (a test double) started");
        Ok(LoopbackApiServer {
            shared,
            url,
            serving,
            tasks,
        })
    }
}

/// `layer` as the function that wraps the double's forwarder.
fn layer_fn<L>(layer: L) -> service_proxy::LayerFn
where
    L: tower::Layer<ProxyService> + Send + Sync + 'static,
    L::Service:
        tower::Service<ProxyRequest, Response = ProxyResponse> + Clone + Send + Sync + 'static,
    <L::Service as tower::Service<ProxyRequest>>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>>,
    <L::Service as tower::Service<ProxyRequest>>::Future: Send + 'static,
{
    Arc::new(move |inner: ProxyService| {
        let service = layer.layer(inner);
        ProxyService::new(tower::service_fn(move |req: ProxyRequest| {
            use tower::ServiceExt as _;
            let service = service.clone();
            async move { layer_result(service.oneshot(req).await) }
        }))
    })
}

/// A layer's result as the forwarder's: an error becomes a 500 `Status` whose message does not
/// carry the error's text.
fn layer_result<E>(
    result: Result<ProxyResponse, E>,
) -> Result<ProxyResponse, std::convert::Infallible> {
    use axum::response::IntoResponse as _;
    Ok(result.unwrap_or_else(|_| {
        status::ApiError::internal("the Service proxy layer failed").into_response()
    }))
}

/// A running loopback Kubernetes API server: a test and demo double, never a real control
/// plane. Dropping it stops it (its tasks are aborted).
pub struct LoopbackApiServer {
    shared: Arc<Shared>,
    url: String,
    serving: tls::ServingIdentity,
    tasks: Vec<JoinHandle<()>>,
}

impl fmt::Debug for LoopbackApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackApiServer")
            .field("url", &self.url)
            .field("admin_token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl LoopbackApiServer {
    /// A [`Builder`] with the defaults: any free port, cluster-info and the signer on.
    pub fn builder() -> Builder {
        Builder {
            port: 0,
            statics: Vec::new(),
            cluster_info: true,
            bootstrap_signer: true,
            csr_approver: true,
            csr_signer: true,
            max_objects: store::MAX_OBJECTS,
            watch_history: store::EVENT_HISTORY,
            proxy_layer: None,
            proxy_max_duration: DEFAULT_SERVICE_PROXY_MAX_DURATION,
            loopback_endpoints: false,
            max_token_expiration: None,
            signing_key: None,
            certificate_lifetime: None,
        }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The PEM of the CA that signed the serving certificate (and verifies client certificates).
    pub fn ca_pem(&self) -> &str {
        self.shared.ca.pem()
    }

    /// The serving certificate (PEM), for `127.0.0.1` and `localhost`, signed by the CA
    /// ([`Self::ca_pem`]).
    pub fn serving_certificate_pem(&self) -> &str {
        &self.serving.certificate_pem
    }

    /// The serving certificate's public key, as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo):
    /// ECDSA P-256. What verifies tokens signed with [`Self::serving_key_pem`] (`ES256`).
    pub fn serving_public_key_pem(&self) -> &str {
        &self.serving.public_key_pem
    }

    /// The serving certificate's private key, as a PEM `PRIVATE KEY` (PKCS #8): ECDSA P-256
    /// (rcgen's default), so JWTs signed with it are `ES256`. A secret: keep it out of logs.
    pub fn serving_key_pem(&self) -> &str {
        &self.serving.private_key_pem
    }

    /// Runs every Service proxy request from now on through `layer`, replacing the one given to
    /// [`Builder::service_proxy_layer`] (or the one set before); requests already being
    /// proxied finish with the layer they started with. The layer sees what
    /// [`Builder::service_proxy_layer`] describes.
    ///
    /// This is for a layer that needs something only the running server has, such as an
    /// add-auth layer signing tokens with [`Self::serving_key_pem`]:
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopback_apiserver::Error> {
    /// use loopback_apiserver::LoopbackApiServer;
    /// let server = LoopbackApiServer::builder().start().await?;
    /// let key_pem = server.serving_key_pem(); // sign with it in the layer
    /// # let _ = key_pem;
    /// server.set_service_proxy_layer(tower::layer::util::Identity::new());
    /// # Ok(()) }
    /// ```
    pub fn set_service_proxy_layer<L>(&self, layer: L)
    where
        L: tower::Layer<ProxyService> + Send + Sync + 'static,
        L::Service:
            tower::Service<ProxyRequest, Response = ProxyResponse> + Clone + Send + Sync + 'static,
        <L::Service as tower::Service<ProxyRequest>>::Error:
            Into<Box<dyn std::error::Error + Send + Sync>>,
        <L::Service as tower::Service<ProxyRequest>>::Future: Send + 'static,
    {
        let layer = layer_fn(layer);
        *lock(&self.shared.proxy) = service_proxy::service(Some(&layer));
    }

    /// The admin bearer token (user `loopback-admin`, group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.shared.admin_token
    }

    /// A kubeconfig for kubectl or `kube::Config`: cluster `loopback` (server and
    /// `certificate-authority-data`), user `loopback-admin` with the admin token, context
    /// `loopback`, current-context `loopback`. It holds the token: treat it as a secret.
    pub fn admin_kubeconfig_yaml(&self) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem().as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: loopback\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: {ADMIN_USER}\n  user:\n    token: {token}\ncontexts:\n- name: loopback\n  context:\n    cluster: loopback\n    user: {ADMIN_USER}\ncurrent-context: loopback\npreferences: {{}}\n",
            url = self.url,
            token = self.admin_token(),
        )
    }

    /// Issues a client certificate signed by the server's CA, which the server then
    /// authenticates as kube-apiserver does: user `common_name`, groups `organizations` (and
    /// `system:authenticated`). ECDSA P-256, key usage digitalSignature, extended key usage
    /// clientAuth, valid for a year (from five minutes ago). Returns the certificate and its
    /// private key (PKCS #8), as PEM; the key is a secret.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopback_apiserver::Error> {
    /// use loopback_apiserver::LoopbackApiServer;
    /// let server = LoopbackApiServer::builder().start().await?;
    /// let (cert, key) = server.issue_client_certificate("system:node:worker-1", &["system:nodes"])?;
    /// let kubeconfig = server.kubeconfig_with_client_certificate(&cert, &key);
    /// # let _ = kubeconfig;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::TooManyOrganizations`] for more than two organizations (a limit of the
    /// certificate library), [`Error::Certificate`] or [`Error::NoCryptoProvider`] when the key
    /// or certificate cannot be made, [`Error::Validity`] when the clock is out of range.
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> Result<(String, String), Error> {
        self.shared
            .ca
            .issue_client(common_name, organizations, crate::clock::now())
    }

    /// [`Self::issue_client_certificate`] as if issued at `issued_at`: valid from five minutes
    /// before it for a year. A certificate issued a year ago minus a few minutes is still valid
    /// but long past the rotation deadline (70 % to 90 % of its lifetime), for tests of
    /// certificate rotation that cannot wait for a real lifetime to pass.
    ///
    /// # Errors
    ///
    /// As [`Self::issue_client_certificate`].
    pub fn issue_client_certificate_at(
        &self,
        common_name: &str,
        organizations: &[&str],
        issued_at: std::time::SystemTime,
    ) -> Result<(String, String), Error> {
        self.shared
            .ca
            .issue_client(common_name, organizations, issued_at)
    }

    /// A kubeconfig like [`Self::admin_kubeconfig_yaml`] whose user authenticates with the
    /// client certificate `cert_pem` and its key `key_pem` (`client-certificate-data`,
    /// `client-key-data`), for example from [`Self::issue_client_certificate`]. It holds the
    /// key: treat it as a secret.
    pub fn kubeconfig_with_client_certificate(&self, cert_pem: &str, key_pem: &str) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: loopback\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: client-certificate\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: loopback\n  context:\n    cluster: loopback\n    user: client-certificate\ncurrent-context: loopback\npreferences: {{}}\n",
            url = self.url,
            ca = b64(self.ca_pem()),
            cert = b64(cert_pem),
            key = b64(key_pem),
        )
    }

    /// A `kube::Client` for the admin user (built from [`Self::admin_kubeconfig_yaml`]).
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when kube refuses the configuration.
    #[cfg(feature = "kube")]
    pub async fn admin_client(&self) -> Result<kube::Client, Error> {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let yaml = Zeroizing::new(self.admin_kubeconfig_yaml());
        let kubeconfig = Kubeconfig::from_yaml(&yaml).map_err(|e| Error::Client(Box::new(e)))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| Error::Client(Box::new(e)))?;
        kube::Client::try_from(config).map_err(|e| Error::Client(Box::new(e)))
    }

    /// The `host:port` endpoint, as `kubeadm join` takes it (`127.0.0.1:<port>`).
    pub fn endpoint(&self) -> String {
        self.shared.address.clone()
    }

    /// Accept `token` as `user` in `groups` from now on (like `--token-auth-file`).
    pub fn add_static_token(&self, token: &str, user: &str, groups: &[&str]) {
        lock(&self.shared.statics).push(static_token(token, user, groups));
    }

    /// Stop accepting `token`.
    pub fn remove_static_token(&self, token: &str) {
        lock(&self.shared.statics).retain(|s| !auth::ct_eq(s.token.as_bytes(), token.as_bytes()));
    }

    /// Stop accepting the client certificate `cert_pem` (the first PEM `CERTIFICATE` in it),
    /// for example one from [`Self::issue_client_certificate`]: from the next request on, also
    /// on connections already open, it authenticates no one (401, unless a bearer token on the
    /// same request authenticates it), and a Service proxy request with it is forwarded
    /// nowhere. kube-apiserver has no revocation list (its x509 authenticator trusts every
    /// certificate its CA signed until it expires); this is the double's way to take a user's
    /// credential away, like [`Self::remove_static_token`] for a token or deleting the Secret
    /// of a bootstrap token.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCertificate`] when `cert_pem` holds no PEM certificate.
    pub fn revoke_client_certificate(&self, cert_pem: &str) -> Result<(), Error> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        use sha2::Digest as _;
        let der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|_| Error::InvalidCertificate)?;
        let fingerprint = ids::hex(&sha2::Sha256::digest(der.as_ref()));
        lock(&self.shared.revoked).insert(fingerprint);
        Ok(())
    }

    /// The requests answered so far (the last 10,000), oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).iter().cloned().collect()
    }

    /// Test helper: the stored object `resource` (`secrets`, `configmaps`, `namespaces`,
    /// `nodes`, `services`, `leases`, `certificatesigningrequests`, ...) `namespace/name` (namespace `""` for
    /// cluster-scoped resources), as the API would return it.
    pub fn object(&self, namespace: &str, resource: &str, name: &str) -> Option<Value> {
        let resource = Resource::from_plural(resource)?;
        let namespace = if resource.namespaced() { namespace } else { "" };
        lock(&self.shared.store)
            .get(resource, namespace, name)
            .cloned()
    }

    /// Test helper: create `object` server-side, bypassing authentication and authorization
    /// (the signer still runs). Returns the stored object. A CertificateSigningRequest keeps the
    /// `spec.username`, `spec.groups`... it is given (no request names a requester here), is
    /// validated, and its status is cleared, as on create.
    ///
    /// # Errors
    ///
    /// [`Error::Insert`] with the status the API would answer (unknown resource, missing
    /// namespace, already exists, invalid name...).
    pub fn insert(&self, namespace: &str, resource: &str, object: Value) -> Result<Value, Error> {
        let Some(resource) = Resource::from_plural(resource) else {
            return Err(status::ApiError::path_not_found().into());
        };
        let namespace = if resource.namespaced() { namespace } else { "" };
        let created = lock(&self.shared.store).create(
            resource,
            namespace,
            object,
            false,
            crate::clock::now(),
        )?;
        if resource == Resource::CertificateSigningRequests
            && let Some(name) = created.pointer("/metadata/name").and_then(Value::as_str)
        {
            self.shared.after_csr_change(name);
        }
        Ok(created)
    }

    /// Test helper: moves the double's clock for credentials forward by `by` (added to any
    /// earlier advance), so that tests can see tokens expire without waiting: service-account
    /// tokens are issued, authenticated and reviewed, and bootstrap tokens authenticated, at
    /// the advanced time. Other timestamps (object creation, certificates) keep the wall clock.
    pub fn advance_clock(&self, by: Duration) {
        let mut offset = lock(&self.shared.clock_offset);
        *offset = offset.checked_add(by).unwrap_or(*offset);
    }

    /// The service-account token issuer's URL (`iss` of the tokens TokenRequest signs, and the
    /// API server's audience): the server's URL, as [`Self::url`].
    pub fn service_account_issuer(&self) -> &str {
        self.shared.issuer.issuer()
    }

    /// Test helper: compacts the watch history, as etcd compaction does on a real cluster. Every
    /// open watch ends with a 410 Gone ERROR event (`too old resource version`), and a watch
    /// from an earlier `resourceVersion` is refused the same way, so clients must re-list.
    pub fn compact(&self) {
        lock(&self.shared.store).compact();
    }

    /// Stop the server and wait for its tasks to end.
    pub async fn shutdown(mut self) {
        let tasks = std::mem::take(&mut self.tasks);
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
    }
}

impl Drop for LoopbackApiServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn static_token(token: &str, user: &str, groups: &[&str]) -> StaticToken {
    StaticToken {
        token: Zeroizing::new(token.to_owned()),
        user: user.to_owned(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
    }
}
