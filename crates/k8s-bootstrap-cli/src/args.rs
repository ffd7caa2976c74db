//! The command line (clap derive), with kubeadm's flag names.

#[cfg(any(feature = "loopback-server", feature = "sidecar"))]
use std::num::NonZeroU32;
use std::path::PathBuf;

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use k8s_bootstrap::bootstrap_token;

/// Kubernetes bootstrap tokens, CA pins and node discovery, as kubeadm does them.
#[derive(Debug, Parser)]
#[command(
    name = "k8s-bootstrap",
    version = env!("K8S_BOOTSTRAP_VERSION"),
    about,
    propagate_version = true
)]
pub(crate) struct Cli {
    /// Accepted before the subcommand too (`k8s-bootstrap --kubeconfig PATH token list`), for
    /// the commands that take it; hidden here, where it would read as applying to every
    /// command.
    #[command(flatten)]
    pub(crate) cluster: HiddenClusterArgs,
    /// Log more to stderr (-v info, -vv debug, -vvv trace, for every crate); RUST_LOG
    /// overrides. Without it, controllers, forward-proxy and serve-loopback log at info (their
    /// own events; other crates' warnings), the other commands nothing.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    /// The log lines' format on stderr: text, or json (one JSON object per line, with
    /// timestamp, level, target and fields).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, value_name = "FORMAT")]
    pub(crate) log_format: LogFormat,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// A line of text per event (colored on a terminal).
    Text,
    /// A JSON object per line.
    Json,
}

/// `--kubeconfig` and `--context`, offered by the commands that talk to an existing cluster
/// through a kubeconfig (`token create|list|delete`, `controllers`, and `forward-proxy` with
/// `--audience-from-services`), and by no other: `join`, `pin`, `serve-loopback` and the rest
/// refuse them as unexpected arguments.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ClusterArgs {
    /// The kubeconfig to use (else the first file of $KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (else its current context).
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
}

#[cfg(any(feature = "controllers", feature = "sidecar"))]
impl ClusterArgs {
    /// Whether either flag was given.
    pub(crate) fn is_set(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }
}

/// The same flags before the subcommand, where they stay accepted (earlier releases took them
/// there for every command) but are not listed.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct HiddenClusterArgs {
    #[arg(long = "kubeconfig", value_name = "PATH", hide = true)]
    kubeconfig: Option<PathBuf>,
    #[arg(long = "context", value_name = "NAME", hide = true)]
    context: Option<String>,
}

impl Cli {
    /// Moves `--kubeconfig`/`--context` given before the subcommand into the subcommand's own,
    /// as a usage error (clap's, exit code 2) when the subcommand takes no kubeconfig or the
    /// flag is given in both places.
    ///
    /// # Errors
    ///
    /// A usage error naming the flag and the subcommand.
    pub(crate) fn hoist_cluster_args(&mut self) -> Result<(), clap::Error> {
        use clap::CommandFactory as _;
        let HiddenClusterArgs {
            kubeconfig,
            context,
        } = std::mem::take(&mut self.cluster);
        let given = match (&kubeconfig, &context) {
            (Some(_), _) => "--kubeconfig",
            (None, Some(_)) => "--context",
            (None, None) => return Ok(()),
        };
        let name = self.command.name();
        let conflict = |message: String| {
            Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message)
        };
        let Some((own_kubeconfig, own_context)) = self.command.cluster_mut() else {
            let why = if name == "forward-proxy" {
                "it talks to the cluster only with '--audience-from-services' or \
                 '--authentication=token-review'"
            } else {
                "it talks to no cluster through a kubeconfig"
            };
            return Err(conflict(format!(
                "the argument '{given}' cannot be used with '{name}': {why}"
            )));
        };
        if kubeconfig.is_some() && own_kubeconfig.is_some() {
            return Err(conflict(
                "the argument '--kubeconfig' was given before and after the subcommand".to_owned(),
            ));
        }
        if context.is_some() && own_context.is_some() {
            return Err(conflict(
                "the argument '--context' was given before and after the subcommand".to_owned(),
            ));
        }
        if kubeconfig.is_some() {
            *own_kubeconfig = kubeconfig;
        }
        if context.is_some() {
            *own_context = context;
        }
        Ok(())
    }
}

#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value, parsed once at start; forward-proxy's flags are the most"
)]
pub(crate) enum Command {
    /// Manage bootstrap tokens (kubeadm token).
    Token(TokenArgs),
    /// Print the sha256 public-key pin of each CA certificate in a PEM file.
    Pin(PinArgs),
    /// Discover a cluster and write the kubelet's TLS-bootstrap kubeconfig (kubeadm join's
    /// discovery).
    Join(JoinArgs),
    /// Run the cluster-side controllers (kube-controller-manager's bootstrapsigner and
    /// tokencleaner) with leader election, health and metrics, until SIGTERM or Ctrl-C.
    #[cfg(feature = "controllers")]
    Controllers(ControllersArgs),
    /// Keep the node's client certificate (or with --serving its serving certificate) current,
    /// as the kubelet's certificate manager does: request one with the bootstrap kubeconfig
    /// when there is none, rotate it before it expires; until SIGTERM or Ctrl-C.
    NodeCertificates(NodeCertificatesArgs),
    /// Run the add-on sidecar: verify each request's identity token (an add-on JWT, or with
    /// --authentication=token-review a TokenReview and a SubjectAccessReview, as
    /// kube-rbac-proxy), forward it to the add-on with the user in a header, answer 401 or 403
    /// otherwise; until SIGTERM or Ctrl-C.
    #[cfg(feature = "sidecar")]
    ForwardProxy(ForwardProxyArgs),
    /// Run the loopback API server, a test double, until SIGTERM or Ctrl-C (its admin
    /// kubeconfig is removed on exit).
    #[cfg(feature = "loopback-server")]
    ServeLoopback(ServeLoopbackArgs),
    /// The whole bootstrap flow on loopback: an API server double, `token create`, `join` and
    /// kubectl with the written kubeconfig, each run as the real command; then add-on
    /// authentication through `kubectl proxy` and `forward-proxy`.
    #[cfg(feature = "loopback-server")]
    Demo(DemoArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `k8s-bootstrap completion bash > /etc/bash_completion.d/k8s-bootstrap`.
    Completion(CompletionArgs),
    /// Print a command's man page (roff), e.g. `k8s-bootstrap manpage join`, or write every
    /// command's page with `--dir`, e.g. `k8s-bootstrap manpage --dir ~/.local/share/man/man1`.
    Manpage(ManpageArgs),
}

impl Command {
    /// The subcommand's name as typed (`token create`).
    fn name(&self) -> &'static str {
        match self {
            Command::Token(t) => match t.command {
                TokenCommand::Create(_) => "token create",
                TokenCommand::List(_) => "token list",
                TokenCommand::Delete(_) => "token delete",
                TokenCommand::Generate => "token generate",
            },
            Command::Pin(_) => "pin",
            Command::Join(_) => "join",
            Command::NodeCertificates(_) => "node-certificates",
            #[cfg(feature = "controllers")]
            Command::Controllers(_) => "controllers",
            #[cfg(feature = "sidecar")]
            Command::ForwardProxy(_) => "forward-proxy",
            #[cfg(feature = "loopback-server")]
            Command::ServeLoopback(_) => "serve-loopback",
            #[cfg(feature = "loopback-server")]
            Command::Demo(_) => "demo",
            Command::Completion(_) => "completion",
            Command::Manpage(_) => "manpage",
        }
    }

    /// Whether the command runs as a service (until a signal), and so logs at info by
    /// default.
    pub(crate) fn is_service(&self) -> bool {
        match self {
            Command::NodeCertificates(_) => true,
            #[cfg(feature = "controllers")]
            Command::Controllers(_) => true,
            #[cfg(feature = "sidecar")]
            Command::ForwardProxy(_) => true,
            #[cfg(feature = "loopback-server")]
            Command::ServeLoopback(_) => true,
            _ => false,
        }
    }

    /// The subcommand's `--kubeconfig` and `--context`, if it takes them.
    fn cluster_mut(&mut self) -> Option<(&mut Option<PathBuf>, &mut Option<String>)> {
        let own = match self {
            Command::Token(t) => match &mut t.command {
                TokenCommand::Create(a) => &mut a.cluster,
                TokenCommand::List(a) => &mut a.cluster,
                TokenCommand::Delete(a) => &mut a.cluster,
                TokenCommand::Generate => return None,
            },
            #[cfg(feature = "controllers")]
            Command::Controllers(a) => &mut a.cluster,
            Command::NodeCertificates(a) => &mut a.cluster,
            #[cfg(feature = "sidecar")]
            Command::ForwardProxy(a)
                if a.audience_from_services || a.authentication == Authentication::TokenReview =>
            {
                return Some((&mut a.kubeconfig, &mut a.context));
            }
            _ => return None,
        };
        Some((&mut own.kubeconfig, &mut own.context))
    }
}

#[derive(Debug, Args)]
pub(crate) struct NodeCertificatesArgs {
    /// The directory of the certificate files (kubelet-client-current.pem, or
    /// kubelet-server-current.pem with --serving, and the pair files they link to).
    #[arg(long, default_value = "/var/lib/kubelet/pki", value_name = "DIR")]
    pub(crate) cert_dir: PathBuf,
    /// The kubeconfig with the bootstrap credential, used when there is no valid certificate
    /// (the kubelet's --bootstrap-kubeconfig).
    #[arg(long, value_name = "PATH")]
    pub(crate) bootstrap_kubeconfig: Option<PathBuf>,
    /// The node's name.
    #[arg(long, value_name = "NAME")]
    pub(crate) node_name: String,
    /// Keep the serving certificate (signer kubernetes.io/kubelet-serving) instead of the
    /// client certificate.
    #[arg(long)]
    pub(crate) serving: bool,
    /// With --serving: a DNS name for the certificate (the node name is always one);
    /// repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "NAME", requires = "serving")]
    pub(crate) hostname: Vec<String>,
    /// With --serving: an IP address for the certificate; repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "IP", requires = "serving")]
    pub(crate) address: Vec<std::net::IpAddr>,
    /// Where to serve /healthz, /readyz (200 once the certificate is present and unexpired)
    /// and /metrics (its TTL gauge, rotation and renewal-error counters), plain HTTP; `off` or
    /// "" serves nothing. Default: 127.0.0.1:10268, or 127.0.0.1:10269 with --serving, so
    /// that the node's two managers run side by side. Loopback only, as the kubelet's healthz
    /// endpoint, since this runs on the node: give a node address to let Prometheus scrape
    /// it. Ports 10268 and 10269 follow the controllers' 10266 and the forward proxy's 10267;
    /// no Kubernetes component uses them.
    #[arg(long, value_name = "ADDR:PORT|off", value_parser = http_address)]
    pub(crate) http_address: Option<HttpAddress>,
    /// The API server and its CA for requests made with the current certificate (its
    /// credentials are not used; default: those of --bootstrap-kubeconfig). With --serving,
    /// its credentials (the node's client certificate, as in kubelet.conf) file every request:
    /// a serving certificate cannot authenticate.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `--http-address` of node-certificates: an address, or none (`off`, "").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HttpAddress(pub(crate) Option<std::net::SocketAddr>);

impl NodeCertificatesArgs {
    /// `--http-address`, or its default for the certificate kept: the client certificate's
    /// manager on 127.0.0.1:10268, the serving certificate's on 127.0.0.1:10269.
    pub(crate) fn http_address(&self) -> Option<std::net::SocketAddr> {
        match self.http_address {
            Some(HttpAddress(given)) => given,
            None => {
                let port = if self.serving { 10269 } else { 10268 };
                Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            }
        }
    }
}

fn http_address(value: &str) -> Result<HttpAddress, String> {
    if value.is_empty() || value == "off" {
        return Ok(HttpAddress(None));
    }
    value
        .parse()
        .map(|addr| HttpAddress(Some(addr)))
        .map_err(|_| "expected ADDR:PORT (e.g. 127.0.0.1:10268), or off".to_owned())
}

#[cfg(feature = "controllers")]
#[derive(Debug, Args)]
pub(crate) struct ControllersArgs {
    /// The controllers to run, comma-separated: bootstrapsigner, tokencleaner,
    /// kubeletservingapprover; * for bootstrapsigner and tokencleaner (the approver of
    /// kubelet-serving requests is off by default: `--controllers '*,kubeletservingapprover'`
    /// runs all three, and it needs --provider-regex).
    #[arg(long, value_delimiter = ',', default_value = "*", value_name = "NAMES")]
    pub(crate) controllers: Vec<String>,
    /// kubeletservingapprover: every DNS name a kubelet-serving request asks for must match
    /// this regular expression (Rust regex syntax; matched anywhere in the name unless anchored,
    /// as kubelet-csr-approver's --provider-regex: write `^node-[0-9]+\.example\.com$`).
    /// Required with kubeletservingapprover.
    #[arg(long, value_name = "REGEX", value_parser = provider_regex)]
    pub(crate) provider_regex: Option<regex::Regex>,
    /// kubeletservingapprover: every IP address a kubelet-serving request asks for must lie in
    /// one of these prefixes (comma-separated CIDRs), besides being one of its Node's
    /// addresses.
    #[arg(long, value_delimiter = ',', default_value = "0.0.0.0/0,::/0", value_name = "CIDRS",
        value_parser = ip_prefix)]
    pub(crate) provider_ip_prefixes: Vec<k8s_bootstrap::tls_bootstrap::IpPrefix>,
    /// kubeletservingapprover: the longest spec.expirationSeconds approved, in seconds (at
    /// most 367 days, the default).
    #[arg(long, default_value_t = 367 * 24 * 3600, value_name = "SECONDS",
        value_parser = clap::value_parser!(i32).range(0..=367 * 24 * 3600))]
    pub(crate) max_expiration_sec: i32,
    /// kubeletservingapprover: do not resolve the DNS names a request asks for (the provider
    /// regex still applies). On by default; with false, each name must resolve, through the
    /// system resolver, to one of the node's addresses (kubelet-csr-approver's default).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true", value_name = "BOOL")]
    pub(crate) bypass_dns_resolution: bool,
    /// kubeletservingapprover: the most subject alternative names (DNS names and IP addresses
    /// together) a request may ask for.
    #[arg(long, default_value_t = 20, value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) max_subject_alt_names: u16,
    /// Elect a leader on a coordination.k8s.io Lease before running, so several replicas are
    /// safe.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true", value_name = "BOOL")]
    pub(crate) leader_elect: bool,
    /// The namespace of the leader-election Lease.
    #[arg(long, default_value = "kube-system", value_name = "NAMESPACE")]
    pub(crate) leader_elect_resource_namespace: String,
    /// The name of the leader-election Lease.
    #[arg(long, default_value = "k8s-bootstrap-controllers", value_name = "NAME")]
    pub(crate) leader_elect_resource_name: String,
    /// This replica's identity in the Lease (default: $POD_NAME, else the host name and the
    /// process ID).
    #[arg(long, env = "POD_NAME", value_name = "ID")]
    pub(crate) leader_elect_identity: Option<String>,
    /// How long a standby waits, from when it last saw the Lease renewed, before taking it
    /// over.
    #[arg(long, default_value = "15s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) leader_elect_lease_duration: Duration,
    /// How long the leader may go without a successful renewal before it stops the
    /// controllers (shorter than the lease duration).
    #[arg(long, default_value = "10s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) leader_elect_renew_deadline: Duration,
    /// How often the leader renews the Lease and a standby tries to acquire it.
    #[arg(long, default_value = "2s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) leader_elect_retry_period: Duration,
    /// Where to serve /healthz, /readyz and /metrics (plain HTTP, or TLS with
    /// --metrics-secure).
    #[arg(long, default_value = "0.0.0.0:10266", value_name = "ADDR:PORT")]
    pub(crate) http_address: std::net::SocketAddr,
    /// Serve --http-address over TLS with /metrics behind delegated authentication and
    /// authorization: the scraper's bearer token reviewed by the API server (TokenReview) and
    /// its request authorized by it (SubjectAccessReview, get on the non-resource URL
    /// /metrics), as controller-runtime's secure metrics serving; /healthz and /readyz stay
    /// open for kubelet probes (scheme: HTTPS). The controllers' account needs
    /// system:auth-delegator.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true", value_name = "BOOL")]
    pub(crate) metrics_secure: bool,
    /// The serving certificate (PEM chain) for --metrics-secure, reloaded when it changes;
    /// without it and --tls-private-key-file, a self-signed certificate is generated at start.
    #[arg(long, value_name = "PATH", requires = "tls_private_key_file")]
    pub(crate) tls_cert_file: Option<PathBuf>,
    /// The key of --tls-cert-file (PEM), reloaded with it.
    #[arg(long, value_name = "PATH", requires = "tls_cert_file")]
    pub(crate) tls_private_key_file: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

#[cfg(feature = "sidecar")]
#[derive(Debug, Args)]
pub(crate) struct ForwardProxyArgs {
    /// Where to accept requests over TLS (needs --tls-cert-file and --tls-private-key-file).
    #[arg(long, default_value = "0.0.0.0:8443", value_name = "ADDR:PORT")]
    pub(crate) secure_listen_address: std::net::SocketAddr,
    /// Accept requests in plain HTTP on this address instead of TLS: bearer tokens then cross
    /// the network in clear text (for loopback, or behind a mesh or a TLS terminator).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        conflicts_with_all = ["secure_listen_address", "tls_cert_file", "tls_private_key_file", "client_ca_file", "requestheader_client_ca_file", "tls_min_version", "tls_cipher_suites"]
    )]
    pub(crate) insecure_listen_address: Option<std::net::SocketAddr>,
    /// The serving certificate chain, PEM (the server's certificate first); re-read, with the
    /// key, when its contents change (every --reload-interval).
    #[arg(long, value_name = "PATH")]
    pub(crate) tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PATH")]
    pub(crate) tls_private_key_file: Option<PathBuf>,
    /// CA certificates (PEM) to verify client certificates against; a client without a
    /// certificate is still served (its token decides), one whose certificate does not verify
    /// is refused in the handshake. Read once, at start. With token-review, a client
    /// certificate signed by it also authenticates its user, as kube-apiserver's x509
    /// authenticator does: the common name is the user, the organizations its groups.
    #[arg(long, value_name = "PATH")]
    pub(crate) client_ca_file: Option<PathBuf>,
    /// token-review: the front proxy's CA certificates (PEM), kube-apiserver's flag of the
    /// same name. A client certificate signed by it (with a name among
    /// --requestheader-allowed-names) lets its request name the user in the
    /// --requestheader-*-headers; from any other client those headers are removed, never
    /// believed. Client certificates of this CA and of --client-ca-file are both accepted in
    /// the handshake. Read once, at start.
    #[arg(long, value_name = "PATH")]
    pub(crate) requestheader_client_ca_file: Option<PathBuf>,
    /// token-review: the common names the front proxy's certificate may have
    /// (comma-separated); empty: any certificate of --requestheader-client-ca-file.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) requestheader_allowed_names: Vec<String>,
    /// token-review: the headers the front proxy names the user in, the first non-empty one
    /// counting (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = REQUESTHEADER_USERNAME_HEADERS, value_name = "NAMES")]
    pub(crate) requestheader_username_headers: Vec<String>,
    /// token-review: the headers the front proxy names the user's UID in, the first non-empty
    /// one counting (comma-separated; none by default, as kube-apiserver's default;
    /// X-Remote-Uid is what kube-apiserver sends).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) requestheader_uid_headers: Vec<String>,
    /// token-review: the headers the front proxy names the user's groups in
    /// (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = REQUESTHEADER_GROUP_HEADERS, value_name = "NAMES")]
    pub(crate) requestheader_group_headers: Vec<String>,
    /// token-review: the prefixes of the headers the front proxy names the user's extra
    /// values in (comma-separated; the rest of the header's name is the key).
    #[arg(long, value_delimiter = ',', default_value = REQUESTHEADER_EXTRA_HEADERS_PREFIX, value_name = "PREFIXES")]
    pub(crate) requestheader_extra_headers_prefix: Vec<String>,
    /// token-review: how service-account tokens are authenticated. `review`: by the API server
    /// (TokenReview), like every token. `offline`: a projected token for one of
    /// --auth-token-audiences (required) is verified with the cluster's service-account
    /// issuer and keys (read once, at start, from /.well-known/openid-configuration and
    /// /openid/v1/jwks), without a TokenReview; any other token is still reviewed. Offline
    /// verification cannot see a deleted ServiceAccount or Pod: such a token stays valid
    /// until it expires. `offline-only`: as `offline`, and every other bearer token is refused
    /// (401) without a TokenReview, so the proxy never sends one (access is still decided by
    /// SubjectAccessReview).
    #[arg(long, value_enum, default_value_t = ServiceAccountTokens::Review, value_name = "MODE")]
    pub(crate) service_account_tokens: ServiceAccountTokens,
    /// token-review: at most this many reviews (TokenReviews and SubjectAccessReviews
    /// together) per second on average; a request whose review would exceed it is answered
    /// 429 with Retry-After, while requests decided from the caches are never refused (off by
    /// default). Renewals of tokens and access the caches held allowed have a bucket of their
    /// own at the same rate, so a flood of new tokens cannot throttle the users already served.
    #[arg(long, value_name = "PER_SECOND")]
    pub(crate) review_rate_limit: Option<NonZeroU32>,
    /// token-review: the most reviews at once after a quiet time, with --review-rate-limit
    /// (default: the rate).
    #[arg(long, value_name = "N", requires = "review_rate_limit")]
    pub(crate) review_burst: Option<NonZeroU32>,
    /// token-review: how long a TokenReview's answer (authenticated or not) is cached, as
    /// kube-apiserver's delegated --authentication-token-webhook-cache-ttl; a token the API
    /// server stops accepting (its ServiceAccount deleted) is refused once it runs out (0s:
    /// every request is reviewed).
    #[arg(long, default_value = "10s", value_name = "DURATION", allow_hyphen_values = true,
        value_parser = cache_ttl)]
    pub(crate) authentication_token_webhook_cache_ttl: Duration,
    /// token-review: how long an allowing SubjectAccessReview is cached, as kube-apiserver's
    /// delegated --authorization-webhook-cache-authorized-ttl (0s: not cached).
    #[arg(long, default_value = "10s", value_name = "DURATION", allow_hyphen_values = true,
        value_parser = cache_ttl)]
    pub(crate) authorization_webhook_cache_authorized_ttl: Duration,
    /// token-review: how long a denying SubjectAccessReview is cached, as kube-apiserver's
    /// delegated --authorization-webhook-cache-unauthorized-ttl (0s: not cached).
    #[arg(long, default_value = "10s", value_name = "DURATION", allow_hyphen_values = true,
        value_parser = cache_ttl)]
    pub(crate) authorization_webhook_cache_unauthorized_ttl: Duration,
    /// The lowest TLS version accepted: VersionTLS12 or VersionTLS13.
    #[arg(long, value_enum, default_value_t = TlsMinVersion::VersionTls12, value_name = "VERSION")]
    pub(crate) tls_min_version: TlsMinVersion,
    /// The TLS 1.2 cipher suites to offer, by IANA name, comma-separated (default: all those
    /// of the crypto provider, AEAD with forward secrecy only). TLS 1.3's suites are not
    /// configurable: their names are accepted and change nothing.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) tls_cipher_suites: Vec<String>,
    /// The add-on's address, as host:port (plain HTTP, usually 127.0.0.1 in the same pod).
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) forward: String,
    /// How requests are authenticated: `jwt`, add-on JWTs verified with --jwks-file or
    /// --public-key-file (the add-on gets X-Authenticated-User); `token-review`, the bearer
    /// token reviewed by the API server (TokenReview) and the request authorized by it
    /// (SubjectAccessReview), as kube-rbac-proxy does (the add-on gets
    /// --auth-header-user-field-name and --auth-header-groups-field-name). The proxy's service
    /// account needs the ClusterRole system:auth-delegator for token-review.
    #[arg(long, value_enum, default_value_t = Authentication::Jwt, value_name = "MODE")]
    pub(crate) authentication: Authentication,
    /// jwt: the accepted token issuer (the `iss` claim).
    #[arg(long, value_name = "ISSUER")]
    pub(crate) issuer: Option<String>,
    /// jwt: an accepted audience (the `aud` claim); repeatable (this or
    /// --audience-from-services is required).
    #[arg(long, value_name = "AUDIENCE")]
    pub(crate) audience: Vec<String>,
    /// token-review: kube-rbac-proxy's configuration file (YAML or JSON:
    /// authorization.resourceAttributes, rewrites, static), which decides the attributes each
    /// request is authorized with; without it, a non-resource request for the path with the
    /// lowercase method as verb (get /metrics).
    #[arg(long, value_name = "PATH")]
    pub(crate) config_file: Option<PathBuf>,
    /// token-review: only these paths are served (glob patterns, comma-separated), others
    /// answered 403; kube-rbac-proxy's --allow-paths.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "PATTERNS",
        conflicts_with = "ignore_paths"
    )]
    pub(crate) allow_paths: Vec<String>,
    /// token-review: these paths go to the add-on without authentication or authorization
    /// (glob patterns, comma-separated); kube-rbac-proxy's --ignore-paths.
    #[arg(long, value_delimiter = ',', value_name = "PATTERNS")]
    pub(crate) ignore_paths: Vec<String>,
    /// token-review: accept only tokens the API server authenticates for one of these
    /// audiences (comma-separated; default: the API server's own).
    #[arg(long, value_delimiter = ',', value_name = "AUDIENCES")]
    pub(crate) auth_token_audiences: Vec<String>,
    /// token-review: send the verified user to the add-on in --auth-header-user-field-name
    /// and its groups in --auth-header-groups-field-name (on by default, unlike
    /// kube-rbac-proxy; `=false` sends neither). The client's own copies are removed either
    /// way.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
        default_missing_value = "true", value_name = "BOOL")]
    pub(crate) auth_header_fields_enabled: bool,
    /// token-review: the header the add-on gets the user's name in.
    #[arg(long, default_value = "x-remote-user", value_name = "NAME")]
    pub(crate) auth_header_user_field_name: String,
    /// token-review: the header the add-on gets the user's groups in.
    #[arg(long, default_value = "x-remote-groups", value_name = "NAME")]
    pub(crate) auth_header_groups_field_name: String,
    /// token-review: what the groups are joined by.
    #[arg(long, default_value = "|", value_name = "SEPARATOR")]
    pub(crate) auth_header_groups_field_separator: String,
    /// Also accept `<namespace>/<service>` for every Service of the pod's namespace whose
    /// selector matches the pod's labels (needs `list` on Services), refreshed periodically.
    #[arg(long)]
    pub(crate) audience_from_services: bool,
    /// The kubeconfig to send the reviews (token-review) or list the Services
    /// (--audience-from-services) with (else the first file of $KUBECONFIG, else
    /// ~/.kube/config, else the pod's service account).
    #[arg(long, value_name = "PATH")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use, for token-review or --audience-from-services (else its
    /// current context).
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
    /// The pod's namespace, for --audience-from-services.
    #[arg(long, env = "POD_NAMESPACE", value_name = "NAMESPACE")]
    pub(crate) pod_namespace: Option<String>,
    /// The pod's labels as the downward API writes them (`key="value"` lines), for
    /// --audience-from-services.
    #[arg(long, default_value = "/etc/podinfo/labels", value_name = "PATH")]
    pub(crate) pod_labels_file: PathBuf,
    /// How often --audience-from-services lists the Services again.
    #[arg(long, default_value = "30s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) audience_refresh_interval: Duration,
    /// The verification keys as a JWKS file (re-read when it changes).
    #[arg(long, value_name = "PATH", conflicts_with = "public_key_file")]
    pub(crate) jwks_file: Option<PathBuf>,
    /// The verification key as a PEM public key file (re-read when it changes).
    #[arg(long, value_name = "PATH")]
    pub(crate) public_key_file: Option<PathBuf>,
    /// The algorithm of --public-key-file: RS256, PS256, ES256, ES384 or EdDSA.
    #[arg(long, default_value = "ES256", value_name = "ALG")]
    pub(crate) algorithm: String,
    /// The longest a request may take, response body included: a watch or download is cut
    /// then, so a revoked token stops working within this time.
    #[arg(long, default_value = "60s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) request_timeout: Duration,
    /// The longest a client connection stays open (requests in flight finish first).
    #[arg(long, default_value = "10m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) max_connection_duration: Duration,
    /// How many verified tokens to remember (until their expiry), so that repeated requests
    /// skip the signature check; 0 verifies every request.
    #[arg(long, default_value_t = 4096, value_name = "TOKENS")]
    pub(crate) verified_cache_size: usize,
    /// Requests whose token is not cached (so needs a signature check) decided at once, at
    /// most; the others wait, while requests with cached tokens never do (0: half the CPUs,
    /// at least 1).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) max_concurrent_verifications: usize,
    /// The same limit while no request with a cached token arrived in the last ten seconds:
    /// with no known callers to keep responsive, new tokens may use more CPUs (0: all the
    /// CPUs; never fewer than --max-concurrent-verifications).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) max_concurrent_verifications_without_known_callers: usize,
    /// How often to check the key file for changes.
    #[arg(long, default_value = "5s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) reload_interval: Duration,
    /// What a key file that changed and cannot be loaded (broken, deleted) does: `keep` serves
    /// on with the keys loaded before (/readyz stays 200 and says so); `fail-closed` refuses
    /// every request (403) and answers /readyz 503 until the file loads again, so a rotation
    /// meant to revoke a key cannot leave it accepted.
    #[arg(long, value_enum, default_value_t = KeyReloadFailure::Keep, value_name = "POLICY")]
    pub(crate) key_reload_failure: KeyReloadFailure,
    /// A request header to remove before the add-on, besides X-Authenticated-User's look-alikes
    /// and the identity headers removed by default (X-Remote-User, X-Remote-Group,
    /// X-Remote-Extra-*, Impersonate-*, X-Forwarded-User, ...); a trailing * matches a prefix.
    /// Repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub(crate) strip_header: Vec<String>,
    /// Client connections open at once, at most; more wait in the listen backlog until one
    /// closes (0: from the open-file limit, (limit - 64) / 2 as each connection may hold two
    /// descriptors, at most 16384).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) max_connections: usize,
    /// Threads that serve client connections, each with its own event loop accepting from
    /// the shared listener; a connection and its requests stay on one thread (0: one per
    /// CPU).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) connection_threads: usize,
    /// Where to serve /healthz, /readyz and /metrics (plain HTTP).
    #[arg(long, default_value = "0.0.0.0:10267", value_name = "ADDR:PORT")]
    pub(crate) http_address: std::net::SocketAddr,
    /// Tell a refused caller why: each 403 carries WWW-Authenticate: Bearer error="...",
    /// error_description="<reason>" (token has expired, audience does not match, ...). The
    /// reason never holds token bytes, but it tells any caller which check failed.
    #[arg(long)]
    pub(crate) explain_rejections: bool,
}

/// `forward-proxy --authentication`.
#[cfg(feature = "sidecar")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Authentication {
    /// Add-on JWTs, verified with the key files.
    Jwt,
    /// TokenReview and SubjectAccessReview by the API server.
    TokenReview,
}

/// `forward-proxy --service-account-tokens`.
#[cfg(feature = "sidecar")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ServiceAccountTokens {
    /// Reviewed by the API server, like every token.
    Review,
    /// Projected tokens verified with the cluster's keys, without a TokenReview.
    Offline,
    /// As `Offline`, and no other token is ever reviewed: each is refused.
    OfflineOnly,
}

#[cfg(feature = "sidecar")]
impl ServiceAccountTokens {
    /// Whether projected tokens are verified offline.
    pub(crate) fn offline(self) -> bool {
        matches!(
            self,
            ServiceAccountTokens::Offline | ServiceAccountTokens::OfflineOnly
        )
    }

    /// The flag's value as given.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            ServiceAccountTokens::Review => "--service-account-tokens=review",
            ServiceAccountTokens::Offline => "--service-account-tokens=offline",
            ServiceAccountTokens::OfflineOnly => "--service-account-tokens=offline-only",
        }
    }
}

/// kube-apiserver's `--requestheader-username-headers` as kubeadm sets it.
#[cfg(feature = "sidecar")]
pub(crate) const REQUESTHEADER_USERNAME_HEADERS: &str = "X-Remote-User";
/// kube-apiserver's `--requestheader-group-headers` as kubeadm sets it.
#[cfg(feature = "sidecar")]
pub(crate) const REQUESTHEADER_GROUP_HEADERS: &str = "X-Remote-Group";
/// kube-apiserver's `--requestheader-extra-headers-prefix` as kubeadm sets it.
#[cfg(feature = "sidecar")]
pub(crate) const REQUESTHEADER_EXTRA_HEADERS_PREFIX: &str = "X-Remote-Extra-";

/// `forward-proxy --tls-min-version`, as kube-rbac-proxy names the versions.
#[cfg(feature = "sidecar")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TlsMinVersion {
    /// TLS 1.2 and 1.3.
    #[value(name = "VersionTLS12")]
    VersionTls12,
    /// TLS 1.3 only.
    #[value(name = "VersionTLS13")]
    VersionTls13,
}

/// `forward-proxy --key-reload-failure`.
#[cfg(feature = "sidecar")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum KeyReloadFailure {
    /// Keep accepting the keys loaded before.
    Keep,
    /// Refuse every request until the key file loads again.
    FailClosed,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub(crate) struct ManpageArgs {
    /// The command whose page to print, as typed (`join`, `token create`); none for the
    /// top-level page.
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub(crate) command: Vec<String>,
    /// Write the page of every command into this directory (created if missing):
    /// k8s-bootstrap.1, k8s-bootstrap-join.1, k8s-bootstrap-token-create.1, ...; each path
    /// written is printed.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Replace pages already in --dir (else an existing page is refused).
    #[arg(long, requires = "dir")]
    pub(crate) force: bool,
}

#[cfg(feature = "loopback-server")]
#[derive(Debug, Args)]
pub(crate) struct ServeLoopbackArgs {
    /// The port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
    /// Where to write the admin kubeconfig (mode 0600; it holds the admin token; removed on
    /// exit). An existing file is refused unless --force.
    #[arg(long, default_value = "loopback-admin.conf", value_name = "PATH")]
    pub(crate) admin_kubeconfig: PathBuf,
    /// Replace an existing --admin-kubeconfig or --serving-certificate (the file written in its
    /// place is removed on exit).
    #[arg(long)]
    pub(crate) force: bool,
    /// Write the serving certificate (PEM) here while the server runs (removed on exit): what
    /// a forward proxy verifies add-on tokens with (`--public-key-file`, `--algorithm ES256`).
    #[arg(long, value_name = "PATH")]
    pub(crate) serving_certificate: Option<PathBuf>,
    /// Run the Service proxy (`/api/v1/namespaces/<ns>/services/<name>/proxy/...`) through the
    /// add-auth layer: with `add-auth=true` in the query, the request goes on with
    /// `Authorization: Bearer <token>`, a JWT for the user (sub) and the Service (aud
    /// `<ns>/<name>`) signed with the serving certificate's key (ES256).
    #[arg(long)]
    pub(crate) add_auth: bool,
    /// The add-on tokens' issuer (`iss`), what the forward proxy's `--issuer` names.
    #[arg(
        long,
        default_value = "https://kubernetes.default.svc",
        value_name = "ISSUER",
        requires = "add_auth"
    )]
    pub(crate) add_auth_issuer: String,
    /// The add-on tokens' lifetime; a user's token is reused until half of it has passed.
    #[arg(long, default_value = "1m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration, requires = "add_auth")]
    pub(crate) add_auth_token_ttl: Duration,
    /// add-auth=true requests allowed per user, as `<N>/<DURATION>` (`10/1s`, `100/1m`);
    /// beyond it, 429 with Retry-After.
    #[arg(long, default_value = "10/1s", value_name = "N/DURATION", value_parser = rate, requires = "add_auth")]
    pub(crate) add_auth_rate: (NonZeroU32, Duration),
    /// add-auth=true requests a user may make at once (default: the rate's N).
    #[arg(long, value_name = "N", requires = "add_auth")]
    pub(crate) add_auth_burst: Option<NonZeroU32>,
    /// The longest a Service proxy request may take (then 504, or the stream is cut).
    #[arg(long, default_value = "1m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) service_proxy_max_duration: Duration,
    /// Accept EndpointSlices that name loopback addresses (127.0.0.0/8, ::1), which
    /// kube-apiserver refuses, so that the Service proxy reaches an add-on on this machine's
    /// loopback. Anyone who may write EndpointSlices can then reach every loopback port here.
    #[arg(long)]
    pub(crate) dangerous_allow_loopback_endpoints: bool,
}

#[cfg(feature = "loopback-server")]
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Keep the demo's files (kubeconfigs, CA) in this directory instead of a temporary one
    /// that is removed at the end; it must be new or empty (the demo replaces no file).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// The kubectl to run.
    #[arg(long, default_value = "kubectl", value_name = "PATH")]
    pub(crate) kubectl: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    #[command(subcommand)]
    pub(crate) command: TokenCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a bootstrap token on the server and print it.
    Create(CreateArgs),
    /// List the bootstrap tokens on the server.
    List(ListArgs),
    /// Delete bootstrap tokens by ID or whole token.
    Delete(DeleteArgs),
    /// Generate and print a random token without touching the server.
    Generate,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// The token to create (<6 chars [a-z0-9]>.<16 chars [a-z0-9]>); generated when absent.
    #[arg(value_name = "TOKEN")]
    pub(crate) token: Option<String>,
    /// The token's lifetime (Go duration); 0 means it never expires, a negative one is refused
    /// [default: 24h0m0s].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = go_duration)]
    pub(crate) ttl: Option<Duration>,
    /// Usages of the token [default: signing,authentication].
    #[arg(long, value_delimiter = ',', value_name = "USAGES")]
    pub(crate) usages: Vec<String>,
    /// Extra groups the token authenticates as [default:
    /// system:bootstrappers:kubeadm:default-node-token].
    #[arg(long, value_delimiter = ',', value_name = "GROUPS")]
    pub(crate) groups: Vec<String>,
    /// A human-friendly description of the token.
    #[arg(long, default_value = "")]
    pub(crate) description: String,
    /// Print the whole join command instead of the token: `k8s-bootstrap join` with this
    /// command's flags, or `kubeadm join` (--join-command-format).
    #[arg(long)]
    pub(crate) print_join_command: bool,
    /// The command --print-join-command prints.
    #[arg(
        long,
        value_enum,
        default_value_t = JoinCommandFormat::K8sBootstrap,
        value_name = "FORMAT",
        requires = "print_join_command"
    )]
    pub(crate) join_command_format: JoinCommandFormat,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output: OutputFormat,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `token create --join-command-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum JoinCommandFormat {
    /// `k8s-bootstrap join <endpoint> --token ... --discovery-token-ca-cert-hash ...`.
    #[value(name = "k8s-bootstrap")]
    K8sBootstrap,
    /// `kubeadm join <endpoint> --token ... --discovery-token-ca-cert-hash ...`, as kubeadm
    /// prints it.
    Kubeadm,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output: OutputFormat,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    /// Token IDs or whole tokens to delete.
    #[arg(required = true, value_name = "ID|TOKEN")]
    pub(crate) tokens: Vec<String>,
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub(crate) struct PinArgs {
    /// A PEM file with one or more CA certificates.
    #[arg(value_name = "CA_PEM")]
    pub(crate) ca: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct JoinArgs {
    /// The API server endpoint (host:port) for token discovery.
    #[arg(value_name = "ENDPOINT")]
    pub(crate) endpoint: Option<String>,
    /// The token for both discovery and the TLS bootstrap. A command line is visible to every
    /// local user (/proc/*/cmdline) for as long as join runs: prefer --token-file or the
    /// environment variable K8S_BOOTSTRAP_TOKEN, which give the same token; one of the three
    /// at a time.
    #[arg(long, value_name = "TOKEN")]
    pub(crate) token: Option<String>,
    /// A file holding the token for both discovery and the TLS bootstrap (a trailing newline
    /// is ignored); instead of --token or $K8S_BOOTSTRAP_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
    /// The token for discovery (defaults to --token).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) discovery_token: Option<String>,
    /// The token for the TLS bootstrap (defaults to --token).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) tls_bootstrap_token: Option<String>,
    /// Pin the cluster CA's public key (sha256:<hex>); repeatable or comma-separated.
    #[arg(
        long = "discovery-token-ca-cert-hash",
        value_delimiter = ',',
        value_name = "HASH"
    )]
    pub(crate) ca_cert_hashes: Vec<String>,
    /// Trust the cluster-info signature alone, without a CA pin.
    #[arg(long)]
    pub(crate) discovery_token_unsafe_skip_ca_verification: bool,
    /// A discovery kubeconfig: a file path or an https:// URL.
    #[arg(long, value_name = "PATH_OR_URL")]
    pub(crate) discovery_file: Option<String>,
    /// Where to write the TLS-bootstrap kubeconfig (mode 0600).
    #[arg(long, default_value = "bootstrap-kubelet.conf", value_name = "PATH")]
    pub(crate) tls_bootstrap_kubeconfig: PathBuf,
    /// How long to wait for discovery (Go duration).
    #[arg(long, default_value = "5m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) discovery_timeout: Duration,
    /// Finish the kubelet's TLS bootstrap for this node: file its certificate signing request
    /// with the bootstrap token, wait for approval and the certificate, and write the node's
    /// kubeconfig (`system:node:<name>`).
    #[arg(long, value_name = "NAME")]
    pub(crate) node_name: Option<String>,
    /// Where the node's key and certificate go (`kubelet-client-current.pem`, as the kubelet's
    /// --cert-dir).
    #[arg(long, default_value = "pki", value_name = "DIR")]
    pub(crate) cert_dir: PathBuf,
    /// Where to write the node's kubeconfig (mode 0600), which uses its certificate.
    #[arg(long, default_value = "kubelet.conf", value_name = "PATH")]
    pub(crate) kubelet_kubeconfig: PathBuf,
    /// How long to wait for the certificate (Go duration; the kubelet waits an hour).
    #[arg(long, default_value = "1h0m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration)]
    pub(crate) tls_bootstrap_timeout: Duration,
    /// With --node-name: also file the kubelet's serving certificate request (signer
    /// kubernetes.io/kubelet-serving, as the kubelet's serverTLSBootstrap does), with the
    /// node's client certificate once it is issued, and write the pair as
    /// <cert-dir>/kubelet-server-<timestamp>.pem with kubelet-server-current.pem linking to it.
    /// kube-controller-manager never approves serving requests: an administrator (kubectl
    /// certificate approve) or an approver controller must. join waits for it up to
    /// --serving-timeout; the client credentials are written first and stay either way.
    #[arg(long, requires = "node_name")]
    pub(crate) serving: bool,
    /// With --serving: a DNS name for the serving certificate (the node name is always one);
    /// repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "NAME", requires = "serving")]
    pub(crate) hostname: Vec<String>,
    /// With --serving: an IP address for the serving certificate (the node's addresses);
    /// repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "IP", requires = "serving")]
    pub(crate) address: Vec<std::net::IpAddr>,
    /// With --serving: how long to wait for the serving certificate's approval and issuance
    /// (Go duration; the kubelet's certificate manager waits 15 minutes per request). When
    /// it runs out join fails, its client credentials written; `k8s-bootstrap
    /// node-certificates --serving` keeps requesting.
    #[arg(long, default_value = "15m0s", value_name = "DURATION", allow_hyphen_values = true, value_parser = positive_duration, requires = "serving")]
    pub(crate) serving_timeout: Duration,
    /// Replace output files that already exist (--tls-bootstrap-kubeconfig, and with
    /// --node-name --kubelet-kubeconfig and <cert-dir>/kubelet-client-current.pem); without
    /// it, join refuses to start, as kubeadm's preflight does. An existing
    /// kubelet-server-current.pem is never replaced by join --serving.
    #[arg(long)]
    pub(crate) force: bool,
}

/// clap's error, without the tip it gives for `--kubeconfig` or `--context` after a command
/// that takes neither: "a similar argument exists: '--kubelet-kubeconfig'" points at an output
/// path. The tip says which commands take them instead.
pub(crate) fn without_misleading_tip(e: clap::Error) -> clap::Error {
    use clap::CommandFactory as _;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let flag = arg.split('=').next().unwrap_or_default();
    if !matches!(flag, "--kubeconfig" | "--context") {
        return e;
    }
    let mut cli = Cli::command();
    cli.build();
    let mut out = clap::Error::new(ErrorKind::UnknownArgument).with_cmd(&cli);
    out.insert(ContextKind::InvalidArg, ContextValue::String(arg.clone()));
    // The subcommand's own usage: clap's is written with the argument it suggested.
    let mut command = &cli;
    for word in std::env::args().skip(1) {
        match command.find_subcommand(&word) {
            Some(sub) => command = sub,
            None if word.starts_with('-') => {}
            None => break,
        }
    }
    out.insert(
        ContextKind::Usage,
        ContextValue::StyledStr(command.clone().render_usage()),
    );
    out.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![
            format!(
                "{flag} is taken only by the commands that talk to a cluster through a kubeconfig: \
             token create|list|delete, controllers, forward-proxy --audience-from-services"
            )
            .into(),
        ]),
    );
    out
}

/// A Go duration (`1h30m`, `90s`, `0`), read by the core's parser. A negative duration is
/// refused: kubeadm reads `--ttl -5m` as a token that never expires, which is never what a
/// negative lifetime meant (`0` says "never" explicitly).
/// `<N>/<DURATION>`: N (at least 1) per Go duration (not zero).
#[cfg(feature = "loopback-server")]
fn rate(s: &str) -> Result<(NonZeroU32, Duration), String> {
    let (n, per) = s
        .split_once('/')
        .ok_or_else(|| "expected <N>/<DURATION>, e.g. 10/1s".to_owned())?;
    let n = n
        .parse::<NonZeroU32>()
        .map_err(|_| format!("{n:?} is not a number of requests from 1 to 4294967295"))?;
    Ok((n, positive_duration(per)?))
}

/// A Go duration ([`go_duration`]) longer than zero: a timeout or a lifetime. A negative one is
/// taken as the flag's value (`allow_hyphen_values`), so that it is refused for what it is.
#[cfg(feature = "controllers")]
fn provider_regex(s: &str) -> Result<regex::Regex, String> {
    if s.is_empty() {
        return Err("must not be empty".to_owned());
    }
    // The compiled program is bounded, as a hostile pattern could otherwise take memory.
    regex::RegexBuilder::new(s)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(feature = "controllers")]
fn ip_prefix(s: &str) -> Result<k8s_bootstrap::tls_bootstrap::IpPrefix, String> {
    s.trim()
        .parse()
        .map_err(|_| "not an IP prefix (address/length, such as 10.0.0.0/8 or fd00::/8)".to_owned())
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    if s.trim_start().starts_with('-') {
        return Err("must be positive (a Go duration such as 30s or 5m0s)".to_owned());
    }
    match go_duration(s)? {
        Duration::ZERO => Err("must be longer than 0s".to_owned()),
        d => Ok(d),
    }
}

/// A cache lifetime: a Go duration, zero (nothing cached) or more.
#[cfg(feature = "sidecar")]
fn cache_ttl(s: &str) -> Result<Duration, String> {
    go_duration(s).map_err(|_| {
        "not a cache lifetime: a Go duration such as 10s or 1m0s, 0s to cache nothing".to_owned()
    })
}

fn go_duration(s: &str) -> Result<Duration, String> {
    let json = serde_json::json!({ "ttl": s }).to_string();
    let parsed =
        bootstrap_token::KubeadmToken::from_json(json.as_bytes()).map_err(|e| e.to_string())?;
    // The core reads a negative duration as zero, as kubeadm does: the sign tells them apart.
    let negative = s.starts_with('-') && s.bytes().any(|b| matches!(b, b'1'..=b'9'));
    match parsed.ttl {
        Some(d) if !negative => Ok(d),
        _ => Err("a negative duration is not allowed (0 means no limit)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_create() {
        let cli = Cli::try_parse_from([
            "k8s-bootstrap",
            "token",
            "create",
            "--ttl",
            "1h",
            "--usages",
            "signing,authentication",
            "-o",
            "json",
        ])
        .unwrap();
        let Command::Token(TokenArgs {
            command: TokenCommand::Create(c),
        }) = cli.command
        else {
            panic!("not create")
        };
        assert_eq!(c.ttl, Some(Duration::from_secs(3600)));
        assert_eq!(c.usages, ["signing", "authentication"]);
        assert_eq!(c.output, OutputFormat::Json);
    }

    #[cfg(feature = "loopback-server")]
    #[test]
    fn add_auth_rates() {
        let n = |n| NonZeroU32::new(n).unwrap();
        assert_eq!(rate("10/1s").unwrap(), (n(10), Duration::from_secs(1)));
        assert_eq!(rate("1/1h").unwrap(), (n(1), Duration::from_secs(3600)));
        for bad in ["10", "0/1s", "10/0s", "-1/1s", "x/1s", "10/1 day", "/1s"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        let err = Cli::try_parse_from(["k8s-bootstrap", "serve-loopback", "--add-auth-rate=1/1s"])
            .unwrap_err();
        assert_eq!(err.exit_code(), 2, "--add-auth-rate without --add-auth");
        assert!(Cli::try_parse_from(["k8s-bootstrap", "serve-loopback", "--add-auth"]).is_ok());
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(go_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(go_duration("-0s").unwrap(), Duration::ZERO);
        assert!(go_duration("1 day").is_err());
        let err = Cli::try_parse_from(["k8s-bootstrap", "token", "create", "--ttl", "1 day"])
            .unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn negative_durations_are_refused_naming_the_flag() {
        // kubeadm reads `--ttl -5m` as "never expires"; here it is a usage error.
        assert!(go_duration("-1h").is_err());
        let err =
            Cli::try_parse_from(["k8s-bootstrap", "token", "create", "--ttl", "-5m"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let message = err.to_string();
        assert!(message.contains("--ttl"), "{message}");
        assert!(message.contains("negative"), "{message}");
        let cli = Cli::try_parse_from(["k8s-bootstrap", "token", "create", "--ttl", "0"]).unwrap();
        let Command::Token(TokenArgs {
            command: TokenCommand::Create(c),
        }) = cli.command
        else {
            panic!("not create")
        };
        assert_eq!(c.ttl, Some(Duration::ZERO));
    }

    #[test]
    fn rejects_bad_usage() {
        let err = Cli::try_parse_from(["k8s-bootstrap", "token", "create", "--bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let err = Cli::try_parse_from(["k8s-bootstrap", "token", "delete"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    /// The client and the serving certificate's managers default to ports of their own, so
    /// that both run on one node without flags; an address given, or `off`, is taken as is.
    #[test]
    fn node_certificates_http_address_defaults_by_certificate() {
        let address = |extra: &[&str]| {
            let mut argv = vec![
                "k8s-bootstrap",
                "node-certificates",
                "--node-name",
                "worker-1",
                "--kubeconfig",
                "kubelet.conf",
            ];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::NodeCertificates(args) => args.http_address(),
                _ => unreachable!("parsed as node-certificates"),
            }
        };
        let local = |port| Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(address(&[]), local(10268));
        assert_eq!(address(&["--serving"]), local(10269));
        assert_eq!(
            address(&["--serving", "--http-address", "0.0.0.0:9100"]),
            Some("0.0.0.0:9100".parse().unwrap())
        );
        assert_eq!(address(&["--http-address", "off"]), None);
        assert_eq!(address(&["--serving", "--http-address="]), None);
    }
}
