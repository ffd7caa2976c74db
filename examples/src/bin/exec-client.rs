//! A client that authenticates with an exec credential plugin the way kubectl does: the
//! `exec-credential` core's `ExecAuthenticator` decides, `k8s_bootstrap::exec::ExecCredentials`
//! runs the plugin.
//!
//! ```text
//! exec-client <kubeconfig.json> <path>...
//! ```
//!
//! It reads the current context of a JSON kubeconfig (cluster `server`,
//! `certificate-authority-data`, the `client.authentication.k8s.io/exec` extension, and the
//! user's `exec` stanza), then sends one GET request per `path`, in order. Each plugin run gets
//! the environment the core asks for, stdin only when interactive, a timeout (the process group
//! is killed) and a stdout cap. On HTTP 401 the plugin is re-run at most once
//! per credential and that request fails (it is not retried), as in kubectl. Prints each
//! response body; the exit status is that of the last request; `exec-client: plugin runs: <n>`
//! goes to stderr.
//!
//! `EXEC_CLIENT_TIMEOUT_MS` and `EXEC_CLIENT_MAX_STDOUT` override the run timeout and the
//! stdout cap (for demonstrating them on misbehaving plugins).

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use exec_credential::{CLUSTER_EXTENSION_KEY, Cluster, ExecAuthenticator, ExecConfig, Stdin};
use k8s_bootstrap::exec::{self, ExecCredentials};
use k8s_bootstrap_examples::{BoxError, https_request_async};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kubeconfig), Some(paths)) = (args.get(1), args.get(2..).filter(|p| !p.is_empty()))
    else {
        return Err("usage: exec-client <kubeconfig.json> <path>...".into());
    };
    let (config, cluster, ca_pem) = load(Path::new(kubeconfig))?;
    let server = cluster.server.clone();
    let mut auth = ExecAuthenticator::new(config, cluster)?;
    auth.set_stdin(if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        Stdin::terminal()
    } else {
        Stdin::not_terminal()
    });
    if let Ok(ms) = std::env::var("EXEC_CLIENT_TIMEOUT_MS") {
        let d = Duration::from_millis(ms.parse()?);
        auth.set_timeouts(d, d);
    }
    if let Ok(bytes) = std::env::var("EXEC_CLIENT_MAX_STDOUT") {
        auth.set_max_stdout(bytes.parse()?);
    }
    // The driver runs the plugin (environment, stdin, timeout, stdout cap, process group) when
    // the core asks for a run, shared by every caller.
    let credentials = ExecCredentials::from_authenticator(auth);
    let mut result = Ok(());
    for path in paths {
        let url = format!("{}{path}", server.trim_end_matches('/'));
        let cred = credentials.credential().await.map_err(core_error)?;
        let bearer = cred
            .token()
            .map(|t| format!("Bearer {}", t.expose_secret()));
        let identity = cred.client_identity().map(|i| {
            (
                i.certificate_pem().to_owned(),
                i.key().expose_secret().to_owned(),
            )
        });
        let mut headers = vec![("Accept", "application/json")];
        if let Some(b) = &bearer {
            headers.push(("Authorization", b.as_str()));
        }
        let identity = identity.as_ref().map(|(c, k)| (c.as_str(), k.as_str()));
        let response = https_request_async(&url, &ca_pem, identity, "GET", &headers, &[]).await?;
        if response.status == 401 {
            // client-go: refresh at most once per credential; the request is not retried.
            if let Err(e) = credentials.refresh_after_unauthorized(cred.id()).await {
                eprintln!("refreshing credentials: {}", core_error(e));
            }
            result = Err("the server has asked for the client to provide credentials".into());
            continue;
        }
        if !(200..300).contains(&response.status) {
            result = Err(format!("server answered {}", response.status).into());
            continue;
        }
        result = Ok(());
        println!("{}", response.text());
    }
    eprintln!("exec-client: plugin runs: {}", credentials.plugin_runs());
    result
}

/// The core's error itself, worded as kubectl words it (without the driver's prefix).
fn core_error(e: exec::Error) -> BoxError {
    match e {
        exec::Error::Plugin(e) | exec::Error::Authenticator(e) => e.into(),
        other => other.into(),
    }
}

/// Reads the current context of a JSON kubeconfig.
// Indexing a `serde_json::Value` never panics: a missing key or index gives `Null`.
#[allow(clippy::indexing_slicing)]
fn load(path: &Path) -> Result<(ExecConfig, Cluster, String), BoxError> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let context_name = doc["current-context"]
        .as_str()
        .ok_or("no current-context")?;
    let named = |list: &str, name: &str| -> Result<serde_json::Value, BoxError> {
        doc[list]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["name"] == name))
            .cloned()
            .ok_or_else(|| format!("{list} {name:?} not found").into())
    };
    let context = named("contexts", context_name)?;
    let cluster_name = context["context"]["cluster"]
        .as_str()
        .ok_or("context has no cluster")?;
    let user_name = context["context"]["user"]
        .as_str()
        .ok_or("context has no user")?;
    let cluster_entry = named("clusters", cluster_name)?;
    let user_entry = named("users", user_name)?;

    let mut cluster: Cluster = serde_json::from_value(cluster_entry["cluster"].clone())?;
    cluster.config = cluster_entry["cluster"]["extensions"]
        .as_array()
        .and_then(|exts| {
            exts.iter()
                .find(|e| e["name"] == CLUSTER_EXTENSION_KEY)
                .map(|e| e["extension"].clone())
        });
    let ca_pem = match cluster_entry["cluster"]["certificate-authority-data"].as_str() {
        Some(b64) => String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64)?)?,
        None => return Err("this demo needs certificate-authority-data".into()),
    };

    let mut exec: ExecConfig = serde_json::from_value(user_entry["user"]["exec"].clone())?;
    exec.apply_defaults();
    exec.validate(user_name)?;
    if let Some(dir) = path.parent() {
        exec.resolve_relative_to(dir);
    }
    Ok((exec, cluster, ca_pem))
}
