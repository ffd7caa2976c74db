//! The whole bootstrap flow on loopback, over real TLS and real HTTP.
//!
//! A control plane creates a CA and a serving certificate, publishes the `cluster-info`
//! ConfigMap, creates a bootstrap token and lets the bootstrap signer sign cluster-info; a
//! joining node then performs kubeadm-style token discovery with CA pinning (a first fetch
//! without verifying the server, a second trusting only the discovered CA) and writes a
//! kubeconfig without credentials and kubeadm's TLS-bootstrap kubeconfig (the bootstrap token
//! as the credential). Finally, tampering is shown being caught.
//!
//! Usage: `join-demo [--out <kubeconfig path>] [--bootstrap-out <kubeconfig path>]
//! [--serve-for <seconds>]`
//!
//! With `--serve-for`, the API server keeps answering for that many seconds after the demo,
//! so a real client can be pointed at the written kubeconfigs. The TLS-bootstrap kubeconfig
//! (`--bootstrap-out`) is the one `kubectl` can use: it carries the bootstrap token. The
//! `--out` kubeconfig has no user, as kubeadm's discovery result has none, and `kubectl`
//! prompts for a username with it.
//!
//! Files written to the default paths (in the temporary directory) are removed when the demo
//! ends; files at paths given with `--out`/`--bootstrap-out` are kept.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use bootstrap_token::{AuthOutcome, BootstrapToken, KubeadmToken, SecretObject, TokenId};
use clusterinfo::{
    Action, CaBundle, ClusterInfo, ClusterInfoConfigMap, Discovered, Error, FetchTrust, Pin,
    PinSet, Response, TokenDiscoveryConfig,
};
use k8s_bootstrap_examples::{
    BoxError, ClientAuth, HttpsServer, Request, TestPki, Trust, https_get,
};

/// What the demo API server currently serves for cluster-info.
#[derive(Clone, Default)]
struct Served {
    /// The ConfigMap JSON (None: not published yet, 404 like the API server).
    configmap: Option<String>,
    /// When set, answer from the second request on with this JSON instead (an attacker who
    /// switches content after the unverified first fetch).
    after_first: Option<String>,
    requests: usize,
    /// The token Secrets in kube-system, for the bearer-token authenticator.
    secrets: Vec<SecretObject>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("join-demo: FAILED: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), BoxError> {
    let args = Args::parse()?;
    let _cleanup = RemoveOnDrop(args.temporary.clone());

    step("control plane: create the cluster CA and the API server's serving certificate");
    let pki = TestPki::new()?;
    let ca = CaBundle::from_pem(pki.ca_cert_pem.as_bytes())?;
    let pin = *ca.first_pin().ok_or("CA bundle without a certificate")?;
    say(&format!("CA public-key pin: {pin}"));

    let served = Arc::new(RwLock::new(Served::default()));
    let server = {
        let served = Arc::clone(&served);
        HttpsServer::start(&pki, ClientAuth::None, move |req| api_server(&served, req))?
    };
    let endpoint = server.addr().to_string();
    say(&format!(
        "API server listening on {} (anonymous requests allowed for cluster-info only)",
        server.url()
    ));

    step("control plane: publish kube-public/cluster-info (kubeconfig only, no credentials)");
    let info = ClusterInfo::new(&server.url(), ca.clone())?;
    let kubeconfig = info.to_kubeconfig_yaml();
    let mut configmap = ClusterInfoConfigMap::new(kubeconfig.clone());
    say(&format!(
        "kubeconfig for cluster-info: {} bytes, server {}",
        kubeconfig.len(),
        info.server()
    ));
    let role = clusterinfo::cluster_info_role();
    let binding = clusterinfo::cluster_info_role_binding();
    say(&format!(
        "RBAC: Role {:?} and RoleBinding {:?} let system:anonymous get only cluster-info",
        role.name(),
        binding.name()
    ));

    step(
        "control plane: create a bootstrap token and its Secret (kubeadm defaults: 24h, signing+authentication)",
    );
    let now = wall_clock();
    let token = BootstrapToken::generate()?;
    let secret = KubeadmToken::new(Some(token.clone()))
        .with_defaults()
        .to_secret_object(now)?;
    // The whole token is printed once, in the join command, as
    // `kubeadm token create --print-join-command` prints it; only its ID from now on.
    say(&format!("token created: ID {}", token.id()));
    say(&format!(
        "join command: kubeadm join {endpoint} --token {token} --discovery-token-ca-cert-hash {pin}"
    ));
    say(&format!(
        "Secret kube-system/{} (type {})",
        secret.name(),
        secret.secret_type()
    ));
    let token_id = token.id().to_string();

    step("control plane: bootstrap signer reconcile");
    let signed = clusterinfo::reconcile(configmap.data(), [&secret], now);
    say(&format!(
        "update needed: {}; signed by token IDs: {:?}",
        signed.update_needed(),
        signed
            .signed_token_ids()
            .iter()
            .map(|id| id.as_str())
            .collect::<Vec<_>>()
    ));
    configmap.set_data(signed.into_data());
    configmap.set_resource_version(Some("1".to_owned()));
    let published = configmap.to_json();
    {
        let mut s = served.write().map_err(|_| "lock poisoned")?;
        s.configmap = Some(published.clone());
        s.secrets = vec![secret.clone()];
    }
    say(&format!(
        "cluster-info now carries data keys: {:?}",
        configmap.data().keys().collect::<Vec<_>>()
    ));

    step(&format!(
        "joining node: token discovery via {endpoint} with token ID {token_id} and pin {pin}"
    ));
    let discovered = discover(
        &endpoint,
        token.clone(),
        PinSet::from_iter([pin]),
        Verbose::Yes,
    )?;
    let found = discovered.cluster_info();
    say(&format!(
        "discovered server (from cluster-info): {}",
        found.server()
    ));
    let client_kubeconfig = discovered.to_client_kubeconfig_yaml();
    std::fs::write(&args.out, &client_kubeconfig)?;
    say(&format!(
        "wrote kubeconfig (no credentials) to {} (no user: kubectl would prompt for a username; use the TLS-bootstrap kubeconfig below)",
        args.out
    ));
    // kubeadm join then writes the kubelet's TLS-bootstrap kubeconfig: the cluster-info server
    // and CA, and the bootstrap token as the credential.
    let bootstrap = found.tls_bootstrap_kubeconfig(&token);
    write_private(&args.bootstrap_out, bootstrap.expose_secret())?;
    say(&format!(
        "wrote TLS-bootstrap kubeconfig (user {}, token ID {}, server {}) to {} (kubectl authenticates with it)",
        clusterinfo::TLS_BOOTSTRAP_USER,
        bootstrap.token_id(),
        bootstrap.server(),
        args.bootstrap_out
    ));

    step("tampering: each must be caught");
    let wrong_secret: BootstrapToken = format!("{token_id}.{}", "0".repeat(16)).parse()?;
    expect_failure(
        "wrong token secret",
        discover(
            &endpoint,
            wrong_secret,
            PinSet::from_iter([pin]),
            Verbose::No,
        ),
        |e| *e == Error::BadSignature,
    )?;

    let other_ca = TestPki::new()?;
    let wrong_pin = Pin::from_certificate_pem(other_ca.ca_cert_pem.as_bytes())?;
    expect_failure(
        "wrong CA pin",
        discover(
            &endpoint,
            token.clone(),
            PinSet::from_iter([wrong_pin]),
            Verbose::No,
        ),
        |e| matches!(e, Error::NotPinned { .. }),
    )?;

    let altered = altered_configmap(&configmap, &kubeconfig)?;
    with_served(&served, Some(altered), None, || {
        expect_failure(
            "altered kubeconfig (server URL changed, signature kept)",
            discover(
                &endpoint,
                token.clone(),
                PinSet::from_iter([pin]),
                Verbose::No,
            ),
            |e| *e == Error::BadSignature,
        )
    })?;

    // A second, validly signed kubeconfig served only on the TLS-verified fetch.
    let mut resigned_info = info.clone();
    resigned_info.set_tls_server_name(Some("switched".to_owned()));
    let mut switched = ClusterInfoConfigMap::new(resigned_info.to_kubeconfig_yaml());
    let switched_data = clusterinfo::reconcile(switched.data(), [&secret], now).into_data();
    switched.set_data(switched_data);
    with_served(
        &served,
        Some(published.clone()),
        Some(switched.to_json()),
        || {
            expect_failure(
                "kubeconfig switched between the two fetches",
                discover(
                    &endpoint,
                    token.clone(),
                    PinSet::from_iter([pin]),
                    Verbose::No,
                ),
                |e| *e == Error::SecondFetchDiffers,
            )
        },
    )?;

    let unknown: BootstrapToken = "zzzzzz.0123456789abcdef".parse()?;
    expect_failure(
        "token ID unknown to the cluster (no jws-kubeconfig-zzzzzz key; gives up at the timeout)",
        discover(&endpoint, unknown, PinSet::from_iter([pin]), Verbose::No),
        |e| matches!(e, Error::TimedOut { last } if matches!(**last, Error::SignatureNotFound { .. })),
    )?;

    let no_pins = TokenDiscoveryConfig::new(&endpoint, token.clone())?.start(wall_clock());
    expect_failure(
        "no pins and no unsafe opt-in",
        no_pins.map(|_| ()).map_err(BoxError::from),
        |e| *e == Error::NoPins,
    )?;

    println!();
    println!("join-demo: all checks passed");
    if let Some(secs) = args.serve_for {
        println!(
            "join-demo: serving {} for {secs}s; try: kubectl --kubeconfig {} get --raw /api/v1/namespaces/kube-public/configmaps/cluster-info",
            server.url(),
            args.bootstrap_out
        );
        std::thread::sleep(Duration::from_secs(secs));
    }
    drop(server);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verbose {
    Yes,
    No,
}

/// Drive the library's discovery state machine with real HTTPS requests and real sleeps.
fn discover(
    endpoint: &str,
    token: BootstrapToken,
    pins: PinSet,
    verbose: Verbose,
) -> Result<Box<Discovered>, BoxError> {
    let mut discovery = TokenDiscoveryConfig::new(endpoint, token)?
        .with_pins(pins)
        .with_retry_interval(Duration::from_secs(1))
        .with_timeout(Duration::from_secs(2))
        .start(wall_clock())?;
    let mut fetch: u32 = 0;
    let mut next = discovery.poll_action();
    loop {
        match next {
            Some(Action::Fetch(request)) => {
                fetch = fetch.saturating_add(1);
                let (trust, how) = match request.trust() {
                    FetchTrust::DangerousNoVerification => (
                        Trust::Insecure,
                        "without verifying the server, no credentials",
                    ),
                    FetchTrust::CaBundle(bundle) => (
                        Trust::CaPem(bundle.as_pem().to_owned()),
                        "trusting only the discovered, pinned CA",
                    ),
                    _ => return Err("the demo only uses pinned or unverified fetches".into()),
                };
                if verbose == Verbose::Yes {
                    say(&format!("fetch #{fetch}: GET {} ({how})", request.url()));
                }
                match https_get(request.url(), &trust, &[("Accept", "application/json")]) {
                    Ok(resp) => {
                        if verbose == Verbose::Yes {
                            say(&format!(
                                "  -> HTTP {} with {} bytes",
                                resp.status,
                                resp.body.len()
                            ));
                        }
                        discovery.handle_response(
                            wall_clock(),
                            Response::Http {
                                status: resp.status,
                                body: &resp.body,
                            },
                        );
                    }
                    Err(e) => {
                        let text = e.to_string();
                        if verbose == Verbose::Yes {
                            say(&format!("  -> transport error: {text}"));
                        }
                        discovery.handle_response(wall_clock(), Response::TransportError(&text));
                    }
                }
                next = discovery.poll_action();
                if verbose == Verbose::Yes {
                    match &next {
                        Some(Action::Fetch(r)) if matches!(r.trust(), FetchTrust::CaBundle(_)) => {
                            say(
                                "  passed: jws-kubeconfig-<id> present, detached JWS verified over the exact bytes, \
                             one cluster, no credentials, CA matches the pin",
                            )
                        }
                        Some(Action::Done(_)) => {
                            say("  passed: kubeconfig byte-identical to the first fetch")
                        }
                        _ => {}
                    }
                }
            }
            Some(Action::WakeAt(at)) => {
                if let Ok(d) = at.duration_since(wall_clock()) {
                    std::thread::sleep(d);
                }
                discovery.handle_timeout(wall_clock());
                next = discovery.poll_action();
            }
            Some(Action::Done(found)) => return Ok(found),
            Some(Action::Failed(e)) => return Err(Box::new(e)),
            Some(_) | None => return Err("discovery stalled".into()),
        }
    }
}

fn expect_failure<T>(
    case: &str,
    result: Result<T, BoxError>,
    expected: impl Fn(&Error) -> bool,
) -> Result<(), BoxError> {
    match result {
        Ok(_) => Err(format!("tampering not caught: {case}").into()),
        Err(e) => match e.downcast_ref::<Error>() {
            Some(err) if expected(err) => {
                say(&format!("caught: {case}: {err}"));
                Ok(())
            }
            _ => Err(format!("{case}: unexpected error: {e}").into()),
        },
    }
}

fn with_served<T>(
    served: &RwLock<Served>,
    configmap: Option<String>,
    after_first: Option<String>,
    f: impl FnOnce() -> Result<T, BoxError>,
) -> Result<T, BoxError> {
    let saved = {
        let mut s = served.write().map_err(|_| "lock poisoned")?;
        let saved = s.clone();
        s.configmap = configmap;
        s.after_first = after_first;
        s.secrets = saved.secrets.clone();
        s.requests = 0;
        saved
    };
    let out = f();
    *served.write().map_err(|_| "lock poisoned")? = saved;
    out
}

/// The published ConfigMap with the kubeconfig's server changed and the signatures kept.
fn altered_configmap(
    configmap: &ClusterInfoConfigMap,
    kubeconfig: &str,
) -> Result<String, BoxError> {
    let mut data = configmap.data().clone();
    let altered = kubeconfig.replace("https://127.0.0.1:", "https://127.0.0.2:");
    if altered == kubeconfig {
        return Err("could not alter the kubeconfig".into());
    }
    data.insert(clusterinfo::KUBECONFIG_KEY.to_owned(), altered);
    Ok(ClusterInfoConfigMap::from_data(data).to_json())
}

/// The demo API server: bearer tokens checked by the bootstrap-token authenticator (401 when
/// rejected, as kube-apiserver answers), cluster-info readable by anyone (anonymous included),
/// 404 before it exists, and 403 for anything else, with `metav1.Status` bodies like
/// kube-apiserver's.
fn api_server(served: &RwLock<Served>, req: &Request) -> k8s_bootstrap_examples::Response {
    use k8s_bootstrap_examples::Response as R;
    let path = req.path.split('?').next().unwrap_or_default();
    let user = match req
        .header("Authorization")
        .map(|h| h.strip_prefix("Bearer "))
    {
        None => "system:anonymous".to_owned(),
        Some(Some(token)) => {
            let Ok(s) = served.read() else {
                return R::kube_status(500, "InternalError", "internal error");
            };
            let lookup = |id: &TokenId| {
                Ok::<_, std::convert::Infallible>(
                    s.secrets.iter().find(|x| x.name() == id.secret_name()),
                )
            };
            match bootstrap_token::authenticate(token.trim(), wall_clock(), lookup) {
                Ok(AuthOutcome::Authenticated(who)) => who.user_name().to_owned(),
                _ => return R::kube_status(401, "Unauthorized", "Unauthorized"),
            }
        }
        Some(None) => return R::kube_status(401, "Unauthorized", "Unauthorized"),
    };
    if req.method != "GET" {
        return R::kube_status(
            403,
            "Forbidden",
            &format!(
                "forbidden: User \"{user}\" cannot {} path \"{path}\"",
                req.method.to_lowercase()
            ),
        );
    }
    if path == clusterinfo::CLUSTER_INFO_PATH {
        let Ok(mut s) = served.write() else {
            return R::kube_status(500, "InternalError", "internal error");
        };
        s.requests = s.requests.saturating_add(1);
        let body = match (&s.after_first, s.requests) {
            (Some(switched), n) if n > 1 => Some(switched.clone()),
            _ => s.configmap.clone(),
        };
        return match body {
            Some(json) => R::json(200, json),
            None => R::kube_status(404, "NotFound", "configmaps \"cluster-info\" not found"),
        };
    }
    if let Some(name) = path.strip_prefix("/api/v1/namespaces/kube-public/configmaps/") {
        return R::kube_status(
            403,
            "Forbidden",
            &format!(
                "configmaps \"{name}\" is forbidden: User \"{user}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-public\""
            ),
        );
    }
    R::kube_status(
        403,
        "Forbidden",
        &format!("forbidden: User \"{user}\" cannot get path \"{path}\""),
    )
}

struct Args {
    out: String,
    bootstrap_out: String,
    serve_for: Option<u64>,
    /// The default paths the demo chose itself, removed when it ends.
    temporary: Vec<String>,
}

/// Removes the listed files when dropped (also when the demo fails).
struct RemoveOnDrop(Vec<String>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for path in &self.0 {
            // A file never written is not an error.
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Args {
    fn parse() -> Result<Args, BoxError> {
        let mut out = std::env::temp_dir()
            .join(format!("join-demo-{}.kubeconfig", std::process::id()))
            .display()
            .to_string();
        let mut bootstrap_out = std::env::temp_dir()
            .join(format!(
                "join-demo-{}-bootstrap-kubelet.kubeconfig",
                std::process::id()
            ))
            .display()
            .to_string();
        let mut serve_for = None;
        let mut out_given = false;
        let mut bootstrap_out_given = false;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => {
                    out = args.next().ok_or("--out needs a path")?;
                    out_given = true;
                }
                "--bootstrap-out" => {
                    bootstrap_out = args.next().ok_or("--bootstrap-out needs a path")?;
                    bootstrap_out_given = true;
                }
                "--serve-for" => {
                    serve_for = Some(args.next().ok_or("--serve-for needs seconds")?.parse()?)
                }
                "-h" | "--help" => {
                    println!(
                        "usage: join-demo [--out <kubeconfig path>] [--bootstrap-out <kubeconfig path>] [--serve-for <seconds>]"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?}").into()),
            }
        }
        let mut temporary = Vec::new();
        if !out_given {
            temporary.push(out.clone());
        }
        if !bootstrap_out_given {
            temporary.push(bootstrap_out.clone());
        }
        Ok(Args {
            out,
            bootstrap_out,
            serve_for,
            temporary,
        })
    }
}

/// Write a file only its owner can read (it holds a credential).
fn write_private(path: &str, contents: &str) -> Result<(), BoxError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)?.write_all(contents.as_bytes())?;
    Ok(())
}

#[allow(clippy::disallowed_methods)] // A demo runs in real time; the library takes `now` from here.
fn wall_clock() -> SystemTime {
    SystemTime::now()
}

fn step(text: &str) {
    println!();
    println!("==> {text}");
}

fn say(text: &str) {
    println!("    {text}");
}
