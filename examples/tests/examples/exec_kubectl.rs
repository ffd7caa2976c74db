//! kubectl interop for `exec-credential`: the real kubectl runs the `exec-plugin` example
//! against a loopback HTTPS server, and the `exec-client` example (our state machine driving
//! real processes) is checked against kubectl's observable behaviour on the same plugin.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::Mutex;

use base64::Engine as _;
use exec_credential::{ApiVersion, Cluster, ExecCredential, ExecCredentialSpec};
use k8s_bootstrap_examples::{ClientAuth, HttpsServer, Request, Response, TestPki};

const API_VERSIONS: &str = r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]}"#;
const VERSION: &str =
    r#"{"major":"1","minor":"32","gitVersion":"v1.32.4","platform":"linux/amd64"}"#;
/// The requests kubectl v1.32 makes for `get --raw /api`: a version probe, then the path.
const KUBECTL_PATHS: [&str; 2] = ["/version?timeout=5s", "/api"];
const EXTENSION: &str = r#"{"audience":"loopback","region":"test-1"}"#;

/// Whether kubectl is available; in CI (`CI=true`) its absence is a failure.
fn kubectl_available() -> bool {
    let ok = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required in CI"
        );
        eprintln!("SKIP: kubectl not found; the exec-credential kubectl interop tests did not run");
    }
    ok
}

struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        let dir =
            std::env::temp_dir().join(format!("exec-credential-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home")).unwrap();
        Sandbox { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A JSON kubeconfig (kubectl reads JSON as YAML) whose user runs the plugin.
fn write_kubeconfig(
    sb: &Sandbox,
    server: &str,
    ca_pem: &str,
    plugin_env: &[(&str, String)],
) -> PathBuf {
    write_kubeconfig_as(sb, server, ca_pem, plugin_env, ApiVersion::V1)
}

/// As [`write_kubeconfig`], speaking `version`; for `v1beta1`, `interactiveMode` is left out so
/// that the client's defaulting applies.
fn write_kubeconfig_as(
    sb: &Sandbox,
    server: &str,
    ca_pem: &str,
    plugin_env: &[(&str, String)],
    version: ApiVersion,
) -> PathBuf {
    let env: Vec<serde_json::Value> = plugin_env
        .iter()
        .map(|(k, v)| serde_json::json!({"name": k, "value": v}))
        .collect();
    let mut config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "loopback",
        "clusters": [{"name": "loopback", "cluster": {
            "server": server,
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            "extensions": [{"name": "client.authentication.k8s.io/exec",
                            "extension": serde_json::from_str::<serde_json::Value>(EXTENSION).unwrap()}],
        }}],
        "users": [{"name": "plugin-user", "user": {"exec": {
            "apiVersion": version.as_str(),
            "command": env!("CARGO_BIN_EXE_exec-plugin"),
            "args": ["--from-kubeconfig"],
            "env": env,
            "interactiveMode": "Never",
            "provideClusterInfo": true,
        }}}],
        "contexts": [{"name": "loopback", "context": {"cluster": "loopback", "user": "plugin-user"}}],
    });
    if version == ApiVersion::V1Beta1 {
        config["users"][0]["user"]["exec"]
            .as_object_mut()
            .unwrap()
            .remove("interactiveMode");
    }
    let path = sb.path("kubeconfig");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

fn kubectl(sb: &Sandbox, kubeconfig: &Path) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "--raw", "/api"])
        .env("HOME", sb.path("home"))
        .env("KUBECACHEDIR", sb.path("home/cache"))
        .env_remove("KUBECONFIG")
        .env_remove("KUBERC")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn exec_client(sb: &Sandbox, kubeconfig: &Path, paths: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_exec-client"))
        .arg(kubeconfig)
        .args(paths)
        .env("HOME", sb.path("home"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The `KUBERNETES_EXEC_INFO` values the plugin recorded, one per run.
fn recorded(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What kubectl must have sent, built with our types.
fn expected_exec_info(server: &str, ca_pem: &str) -> String {
    let cluster = Cluster::new(server)
        .with_certificate_authority_data(ca_pem.as_bytes().to_vec())
        .with_config(serde_json::from_str(EXTENSION).unwrap());
    ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(cluster), false),
    )
    .to_exec_info()
}

fn check_exec_info(info: &str, server: &str, ca_pem: &str) {
    let parsed = ExecCredential::from_exec_info(info).unwrap();
    assert_eq!(parsed.api_version(), ApiVersion::V1);
    assert!(!parsed.may_prompt(), "interactive must be false");
    let cluster = parsed
        .cluster()
        .expect("provideClusterInfo: true sends the cluster");
    assert_eq!(cluster.server, server);
    assert_eq!(cluster.certificate_authority_data, ca_pem.as_bytes());
    assert_eq!(cluster.config.as_ref().unwrap().to_string(), EXTENSION);
    // Byte for byte what our serializer writes, trailing newline included.
    assert_eq!(info, expected_exec_info(server, ca_pem));
}

type RequestLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// An API-server stand-in answering `/version` and `/api` for accepted bearer tokens and 401
/// otherwise; it logs `(path, token)` of every request.
fn bearer_server(
    pki: &TestPki,
    accept: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> (HttpsServer, RequestLog) {
    let log: RequestLog = Arc::default();
    let seen = log.clone();
    let server = HttpsServer::start(pki, ClientAuth::None, move |req: &Request| {
        let token = req
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "));
        seen.lock()
            .unwrap()
            .push((req.path.clone(), token.map(str::to_owned)));
        match token {
            Some(t) if accept(t) => answer(&req.path),
            _ => Response::kube_status(401, "Unauthorized", "Unauthorized"),
        }
    })
    .unwrap();
    (server, log)
}

fn answer(path: &str) -> Response {
    match path.split('?').next() {
        Some("/version") => Response::json(200, VERSION),
        Some("/api") => Response::json(200, API_VERSIONS),
        _ => Response::kube_status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
    }
}

fn take(log: &RequestLog) -> Vec<(String, Option<String>)> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn kubectl_runs_the_plugin_and_sends_its_token() {
    if !kubectl_available() {
        return;
    }
    let pki = TestPki::new().unwrap();
    let (server, log) = bearer_server(&pki, |t| t == "exec-token-1");
    let sb = Sandbox::new("token");
    let record = sb.path("kubectl-record");
    let kubeconfig = write_kubeconfig(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &[("EXEC_PLUGIN_RECORD", record.display().to_string())],
    );
    let out = kubectl(&sb, &kubeconfig);
    let infos = recorded(&record);
    assert!(
        out.status.success(),
        "kubectl failed: {} {infos:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("APIVersions"));
    assert_eq!(infos.len(), 1, "one plugin run");
    check_exec_info(&infos[0], &server.url(), &pki.ca_cert_pem);

    // Our client, on the same kubeconfig and plugin: same environment, same outcome.
    let ours_record = sb.path("ours-record");
    let kubeconfig = write_kubeconfig(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &[("EXEC_PLUGIN_RECORD", ours_record.display().to_string())],
    );
    let kubectl_requests = take(&log);
    assert!(
        kubectl_requests
            .iter()
            .all(|(_, t)| t.as_deref() == Some("exec-token-1"))
    );
    let out = exec_client(
        &sb,
        &kubeconfig,
        &["/version?timeout=5s", "/api", "/api", "/api"],
    );
    assert!(
        out.status.success(),
        "exec-client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("APIVersions")
            .count(),
        3
    );
    assert_eq!(
        recorded(&ours_record),
        infos,
        "same KUBERNETES_EXEC_INFO as kubectl, one run for four requests"
    );
    assert!(
        take(&log)
            .iter()
            .all(|(_, t)| t.as_deref() == Some("exec-token-1"))
    );
}

#[test]
fn kubectl_presents_the_plugins_client_certificate() {
    if !kubectl_available() {
        return;
    }
    let pki = TestPki::new().unwrap();
    let (cert, key) = pki.issue_client("exec-user", &["devs"]).unwrap();
    let server = HttpsServer::start(&pki, ClientAuth::Require, |req: &Request| {
        if req.client_cert_der.is_some() && req.header("authorization").is_none() {
            answer(&req.path)
        } else {
            Response::kube_status(401, "Unauthorized", "Unauthorized")
        }
    })
    .unwrap();
    let sb = Sandbox::new("cert");
    std::fs::write(sb.path("client.crt"), &cert).unwrap();
    std::fs::write(sb.path("client.key"), &key).unwrap();
    let env = |record: &str| {
        vec![
            ("EXEC_PLUGIN_MODE", "cert".to_owned()),
            (
                "EXEC_PLUGIN_CERT_FILE",
                sb.path("client.crt").display().to_string(),
            ),
            (
                "EXEC_PLUGIN_KEY_FILE",
                sb.path("client.key").display().to_string(),
            ),
            ("EXEC_PLUGIN_RECORD", sb.path(record).display().to_string()),
        ]
    };
    let kubeconfig = write_kubeconfig(&sb, &server.url(), &pki.ca_cert_pem, &env("kubectl-record"));
    let out = kubectl(&sb, &kubeconfig);
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let infos = recorded(&sb.path("kubectl-record"));
    assert!(!infos.is_empty());
    check_exec_info(&infos[0], &server.url(), &pki.ca_cert_pem);

    let kubeconfig = write_kubeconfig(&sb, &server.url(), &pki.ca_cert_pem, &env("ours-record"));
    let out = exec_client(&sb, &kubeconfig, &KUBECTL_PATHS);
    assert!(
        out.status.success(),
        "exec-client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(recorded(&sb.path("ours-record"))[0], infos[0]);
    assert_eq!(recorded(&sb.path("ours-record")).len(), 1);
}

#[test]
fn a_401_makes_kubectl_and_our_client_rerun_the_plugin_once() {
    if !kubectl_available() {
        return;
    }
    let pki = TestPki::new().unwrap();
    // The first token is rejected; any later one is accepted.
    let (server, log) = bearer_server(&pki, |t| {
        t.starts_with("exec-token-") && t != "exec-token-1"
    });
    let sb = Sandbox::new("401");
    let kubeconfig = write_kubeconfig(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &[(
            "EXEC_PLUGIN_RECORD",
            sb.path("kubectl-record").display().to_string(),
        )],
    );
    let kubectl_out = kubectl(&sb, &kubeconfig);
    let kubectl_runs = recorded(&sb.path("kubectl-record")).len();
    let kubectl_requests = take(&log);
    let paths: Vec<&str> = kubectl_requests.iter().map(|(p, _)| p.as_str()).collect();

    let kubeconfig = write_kubeconfig(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &[(
            "EXEC_PLUGIN_RECORD",
            sb.path("ours-record").display().to_string(),
        )],
    );
    let ours_out = exec_client(&sb, &kubeconfig, &paths);
    let ours_runs = recorded(&sb.path("ours-record")).len();
    let ours_requests = take(&log);

    // kubectl: the first request carries the first token and is refused; the plugin re-runs
    // once; that request is not retried. kubectl up to v1.32 sends `/version?timeout=5s`
    // first, so the 401 lands there and `/api` carries the new token and succeeds; newer
    // kubectl (v1.37) sends `/api` first, which fails with the 401.
    let token = |s: &str| Some(s.to_owned());
    let first = kubectl_requests.first().cloned();
    let expected = if first.as_ref().map(|(p, _)| p.as_str()) == Some(KUBECTL_PATHS[0]) {
        vec![
            (KUBECTL_PATHS[0].to_owned(), token("exec-token-1")),
            (KUBECTL_PATHS[1].to_owned(), token("exec-token-2")),
        ]
    } else {
        vec![(KUBECTL_PATHS[1].to_owned(), token("exec-token-1"))]
    };
    assert_eq!(
        kubectl_requests,
        expected,
        "kubectl stderr: {}",
        String::from_utf8_lossy(&kubectl_out.stderr)
    );
    assert_eq!(kubectl_runs, 2);
    assert_eq!(kubectl_out.status.success(), expected.len() == 2);
    // Our state machine, driving the same plugin over the same request sequence, makes the
    // same decisions.
    assert_eq!(
        ours_requests,
        kubectl_requests,
        "exec-client stderr: {}",
        String::from_utf8_lossy(&ours_out.stderr)
    );
    assert_eq!(ours_runs, kubectl_runs);
    assert_eq!(ours_out.status.success(), kubectl_out.status.success());
}

#[test]
fn v1beta1_with_defaulted_interactive_mode_matches_kubectl() {
    if !kubectl_available() {
        return;
    }
    let pki = TestPki::new().unwrap();
    let (server, log) = bearer_server(&pki, |t| t == "exec-token-1");
    let sb = Sandbox::new("beta");
    let env = |record: &str| vec![("EXEC_PLUGIN_RECORD", sb.path(record).display().to_string())];
    let kc = write_kubeconfig_as(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &env("kubectl-record"),
        ApiVersion::V1Beta1,
    );
    let out = kubectl(&sb, &kc);
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kubectl_requests = take(&log);
    let infos = recorded(&sb.path("kubectl-record"));
    assert_eq!(infos.len(), 1);
    // IfAvailable with stdin not a terminal: not interactive.
    let parsed = ExecCredential::from_exec_info(&infos[0]).unwrap();
    assert_eq!(parsed.api_version(), ApiVersion::V1Beta1);
    assert!(!parsed.may_prompt());

    let kc = write_kubeconfig_as(
        &sb,
        &server.url(),
        &pki.ca_cert_pem,
        &env("ours-record"),
        ApiVersion::V1Beta1,
    );
    let paths: Vec<&str> = kubectl_requests.iter().map(|(p, _)| p.as_str()).collect();
    let out = exec_client(&sb, &kc, &paths);
    assert!(
        out.status.success(),
        "exec-client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(recorded(&sb.path("ours-record")), infos);
    assert_eq!(take(&log), kubectl_requests);
}
