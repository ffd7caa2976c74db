//! `serve-loopback` and `demo`: the loopback API server (a test double), and the whole
//! bootstrap flow against it with the real commands.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_bootstrap::files::{self, Existing};
use loopback_apiserver::LoopbackApiServer;

use crate::args::{DemoArgs, ServeLoopbackArgs};
use crate::error::CliError;
use crate::output::print;

mod addon_auth;

/// `serve-loopback`: serve until Ctrl-C or SIGTERM, with the admin kubeconfig written to
/// disk while it runs (removed on exit: its token dies with the server). A file that is
/// already at --admin-kubeconfig or --serving-certificate is refused before the server
/// starts (replaced with --force); only the files this process wrote are removed.
pub(crate) async fn serve(args: &ServeLoopbackArgs) -> Result<(), CliError> {
    let existing = if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let outputs = [
        Some(("--admin-kubeconfig", &args.admin_kubeconfig)),
        args.serving_certificate
            .as_ref()
            .map(|p| ("--serving-certificate", p)),
    ];
    for (flag, path) in outputs.iter().flatten() {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(CliError::Usage(format!(
                    "{flag} {}: a directory, not a file",
                    path.display()
                )));
            }
            Ok(_) if !args.force => return Err(exists(flag, path)),
            _ => {}
        }
    }
    // Before anything a signal could interrupt: a SIGTERM from now on stops it cleanly.
    let stop = crate::signals::terminated();
    let server = LoopbackApiServer::builder()
        .port(args.port)
        .service_proxy_max_duration(args.service_proxy_max_duration)
        .dangerous_allow_loopback_endpoints(args.dangerous_allow_loopback_endpoints)
        .start()
        .await
        .map_err(|e| match e {
            loopback_apiserver::Error::Bind { addr, source } => CliError::Listen {
                flag: "--port",
                addr,
                source,
            },
            e => CliError::Loopback(e),
        })?;
    let mut created = Vec::new();
    let served = serve_with_files(args, &server, existing, &mut created, stop).await;
    server.shutdown().await;
    for path in created {
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!("warning: removing {}: {e}", path.display());
        }
    }
    served
}

/// The part of `serve` that writes files: each one written is pushed to `created`, for the
/// caller to remove whatever happens.
async fn serve_with_files(
    args: &ServeLoopbackArgs,
    server: &LoopbackApiServer,
    existing: Existing,
    created: &mut Vec<PathBuf>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), CliError> {
    if args.add_auth {
        let settings = addon_auth::Settings {
            issuer: &args.add_auth_issuer,
            ttl: args.add_auth_token_ttl,
            rate: args.add_auth_rate,
            burst: args.add_auth_burst.unwrap_or(args.add_auth_rate.0),
        };
        addon_auth::install_layer(server, &settings).map_err(CliError::AddAuth)?;
    }
    if let Some(path) = &args.serving_certificate {
        files::write_readable(path, server.serving_certificate_pem().as_bytes(), existing)
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::AlreadyExists {
                    exists("--serving-certificate", path)
                } else {
                    CliError::ServingCertificate {
                        path: path.clone(),
                        source,
                    }
                }
            })?;
        created.push(path.clone());
    }
    let path = &args.admin_kubeconfig;
    let contents = zeroize::Zeroizing::new(server.admin_kubeconfig_yaml());
    files::write_private(path, contents.as_bytes(), existing).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            exists("--admin-kubeconfig", path)
        } else {
            CliError::AdminKubeconfig {
                path: path.clone(),
                source,
            }
        }
    })?;
    created.push(path.clone());
    print(&format!(
        "loopback API server (a test double, not a control plane) at {url}\n\
         admin kubeconfig: {path} (it holds the admin token; removed on exit)\n\
         try: kubectl --kubeconfig {path} get secrets -n kube-system\n",
        url = server.url(),
        path = path.display(),
    ))?;
    if args.add_auth {
        print(&format!(
            "Service proxy: add-auth=true adds an ES256 token for the user and the Service \
             (issuer {issuer}, lifetime {ttl:?}, {n} requests per {per:?} per user)\n",
            issuer = args.add_auth_issuer,
            ttl = args.add_auth_token_ttl,
            n = args.add_auth_rate.0,
            per = args.add_auth_rate.1,
        ))?;
    }
    if let Some(cert) = &args.serving_certificate {
        print(&format!(
            "serving certificate: {} (a forward proxy's --public-key-file, with --algorithm \
             ES256; removed on exit)\n",
            cert.display()
        ))?;
    }
    print("Ctrl-C stops it.\n")?;
    stop.await;
    Ok(())
}

/// `serve-loopback`'s refusal of a file it did not write.
fn exists(flag: &'static str, path: &Path) -> CliError {
    CliError::Exists {
        flag,
        path: path.to_owned(),
        command: "serve-loopback",
    }
}

/// `demo`: start the double, then run `token create`, `pin`, `token list`, `join`, kubectl,
/// three refused joins and `token delete`, each as the real process, printing what it runs
/// and what it prints; then add-on authentication through `kubectl proxy` and `forward-proxy`.
pub(crate) async fn run(args: &DemoArgs) -> Result<(), CliError> {
    let temp;
    let dir: PathBuf = match &args.dir {
        Some(d) => {
            // The demo's files have fixed names: a directory that holds files already could
            // hold one of them, and the demo replaces none.
            match std::fs::read_dir(d) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        return Err(CliError::Usage(format!(
                            "--dir {}: the directory is not empty; the demo writes admin.conf, \
                             ca.pem, its kubeconfigs and pki/ there and replaces no file: give \
                             a new or empty directory",
                            d.display()
                        )));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(CliError::Usage(format!("--dir {}: {e}", d.display())));
                }
            }
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::Usage(format!("--dir {}: {e}", d.display())))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("k8s-bootstrap-demo-")
                .tempdir()
                .map_err(|e| demo_err("creating a temporary directory", e))?;
            temp.path().to_owned()
        }
    };
    let me = std::env::current_exe().map_err(|e| demo_err("finding this program", e))?;
    let demo = Demo {
        me,
        kubectl: args.kubectl.clone(),
    };

    heading("1. the control plane: a loopback API server (a test double for kube-apiserver)");
    // The add-on runs on 127.0.0.1, which kube-apiserver refuses in an EndpointSlice.
    let server = LoopbackApiServer::builder()
        .dangerous_allow_loopback_endpoints(true)
        .start()
        .await?;
    // The Service proxy's add-auth layer signs with the serving certificate's key (step 9).
    addon_auth::install_layer(&server, &addon_auth::Settings::demo())
        .map_err(|e| CliError::Demo(format!("the add-auth layer: {e}")))?;
    let admin = dir.join("admin.conf");
    let ca = dir.join("ca.pem");
    write_private(&admin, server.admin_kubeconfig_yaml())?;
    files::write_readable(&ca, server.ca_pem().as_bytes(), Existing::Refuse)
        .map_err(|e| demo_err("writing ca.pem", e))?;
    say(&format!(
        "serving {} with cluster-info in kube-public and the bootstrap signer running\n\
         admin kubeconfig {}, cluster CA {}",
        server.url(),
        admin.display(),
        ca.display()
    ));
    let admin_flag = admin.display().to_string();

    heading("2. an administrator creates a bootstrap token (kubeadm token create)");
    let out = demo
        .cli(&[
            "token",
            "create",
            "--kubeconfig",
            &admin_flag,
            "--description",
            "k8s-bootstrap demo",
            "--print-join-command",
        ])
        .await?;
    let join = JoinLine::parse(&out)?;

    heading(
        "3. the CA pin in the join command is the cluster CA's public key (kubeadm's pubkeypin)",
    );
    let pin_out = demo.cli(&["pin", &ca.display().to_string()]).await?;
    if pin_out.trim() != join.hash {
        return Err(CliError::Demo(format!(
            "pin printed {} but the join command carries {}",
            pin_out.trim(),
            join.hash
        )));
    }
    say("same hash as in the join command");
    demo.cli(&["token", "list", "--kubeconfig", &admin_flag])
        .await?;

    heading(
        "4. the node joins: token discovery with CA pinning, its TLS-bootstrap kubeconfig, then \
         its certificate signing request, approved and signed by the control plane",
    );
    let bootstrap = dir.join("bootstrap-kubelet.conf");
    let bootstrap_flag = bootstrap.display().to_string();
    let kubelet = dir.join("kubelet.conf");
    let kubelet_flag = kubelet.display().to_string();
    let cert_dir = dir.join("pki").display().to_string();
    demo.cli(&[
        "join",
        &join.endpoint,
        "--token",
        &join.token,
        "--discovery-token-ca-cert-hash",
        &join.hash,
        "--tls-bootstrap-kubeconfig",
        &bootstrap_flag,
        "--node-name",
        DEMO_NODE,
        "--cert-dir",
        &cert_dir,
        "--kubelet-kubeconfig",
        &kubelet_flag,
        "--tls-bootstrap-timeout",
        "30s",
    ])
    .await?;

    heading(
        "5. kubectl uses the written kubeconfig; the API server authenticates the bootstrap token",
    );
    let ran = demo
        .kubectl(&[
            "--kubeconfig",
            &bootstrap_flag,
            "get",
            "configmap",
            "cluster-info",
            "-n",
            "kube-public",
        ])
        .await?;
    if ran {
        let user = server
            .requests()
            .into_iter()
            .rev()
            .find(|r| r.path.ends_with("/configmaps/cluster-info") && r.user.is_some())
            .and_then(|r| r.user);
        match user {
            Some(user) => say(&format!(
                "the API server authenticated that request as {user}"
            )),
            None => {
                return Err(CliError::Demo(
                    "kubectl's request was not authenticated".to_owned(),
                ));
            }
        }
        demo.kubectl(&[
            "--kubeconfig",
            &admin_flag,
            "get",
            "secrets",
            "-n",
            "kube-system",
        ])
        .await?;
    }

    heading(
        "6. the node authenticates with its own certificate: the API server sees system:node:<name>",
    );
    if demo
        .kubectl(&["--kubeconfig", &kubelet_flag, "auth", "whoami"])
        .await?
    {
        demo.kubectl(&["--kubeconfig", &admin_flag, "get", "csr"])
            .await?;
    }
    let user = server
        .requests()
        .into_iter()
        .rev()
        .find_map(|r| r.user.filter(|u| u.starts_with("system:node:")));
    match user {
        Some(user) => say(&format!("the API server authenticated the node as {user}")),
        None if demo.kubectl_missing().await => {}
        None => {
            return Err(CliError::Demo(
                "no request was authenticated with the node's certificate".to_owned(),
            ));
        }
    }

    heading("7. what discovery refuses");
    let wrong_pin = format!("sha256:{}", "0".repeat(64));
    demo.refused(
        "a CA pin that is not the cluster's",
        &[
            "join",
            &join.endpoint,
            "--token",
            &join.token,
            "--discovery-token-ca-cert-hash",
            &wrong_pin,
        ],
        &dir,
    )
    .await?;
    let wrong_secret = join.with_other_secret();
    demo.refused(
        "a token whose secret is wrong",
        &[
            "join",
            &join.endpoint,
            "--token",
            &wrong_secret,
            "--discovery-token-ca-cert-hash",
            &join.hash,
        ],
        &dir,
    )
    .await?;
    demo.refused(
        "no CA pin and no --discovery-token-unsafe-skip-ca-verification",
        &["join", &join.endpoint, "--token", &join.token],
        &dir,
    )
    .await?;

    heading("8. the administrator deletes the token; the signer removes its signature");
    demo.cli(&["token", "delete", "--kubeconfig", &admin_flag, join.id()])
        .await?;
    demo.refused(
        "the deleted token (waiting 2s for a signature that will not come)",
        &[
            "join",
            &join.endpoint,
            "--token",
            &join.token,
            "--discovery-token-ca-cert-hash",
            &join.hash,
            "--discovery-timeout",
            "2s",
        ],
        &dir,
    )
    .await?;

    heading(
        "9. add-on authentication: kubectl proxy -> the API server's Service proxy mints a token \
         for the user -> k8s-bootstrap forward-proxy verifies it -> the add-on gets \
         X-Authenticated-User",
    );
    addon_auth::run(&demo, &server, &dir, &admin).await?;

    server.shutdown().await;
    heading("done");
    if args.dir.is_some() {
        say(&format!(
            "the files are in {}; the node's kubeconfig is {}",
            dir.display(),
            kubelet.display()
        ));
    } else {
        say("the temporary files are removed (--dir keeps them)");
    }
    Ok(())
}

/// The node the demo joins.
const DEMO_NODE: &str = "worker-1";

struct Demo {
    me: PathBuf,
    kubectl: PathBuf,
}

impl Demo {
    /// Runs this program with `args`, printing the command line (token secrets masked) and its
    /// output; a failure ends the demo.
    async fn cli(&self, args: &[&str]) -> Result<String, CliError> {
        let shown = format!("k8s-bootstrap {}", mask(args));
        let out = run_process(&self.me, args, &shown).await?;
        if !out.status.success() {
            return Err(CliError::Demo(format!("`{shown}` failed")));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs this program, expecting it to fail; its error line is shown.
    async fn refused(&self, what: &str, args: &[&str], dir: &Path) -> Result<(), CliError> {
        let out_file = dir.join("refused.conf");
        let out_flag = out_file.display().to_string();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--tls-bootstrap-kubeconfig", &out_flag]);
        if !args.contains(&"--discovery-timeout") {
            all.extend(["--discovery-timeout", "5s"]);
        }
        say(&format!("{what}:"));
        let shown = format!("k8s-bootstrap {}", mask(args));
        let out = run_process(&self.me, &all, &shown).await?;
        if out.status.success() || out_file.exists() {
            return Err(CliError::Demo(format!("`{shown}` was not refused")));
        }
        say("  refused, and no kubeconfig was written");
        Ok(())
    }

    /// Whether kubectl is missing (its steps were skipped).
    async fn kubectl_missing(&self) -> bool {
        tokio::process::Command::new(&self.kubectl)
            .arg("version")
            .arg("--client")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_err()
    }

    /// Runs kubectl; `Ok(false)` when it is not installed (the step is skipped, and said so).
    async fn kubectl(&self, args: &[&str]) -> Result<bool, CliError> {
        let shown = format!("kubectl {}", shell_words(args));
        match run_process(&self.kubectl, args, &shown).await {
            Ok(out) if out.status.success() => Ok(true),
            Ok(_) => Err(CliError::Demo(format!("`{shown}` failed"))),
            Err(CliError::Demo(e)) if e.contains("not found") => {
                say(&format!(
                    "kubectl was not found ({}); skipping this step",
                    self.kubectl.display()
                ));
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// Runs `program args`, echoing `shown` and then its stdout and stderr, indented.
async fn run_process(
    program: &Path,
    args: &[&str],
    shown: &str,
) -> Result<std::process::Output, CliError> {
    println!("$ {shown}");
    let out = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .map_err(|_| CliError::Demo(format!("`{shown}` took longer than 60s")))?
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                CliError::Demo(format!("{} not found", program.display()))
            } else {
                demo_err(&format!("running {}", program.display()), e)
            }
        })?;
    // Progress and errors (stderr) come before the result (stdout), as a terminal shows them.
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        println!("  {line}");
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        println!("  {line}");
    }
    Ok(out)
}

/// The command line, with the secret half of any bootstrap token replaced by `<secret>`, each
/// word quoted as a shell needs it ([`shell_words`]).
fn mask(args: &[&str]) -> String {
    let masked: Vec<String> = args
        .iter()
        .map(
            |a| match a.parse::<k8s_bootstrap::bootstrap_token::BootstrapToken>() {
                Ok(t) => format!("{}.<secret>", t.id()),
                Err(_) => (*a).to_owned(),
            },
        )
        .collect();
    // The mask's `<` and `>` would be quoted: quote the words, then put the masks in plain.
    masked
        .iter()
        .map(|w| {
            if w.ends_with(".<secret>") {
                w.clone()
            } else {
                shell_word(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `words` as a shell command line: each word as [`shell_word`] writes it, joined by spaces.
pub(crate) fn shell_words<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| shell_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word as a POSIX shell reads it back: as is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,^".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The parameters of the printed `k8s-bootstrap join <endpoint> --token <t>
/// --discovery-token-ca-cert-hash <h>`.
struct JoinLine {
    endpoint: String,
    token: String,
    hash: String,
}

impl JoinLine {
    fn parse(out: &str) -> Result<JoinLine, CliError> {
        let words: Vec<&str> = out.split_whitespace().collect();
        let after = |flag: &str| {
            words
                .iter()
                .position(|w| *w == flag)
                .and_then(|i| words.get(i.saturating_add(1)))
                .map(|w| (*w).to_owned())
        };
        let bad = || CliError::Demo("token create did not print a join command".to_owned());
        if words.get(..2) != Some(&["k8s-bootstrap", "join"][..]) {
            return Err(bad());
        }
        Ok(JoinLine {
            endpoint: words.get(2).map(|w| (*w).to_owned()).ok_or_else(bad)?,
            token: after("--token").ok_or_else(bad)?,
            hash: after("--discovery-token-ca-cert-hash").ok_or_else(bad)?,
        })
    }

    fn id(&self) -> &str {
        self.token.split('.').next().unwrap_or_default()
    }

    /// The same token ID with a different secret.
    fn with_other_secret(&self) -> String {
        let secret = self.token.split('.').nth(1).unwrap_or_default();
        let other = if secret == "0000000000000000" {
            "1111111111111111"
        } else {
            "0000000000000000"
        };
        format!("{}.{other}", self.id())
    }
}

/// Writes a file that holds a secret: 0600, whole, and only where no file is.
fn write_private(path: &Path, contents: String) -> Result<(), CliError> {
    let contents = zeroize::Zeroizing::new(contents);
    files::write_private(path, contents.as_bytes(), Existing::Refuse)
        .map_err(|e| demo_err(&format!("writing {}", path.display()), e))
}

fn heading(text: &str) {
    println!("\n== {text}");
}

fn say(text: &str) {
    println!("{text}");
}

fn demo_err(what: &str, e: std::io::Error) -> CliError {
    CliError::Demo(format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_quoted_as_a_shell_reads_them() {
        assert_eq!(
            mask(&["token", "create", "--description", "k8s-bootstrap demo"]),
            "token create --description 'k8s-bootstrap demo'"
        );
        assert_eq!(
            mask(&["join", "--token", "abcdef.0123456789abcdef", "--x=it's", ""]),
            r"join --token abcdef.<secret> '--x=it'\''s' ''"
        );
        assert_eq!(
            shell_words(&["get", "--raw", "/api/v1?x=1&y"]),
            "get --raw '/api/v1?x=1&y'"
        );
    }
}
