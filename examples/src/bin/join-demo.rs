//! The bootstrap flow written out against the `k8s-bootstrap` library (where `k8s-bootstrap
//! demo` runs the commands): the loopback API server (a test double), `token::create`, token
//! discovery with CA pinning (`discovery::discover`), the two kubeconfigs, and the tampering
//! that discovery catches.
//!
//! Usage: `join-demo [--out <kubeconfig path>] [--bootstrap-out <kubeconfig path>]
//! [--serve-for <seconds>]`
//!
//! `--out` gets the discovered kubeconfig without credentials (kubeadm's discovery result: no
//! user, so `kubectl` prompts for a username with it); `--bootstrap-out` the kubelet's
//! TLS-bootstrap kubeconfig, which carries the bootstrap token and is the one `kubectl` can
//! use. With `--serve-for`, the API server keeps answering for that many seconds afterwards.
//! Files at the default paths (in the temporary directory) are removed when the demo ends.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use k8s_bootstrap::bootstrap_token::{BootstrapToken, KubeadmToken};
use k8s_bootstrap::clusterinfo::{CaBundle, ClusterInfo, PinSet, TokenDiscoveryConfig};
use k8s_bootstrap::discovery::{self, Source};
use k8s_bootstrap::files::Existing;
use k8s_bootstrap::token;
use k8s_bootstrap_examples::BoxError;
use loopback_apiserver::LoopbackApiServer;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("join-demo: FAILED: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), BoxError> {
    let args = Args::parse()?;
    let _cleanup = RemoveOnDrop(args.temporary.clone());

    step("control plane: the loopback API server (a test double): CA, cluster-info, signer");
    let server = LoopbackApiServer::builder().start().await?;
    let ca = CaBundle::from_pem(server.ca_pem().as_bytes())?;
    let pin = *ca.first_pin().ok_or("CA bundle without a certificate")?;
    let pins = PinSet::from_iter([pin]);
    say(&format!(
        "{} serves kube-public/cluster-info; CA pin {pin}",
        server.url()
    ));

    step("control plane: kubeadm token create (24h, signing+authentication)");
    let secrets = token::secrets_api(server.admin_client().await?);
    let created = token::create(&secrets, KubeadmToken::new(None), wall_clock()).await?;
    let token = created.token().clone();
    let endpoint = server.endpoint();
    // The whole token is printed once, in the join command, as kubeadm prints it.
    say(&format!(
        "join command: kubeadm join {endpoint} --token {token} --discovery-token-ca-cert-hash {pin}"
    ));
    let signed = server
        .object("kube-public", "configmaps", "cluster-info")
        .and_then(|cm| {
            cm.get("data")
                .and_then(|d| d.as_object())
                .map(|d| d.keys().cloned().collect::<Vec<_>>())
        })
        .unwrap_or_default();
    say(&format!(
        "the bootstrap signer signed cluster-info: data keys {signed:?}"
    ));

    step(&format!(
        "joining node: token discovery via {endpoint} with token ID {} and pin {pin}",
        token.id()
    ));
    let found =
        discovery::discover(Source::Token(config(&endpoint, &token, pins.clone())?)).await?;
    for (r, n) in server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/configmaps/cluster-info"))
        .zip(1..)
    {
        let who = r.user.as_deref().unwrap_or("anonymous: no credentials");
        say(&format!(
            "fetch #{n}: GET {}{} -> {} ({who})",
            server.url(),
            r.path,
            r.status
        ));
    }
    say(
        "passed: the JWS for the token ID, the CA pin, and a second fetch trusting only that CA, byte-identical to the first",
    );
    say(&format!(
        "discovered server {}",
        found.cluster_info().server()
    ));

    // The demo's own output files: a second run writes them again.
    discovery::write_kubeconfig(
        &args.out,
        found.to_client_kubeconfig_yaml(),
        Existing::Replace,
    )?;
    say(&format!(
        "wrote kubeconfig (no credentials) to {}",
        args.out
    ));
    let bootstrap = found.cluster_info().tls_bootstrap_kubeconfig(&token);
    discovery::write_kubeconfig(
        &args.bootstrap_out,
        bootstrap.expose_secret(),
        Existing::Replace,
    )?;
    say(&format!(
        "wrote TLS-bootstrap kubeconfig (user {}, token ID {}) to {}",
        k8s_bootstrap::clusterinfo::TLS_BOOTSTRAP_USER,
        token.id(),
        args.bootstrap_out
    ));

    step("tampering is caught");
    let wrong_secret: BootstrapToken = format!("{}.{}", token.id(), "0".repeat(16)).parse()?;
    caught(
        "wrong token secret",
        config(&endpoint, &wrong_secret, pins.clone())?,
    )
    .await?;
    let mut wrong_pin = PinSet::new();
    wrong_pin.allow(&format!("sha256:{}", "0".repeat(64)))?;
    caught("wrong CA pin", config(&endpoint, &token, wrong_pin)?).await?;
    let unknown: BootstrapToken = "zzzzzz.0123456789abcdef".parse()?;
    caught(
        "unknown token ID (1 s of polling)",
        config(&endpoint, &unknown, pins.clone())?.with_timeout(Duration::from_secs(1)),
    )
    .await?;
    caught(
        "no pins and no unsafe opt-in",
        config(&endpoint, &token, PinSet::new())?,
    )
    .await?;

    // An attacker's API server: a kubeconfig pointing elsewhere, under the genuine signature.
    let evil = LoopbackApiServer::builder()
        .cluster_info(false)
        .bootstrap_signer(false)
        .start()
        .await?;
    let mut data = server
        .object("kube-public", "configmaps", "cluster-info")
        .and_then(|cm| cm.get("data").and_then(|d| d.as_object()).cloned())
        .ok_or("no cluster-info")?;
    let altered = ClusterInfo::new("https://203.0.113.7:6443", ca.clone())?.to_kubeconfig_yaml();
    data.insert("kubeconfig".to_owned(), altered.into());
    evil.insert(
        "kube-public",
        "configmaps",
        serde_json::json!({"metadata": {"name": "cluster-info"}, "data": data}),
    )?;
    caught(
        "altered kubeconfig (server URL changed, signature kept)",
        config(&evil.endpoint(), &token, pins.clone())?,
    )
    .await?;

    println!();
    println!("join-demo: all checks passed");
    if let Some(seconds) = args.serve_for {
        println!("join-demo: serving {} for {seconds}s", server.url());
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }
    Ok(())
}

fn config(
    endpoint: &str,
    token: &BootstrapToken,
    pins: PinSet,
) -> Result<TokenDiscoveryConfig, BoxError> {
    Ok(TokenDiscoveryConfig::new(endpoint, token.clone())?
        .with_pins(pins)
        .with_retry_interval(Duration::from_millis(200))
        .with_timeout(Duration::from_secs(10)))
}

/// Runs a discovery that must fail, and shows why.
async fn caught(what: &str, config: TokenDiscoveryConfig) -> Result<(), BoxError> {
    match discovery::discover(Source::Token(config)).await {
        Ok(_) => Err(format!("{what}: discovery succeeded").into()),
        Err(e) => {
            say(&format!("caught: {what}: {e}"));
            Ok(())
        }
    }
}

/// The wall clock, read here at the edge (the libraries take `now` as a parameter).
#[allow(clippy::disallowed_methods, reason = "the demo's main reads the clock")]
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
        let default = |name: &str| -> String {
            let path: PathBuf = std::env::temp_dir()
                .join(format!("join-demo-{}{name}.kubeconfig", std::process::id()));
            path.display().to_string()
        };
        let (mut out, mut bootstrap_out) = (None, None);
        let mut serve_for = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => out = Some(args.next().ok_or("--out needs a path")?),
                "--bootstrap-out" => {
                    bootstrap_out = Some(args.next().ok_or("--bootstrap-out needs a path")?);
                }
                "--serve-for" => {
                    serve_for = Some(args.next().ok_or("--serve-for needs seconds")?.parse()?);
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
        let out = out.unwrap_or_else(|| {
            let p = default("");
            temporary.push(p.clone());
            p
        });
        let bootstrap_out = bootstrap_out.unwrap_or_else(|| {
            let p = default("-bootstrap-kubelet");
            temporary.push(p.clone());
            p
        });
        Ok(Args {
            out,
            bootstrap_out,
            serve_for,
            temporary,
        })
    }
}
