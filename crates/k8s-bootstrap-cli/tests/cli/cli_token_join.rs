//! The `k8s-bootstrap` binary against the loopback API server: token create/list/delete,
//! `--print-join-command` → `join` → `kubectl` with the written kubeconfig, `pin` against
//! openssl, exit codes.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "test helpers outside #[test] functions"
)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use loopback_apiserver::LoopbackApiServer;
use tokio::process::Command;

use crate::support::Refusing;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const NO_PINS: &str =
    "no --discovery-token-ca-cert-hash: using token-based discovery without a CA pin can be unsafe";

struct Env {
    server: LoopbackApiServer,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Env {
    async fn start() -> Env {
        let server = LoopbackApiServer::builder().start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("admin.conf");
        std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();
        Env {
            server,
            dir,
            kubeconfig,
        }
    }

    /// The binary (with `--kubeconfig admin.conf` for the token commands), a clean environment
    /// (no KUBECONFIG, HOME in the temporary directory).
    async fn run(&self, args: &[&str]) -> Output {
        // Only the commands that take a kubeconfig get one: `join` and `pin` refuse it.
        let mut all = Vec::new();
        let mut words = args.iter().filter(|a| !a.starts_with('-'));
        if words.next() == Some(&"token") && words.next() != Some(&"generate") {
            all.extend(["--kubeconfig", self.kubeconfig.to_str().unwrap()]);
        }
        all.extend_from_slice(args);
        run_bin(&all, self.dir.path(), None).await
    }
}

async fn run_bin(args: &[&str], home: &Path, kubeconfig_env: Option<&str>) -> Output {
    run_bin_env(args, home, kubeconfig_env, &[]).await
}

/// [`run_bin`] with more environment variables.
async fn run_bin_env(
    args: &[&str],
    home: &Path,
    kubeconfig_env: Option<&str>,
    vars: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env_remove("K8S_BOOTSTRAP_TOKEN")
        .envs(vars.iter().copied())
        .env("HOME", home)
        .current_dir(home);
    if let Some(k) = kubeconfig_env {
        cmd.env("KUBECONFIG", k);
    }
    cmd.output().await.unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// The pin of the first certificate in `pem_path` as openssl computes it.
async fn openssl_pin(pem_path: &Path) -> String {
    let script = format!(
        "openssl x509 -pubkey -noout -in '{}' | openssl pkey -pubin -outform der | sha256sum",
        pem_path.display()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let hex = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", hex.split_whitespace().next().unwrap())
}

#[tokio::test]
async fn print_join_command_then_join_then_kubectl() {
    let env = Env::start().await;
    let out = env.run(&["token", "create", "--print-join-command"]).await;
    assert_ok(&out);
    let line = stdout(&out);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(!line.ends_with(' '), "{line:?}");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 7, "{line}");
    assert_eq!(&words[..2], ["k8s-bootstrap", "join"]);
    let endpoint = words[2];
    assert_eq!(format!("https://{endpoint}"), env.server.url());
    assert_eq!(words[3], "--token");
    let token = words[4];
    assert_eq!(words[5], "--discovery-token-ca-cert-hash");
    let hash = words[6];

    // The hash is the CA's pin as openssl computes it.
    let ca = env.dir.path().join("ca.pem");
    std::fs::write(&ca, env.server.ca_pem()).unwrap();
    assert_eq!(hash, openssl_pin(&ca).await);

    // The token is listed.
    let out = env.run(&["token", "list"]).await;
    assert_ok(&out);
    assert!(stdout(&out).lines().nth(1).unwrap().starts_with(token));

    // The printed command itself, run as printed (only where to write and how long to wait
    // added), writes a working TLS-bootstrap kubeconfig: the printed flags are join's.
    let written = env.dir.path().join("bootstrap-kubelet.conf");
    let mut printed = words[1..].to_vec();
    printed.extend([
        "--tls-bootstrap-kubeconfig",
        written.to_str().unwrap(),
        "--discovery-timeout",
        "1m",
    ]);
    let out = run_bin(&printed, env.dir.path(), None).await;
    assert_ok(&out);
    assert!(
        stdout(&out).contains(written.to_str().unwrap()),
        "{}",
        stdout(&out)
    );
    assert!(
        !stdout(&out).contains(token),
        "the join output must not print the token"
    );
    assert!(!stderr(&out).contains(token));
    let mode = std::fs::metadata(&written).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains(&format!("token: {token}")), "{text}");
    assert!(
        text.contains(&format!("server: {}", env.server.url())),
        "{text}"
    );

    let out = Command::new("kubectl")
        .args([
            "--kubeconfig",
            written.to_str().unwrap(),
            "get",
            "--raw",
            "/api/v1/namespaces/kube-public/configmaps/cluster-info",
        ])
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    assert_ok(&out);
    let cm: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cm["metadata"]["name"], "cluster-info");
    let id = token.split('.').next().unwrap();
    assert!(
        cm["data"][format!("jws-kubeconfig-{id}")].is_string(),
        "{cm}"
    );
}

#[tokio::test]
async fn join_with_unsafe_skip_ca_verification() {
    let env = Env::start().await;
    let out = env
        .run(&["token", "create", "abcdef.0123456789abcdef"])
        .await;
    assert_ok(&out);
    assert_eq!(stdout(&out), "abcdef.0123456789abcdef\n");
    let endpoint = env.server.url().trim_start_matches("https://").to_owned();
    let out = env
        .run(&[
            "join",
            &endpoint,
            "--token",
            "abcdef.0123456789abcdef",
            "--discovery-token-unsafe-skip-ca-verification",
            "--discovery-timeout",
            "1m",
        ])
        .await;
    assert_ok(&out);
    assert!(
        stderr(&out).contains(
            "warning: --discovery-token-unsafe-skip-ca-verification: the cluster CA is not pinned"
        ),
        "{}",
        stderr(&out)
    );
    // The default path, in the working directory.
    let written = env.dir.path().join("bootstrap-kubelet.conf");
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("token: abcdef.0123456789abcdef"));
}

/// The endpoint may be written as a URL (`https://host:port`, a trailing slash allowed), as
/// kubeadm users write it; another scheme, a path, no endpoint at all and a discovery file that
/// cannot be read are usage errors (exit 2) that say what to give, naming the flag, the path and
/// the OS reason, before any request.
#[tokio::test]
async fn join_endpoints_as_urls_and_flag_errors_in_the_users_words() {
    let env = Env::start().await;
    assert_ok(
        &env.run(&["token", "create", "abcdef.0123456789abcdef"])
            .await,
    );
    let endpoint = env.server.url().trim_start_matches("https://").to_owned();
    let out = env
        .run(&[
            "join",
            &format!("https://{endpoint}/"),
            "--token",
            "abcdef.0123456789abcdef",
            "--discovery-token-unsafe-skip-ca-verification",
            "--tls-bootstrap-kubeconfig",
            "from-url.conf",
        ])
        .await;
    assert_ok(&out);
    assert!(env.dir.path().join("from-url.conf").exists());
    let fetches = || {
        env.server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/configmaps/cluster-info"))
            .count()
    };
    let fetched = fetches();
    let token = [
        "--token",
        "abcdef.0123456789abcdef",
        "--discovery-token-unsafe-skip-ca-verification",
    ];
    for (args, expected) in [
        (
            vec!["join"],
            "no API server endpoint: give it as the first argument (host:port",
        ),
        (
            vec!["join", "http://10.0.0.1:6443"],
            "API server endpoint \"http://10.0.0.1:6443\": discovery uses HTTPS, not \"http\": give host:port",
        ),
        (
            vec!["join", "https://10.0.0.1:6443/api"],
            "API server endpoint \"https://10.0.0.1:6443/api\": give host:port (or https://host:port), without a path",
        ),
        (
            vec!["join", "10.0.0.1"],
            "API server endpoint \"10.0.0.1\": ",
        ),
    ] {
        let mut all = args.clone();
        all.extend_from_slice(&token);
        let out = env.run(&all).await;
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with(&format!("error: {expected}")),
            "{}",
            stderr(&out)
        );
    }
    // What the flags alone show is reported before discovery runs: nothing is fetched.
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let node = ["--node-name", "worker-1"];
    for (extra, expected) in [
        (
            vec!["--node-name", "BAD_NAME"],
            "--node-name \"BAD_NAME\": invalid node name: ".to_owned(),
        ),
        (
            vec!["--tls-bootstrap-kubeconfig", "/nonexistent/x.conf"],
            "--tls-bootstrap-kubeconfig /nonexistent/x.conf: cannot write in /nonexistent: No such file or directory (os error 2)".to_owned(),
        ),
        (
            [node.as_slice(), &["--kubelet-kubeconfig", "/nonexistent/kubelet.conf"]].concat(),
            "--kubelet-kubeconfig /nonexistent/kubelet.conf: cannot write in /nonexistent: No such file or directory (os error 2)".to_owned(),
        ),
        (
            [node.as_slice(), &["--cert-dir", &format!("{}/pki", file.display())]].concat(),
            format!("--cert-dir {0}/pki: {0} is not a directory", file.display()),
        ),
    ] {
        let mut all = vec!["join", endpoint.as_str()];
        all.extend_from_slice(&token);
        all.extend_from_slice(&extra);
        let out = env.run(&all).await;
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).starts_with(&format!("error: {expected}")), "{}", stderr(&out));
    }
    let out = env
        .run(&[
            "join",
            "--discovery-file",
            "/nonexistent/cluster.conf",
            "--tls-bootstrap-token",
            "abcdef.0123456789abcdef",
        ])
        .await;
    assert_eq!(
        stderr(&out),
        "error: --discovery-file /nonexistent/cluster.conf: No such file or directory (os error 2) \
         (give a kubeconfig file or an https:// URL)\n"
    );
    // Nothing was asked of the server by the refused joins.
    assert_eq!(fetches(), fetched);
}

/// `serve-loopback` writes its admin kubeconfig (0600), stops on SIGTERM with exit 0 and removes
/// it (its token dies with the server); a path it cannot write is an error naming the flag, the
/// path and the OS reason.
#[tokio::test]
async fn serve_loopback_removes_its_admin_kubeconfig_on_exit() {
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.conf");
    let mut child = Command::new(BIN)
        .args([
            "serve-loopback",
            "--admin-kubeconfig",
            admin.to_str().unwrap(),
        ])
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !admin.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no admin kubeconfig"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mode = std::fs::metadata(&admin).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("serve-loopback exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!admin.exists(), "the admin kubeconfig outlived the server");

    let out = run_bin(
        &[
            "serve-loopback",
            "--admin-kubeconfig",
            dir.path().to_str().unwrap(),
        ],
        dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "error: --admin-kubeconfig {}: a directory",
            dir.path().display()
        )),
        "{err}"
    );
}

/// While discovery retries, each progress line says why the last attempt failed, as kubeadm
/// logs each failed attempt: nothing listening (connection refused), and a server whose
/// cluster-info has no signature for the token yet. The token's secret is never in them.
#[tokio::test]
async fn join_progress_lines_say_why_the_last_attempt_failed() {
    let env = Env::start().await;
    // Refused while the test runs: no other process can take the port and answer.
    let refusing = Refusing::bind();
    let closed = refusing.addr().to_string();
    let endpoint = env.server.url().trim_start_matches("https://").to_owned();
    // Attempts every 5 s (kubeadm's interval) until the 17 s timeout: the last at 15 s, so the
    // progress line at 10 s (every 10 s without a terminal) comes while discovery still runs.
    let join = |target: String| {
        let home = env.dir.path().to_owned();
        async move {
            run_bin(
                &[
                    "join",
                    &target,
                    "--token",
                    "zzzzzz.0123456789abcdef",
                    "--discovery-token-unsafe-skip-ca-verification",
                    "--discovery-timeout",
                    "17s",
                    "--tls-bootstrap-kubeconfig",
                    "never-written.conf",
                ],
                &home,
                None,
            )
            .await
        }
    };
    let (refused, unsigned) = tokio::join!(join(closed), join(endpoint));
    for (out, why) in [
        (&refused, "failed to request the cluster-info ConfigMap"),
        (&unsigned, "zzzzzz"),
    ] {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("still waiting (10s): "))
            .unwrap_or_else(|| panic!("no progress line with a reason:\n{err}"));
        assert!(line.contains(why), "{line}");
        assert!(!err.contains("0123456789abcdef"), "{err}");
    }
    // No signature for the token: what that may mean, in the progress line itself.
    let err = stderr(&unsigned);
    let line = err
        .lines()
        .find(|l| l.starts_with("still waiting (10s): "))
        .unwrap();
    assert!(
        line.contains(
            "the token may have been deleted, have expired or be mistyped, or the cluster's \
             bootstrap signer has not signed for it yet"
        ),
        "{line}"
    );
    assert!(
        stderr(&refused)
            .to_lowercase()
            .contains("connection refused"),
        "{}",
        stderr(&refused)
    );
    assert!(!env.dir.path().join("never-written.conf").exists());
}

/// `--join-command-format kubeadm` prints kubeadm's line (without the trailing space its
/// template leaves) with the same endpoint, flags and pin as this tool's line; its arguments
/// after `kubeadm` run as `k8s-bootstrap join` too.
#[tokio::test]
async fn print_join_command_in_kubeadms_format() {
    let env = Env::start().await;
    let out = env.run(&["token", "create", "--print-join-command"]).await;
    assert_ok(&out);
    let ours = stdout(&out);
    let ours: Vec<&str> = ours.split_whitespace().collect();
    let out = env
        .run(&[
            "token",
            "create",
            "--print-join-command",
            "--join-command-format",
            "kubeadm",
        ])
        .await;
    assert_ok(&out);
    let line = stdout(&out);
    let line = line.strip_suffix('\n').unwrap();
    assert!(!line.ends_with(' '), "{line:?}");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), ours.len(), "{line}");
    assert_eq!(&words[..2], ["kubeadm", "join"]);
    for i in [2, 3, 5, 6] {
        assert_eq!(words[i], ours[i], "{line}");
    }
    assert_ne!(words[4], ours[4], "two tokens were created");

    let written = env.dir.path().join("kubeadm-form.conf");
    let mut args = words[1..].to_vec();
    args.extend([
        "--tls-bootstrap-kubeconfig",
        written.to_str().unwrap(),
        "--discovery-timeout",
        "1m",
    ]);
    let out = run_bin(&args, env.dir.path(), None).await;
    assert_ok(&out);
    assert!(written.exists());
}

/// The token from `--token-file` (a trailing newline ignored) or `$K8S_BOOTSTRAP_TOKEN`
/// instead of the command line; two sources at once are a usage error; a file that cannot be
/// read or holds no token is an error naming the flag, the path and the reason. The token never
/// appears in the output, help included.
#[tokio::test]
async fn join_reads_the_token_from_a_file_or_the_environment() {
    let env = Env::start().await;
    let out = env.run(&["token", "create", "--print-join-command"]).await;
    assert_ok(&out);
    let line = stdout(&out);
    let words: Vec<&str> = line.split_whitespace().collect();
    let (endpoint, token, hash) = (words[2], words[4], words[6]);
    let home = env.dir.path();
    let no_token = |out: &Output| {
        assert!(!stdout(out).contains(token), "{}", stdout(out));
        assert!(!stderr(out).contains(token), "{}", stderr(out));
        let secret = token.split('.').nth(1).unwrap();
        assert!(!stderr(out).contains(secret), "{}", stderr(out));
    };
    let join = |written: &'static str, extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "join",
            endpoint,
            "--discovery-token-ca-cert-hash",
            hash,
            "--tls-bootstrap-kubeconfig",
            written,
            "--discovery-timeout",
            "1m",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |args: Vec<String>, vars: Vec<(&'static str, String)>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_bin_env(&args, home, None, &vars).await
    };

    // A file with a trailing newline (as `echo` writes it).
    let file = home.join("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let out = run(
        join("from-file.conf", &["--token-file", file.to_str().unwrap()]),
        vec![],
    )
    .await;
    assert_ok(&out);
    no_token(&out);
    let text = std::fs::read_to_string(home.join("from-file.conf")).unwrap();
    assert!(text.contains(&format!("token: {token}\n")), "{text}");
    // CRLF too.
    std::fs::write(&file, format!("{token}\r\n")).unwrap();
    let out = run(
        join("from-crlf.conf", &["--token-file", file.to_str().unwrap()]),
        vec![],
    )
    .await;
    assert_ok(&out);

    // The environment.
    let out = run(
        join("from-env.conf", &[]),
        vec![("K8S_BOOTSTRAP_TOKEN", token.to_owned())],
    )
    .await;
    assert_ok(&out);
    no_token(&out);
    let text = std::fs::read_to_string(home.join("from-env.conf")).unwrap();
    assert!(text.contains(&format!("token: {token}\n")), "{text}");

    // Two sources: a usage error, exit 2, naming exactly the sources given, the token not
    // echoed. The variable with --token was once silently overridden by the flag (exit 0).
    let bad = "zzzzzz.zzzzzzzzzzzzzzzz".to_owned();
    for (extra, vars, named) in [
        (
            vec!["--token", token, "--token-file", file.to_str().unwrap()],
            vec![],
            "error: --token and --token-file are both set; give the token in one of them\n",
        ),
        (
            vec!["--token-file", file.to_str().unwrap()],
            vec![("K8S_BOOTSTRAP_TOKEN", token.to_owned())],
            "error: --token-file and the environment variable K8S_BOOTSTRAP_TOKEN are both set; \
             give the token in one of them\n",
        ),
        (
            vec!["--token", token],
            vec![("K8S_BOOTSTRAP_TOKEN", bad.clone())],
            "error: --token and the environment variable K8S_BOOTSTRAP_TOKEN are both set; give \
             the token in one of them\n",
        ),
        (
            vec!["--token", token, "--token-file", file.to_str().unwrap()],
            vec![("K8S_BOOTSTRAP_TOKEN", bad.clone())],
            "error: --token, --token-file and the environment variable K8S_BOOTSTRAP_TOKEN are \
             all set; give the token in one of them\n",
        ),
    ] {
        let out = run(join("never.conf", &extra), vars).await;
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(stderr(&out), named);
        no_token(&out);
    }
    assert!(!home.join("never.conf").exists());

    // Help shows the variable, never its value.
    let out = run(
        vec!["join".to_owned(), "--help".to_owned()],
        vec![("K8S_BOOTSTRAP_TOKEN", token.to_owned())],
    )
    .await;
    assert_ok(&out);
    assert!(
        stdout(&out).contains("K8S_BOOTSTRAP_TOKEN"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("--token-file"), "{}", stdout(&out));
    no_token(&out);

    // Files that hold no token: exit 1, the flag, the path and the reason named.
    let missing = home.join("missing");
    let large = home.join("large");
    std::fs::write(&large, format!("{token}\n").repeat(1000)).unwrap();
    let wrong = home.join("wrong");
    let wrong_token = format!("{}X", &token[..22]);
    std::fs::write(&wrong, format!("{wrong_token}\n")).unwrap();
    let unreadable = home.join("dir");
    std::fs::create_dir(&unreadable).unwrap();
    for (path, reason, code) in [
        (&missing, "No such file or directory", 1),
        (&large, "larger than 4096 bytes", 1),
        (&unreadable, "Is a directory", 1),
        (
            &wrong,
            "--token-file: a bootstrap token is 6 characters of [a-z0-9], a dot, and 16 \
             characters of [a-z0-9], as 07401b.f395accd246ae52d",
            2,
        ),
    ] {
        let out = run(
            join("never.conf", &["--token-file", path.to_str().unwrap()]),
            vec![],
        )
        .await;
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(reason), "{err}");
        if path != &wrong {
            assert!(
                err.starts_with(&format!("error: --token-file {}: ", path.display())),
                "{err}"
            );
        }
        assert!(!err.contains(&wrong_token), "{err}");
        no_token(&out);
    }
    assert!(!home.join("never.conf").exists());
}

/// No pin: a usage error naming the flags that give one or skip it (no kubeadm config file).
#[tokio::test]
async fn join_without_ca_hash_fails_naming_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bin(
        &[
            "join",
            "127.0.0.1:6443",
            "--token",
            "abcdef.0123456789abcdef",
        ],
        dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(NO_PINS), "{err}");
    assert!(
        err.contains("or --discovery-token-unsafe-skip-ca-verification"),
        "{err}"
    );
    assert!(!err.contains("config file"), "{err}");
    assert!(!err.contains("0123456789abcdef"), "{err}");
    assert!(!dir.path().join("bootstrap-kubelet.conf").exists());

    // A malformed hash is kubeadm's hash error, also a usage error.
    let out = run_bin(
        &[
            "join",
            "127.0.0.1:6443",
            "--token",
            "abcdef.0123456789abcdef",
            "--discovery-token-ca-cert-hash",
            "sha256:abcd",
        ],
        dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "--discovery-token-ca-cert-hash: invalid discovery token CA certificate hash"
        ),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn token_create_list_delete_generate() {
    let env = Env::start().await;
    let out = env
        .run(&[
            "token",
            "create",
            "abcdef.0123456789abcdef",
            "--ttl",
            "2h",
            "--description",
            "cli test",
        ])
        .await;
    assert_ok(&out);
    assert_eq!(stdout(&out), "abcdef.0123456789abcdef\n");

    // The same token again: exit 1, kubeadm's message.
    let out = env
        .run(&["token", "create", "abcdef.0123456789abcdef"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: a token with id \"abcdef\" already exists\n"
    );

    let out = env.run(&["token", "list"]).await;
    assert_ok(&out);
    let table = stdout(&out);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "TOKEN",
            "TTL",
            "EXPIRES",
            "USAGES",
            "DESCRIPTION",
            "EXTRA",
            "GROUPS"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "abcdef.0123456789abcdef");
    assert!(row[1] == "1h" || row[1] == "2h", "{table}");
    assert_eq!(row[3], "authentication,signing");
    assert_eq!(&row[4..6], ["cli", "test"]);
    assert_eq!(row[6], "system:bootstrappers:kubeadm:default-node-token");

    let out = env.run(&["token", "list", "-o", "json"]).await;
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["kind"], "BootstrapToken");
    assert_eq!(v["apiVersion"], "output.kubeadm.k8s.io/v1alpha3");
    assert_eq!(v["token"], "abcdef.0123456789abcdef");
    assert_eq!(v["description"], "cli test");
    assert_eq!(
        v["usages"],
        serde_json::json!(["authentication", "signing"])
    );

    let out = env.run(&["token", "list", "-o", "yaml"]).await;
    assert_ok(&out);
    assert!(
        stdout(&out).contains("token: \"abcdef.0123456789abcdef\"\n"),
        "{}",
        stdout(&out)
    );

    // delete by whole token and by ID (a second token), then NotFound.
    let out = env
        .run(&["token", "create", "123456.aabbccddeeffgghh", "--ttl", "0"])
        .await;
    assert_ok(&out);
    // A token that never expires (`<forever>`, `<never>`) lines up with one that does: every
    // column starts where its header does, on every row.
    let out = env.run(&["token", "list"]).await;
    assert_ok(&out);
    let table = stdout(&out);
    assert!(table.contains("<never>"), "{table}");
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    let starts = |line: &str| -> Vec<usize> {
        let bytes = line.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i] != b' ' && (i == 0 || bytes[i - 1] == b' '))
            .collect()
    };
    // "EXTRA GROUPS" is one header of two words.
    let mut columns = starts(header);
    columns.pop();
    for row in lines {
        let mut cells = starts(row);
        // The descriptions are two words ("cli test") or `<none>`.
        if row.contains("cli test") {
            cells.remove(5);
        }
        assert_eq!(cells, columns, "{table}");
    }
    let out = env
        .run(&["token", "delete", "abcdef.0123456789abcdef", "123456"])
        .await;
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "bootstrap token \"abcdef\" deleted\nbootstrap token \"123456\" deleted\n"
    );
    let out = env.run(&["token", "delete", "abcdef"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: failed to delete bootstrap token \"abcdef\": not found"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);

    // A malformed delete argument: a usage error saying the forms in words, with examples
    // (not the regular expressions), the argument not echoed.
    let out = env.run(&["token", "delete", "abcdef.secretsecret"]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("as 07401b.f395accd246ae52d"), "{err}");
    assert!(!err.contains("\\A"), "{err}");
    assert!(!err.contains("secretsecret"), "{err}");

    // The list is now empty: the header alone.
    let out = env.run(&["token", "list"]).await;
    assert_ok(&out);
    assert_eq!(stdout(&out).lines().count(), 1);

    // generate touches nothing and needs no kubeconfig.
    let out = run_bin(&["token", "generate"], env.dir.path(), None).await;
    assert_ok(&out);
    let generated = stdout(&out);
    let (id, secret) = generated.trim_end().split_once('.').unwrap();
    assert_eq!(id.len(), 6);
    assert_eq!(secret.len(), 16);
    assert!(
        generated
            .trim_end()
            .chars()
            .all(|c| c == '.' || c.is_ascii_digit() || c.is_ascii_lowercase())
    );
}

#[tokio::test]
async fn kubeconfig_from_the_environment_and_forbidden_users() {
    let env = Env::start().await;
    // KUBECONFIG: the first file of the list is used.
    let list = format!(
        "{}:{}",
        env.kubeconfig.display(),
        env.dir.path().join("missing").display()
    );
    let out = run_bin(&["token", "create"], env.dir.path(), Some(&list)).await;
    assert_ok(&out);
    // ~/.kube/config when nothing else is set.
    let kube_dir = env.dir.path().join(".kube");
    std::fs::create_dir_all(&kube_dir).unwrap();
    std::fs::copy(&env.kubeconfig, kube_dir.join("config")).unwrap();
    let out = run_bin(&["token", "list"], env.dir.path(), None).await;
    assert_ok(&out);
    assert_eq!(stdout(&out).lines().count(), 2);

    // A user without system:masters: exit 1, forbidden, the step named.
    let plain = "plain-user-token-0123456789";
    env.server
        .add_static_token(plain, "alice", &["system:authenticated"]);
    let yaml = env
        .server
        .admin_kubeconfig_yaml()
        .replace(env.server.admin_token(), plain);
    let alice = env.dir.path().join("alice.conf");
    std::fs::write(&alice, yaml).unwrap();
    let out = run_bin(
        &["--kubeconfig", alice.to_str().unwrap(), "token", "list"],
        env.dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: failed to list bootstrap tokens: forbidden"),
        "{}",
        stderr(&out)
    );
    let out = run_bin(
        &["--kubeconfig", alice.to_str().unwrap(), "token", "create"],
        env.dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty(), "no token is printed on failure");
    assert!(
        stderr(&out).starts_with("error: failed to create bootstrap token"),
        "{}",
        stderr(&out)
    );

    // A missing kubeconfig: exit 1, the step named.
    let out = run_bin(
        &["--kubeconfig", "/nonexistent/kubeconfig", "token", "list"],
        env.dir.path(),
        None,
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: loading kubeconfig /nonexistent/kubeconfig"));
}

#[tokio::test]
async fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["token", "create", "--bogus"][..],
        &["token", "delete"],
        &["token", "create", "--ttl", "one day"],
        &["join", "127.0.0.1:6443", "--discovery-timeout", "soon"],
        &["token", "list", "-o", "xml"],
        &["token"],
        &[],
        &["pin"],
        &["join", "--discovery-token-ca-cert-hash"],
        // Refused by the command itself before any work, as clap refuses the above.
        &["join", "127.0.0.1:6443", "--token", "bad"],
        &[
            "join",
            "127.0.0.1:6443",
            "--token",
            "abcdef.0123456789abcdef",
        ],
        &["token", "create", "bad"],
        &["token", "delete", "zz"],
        &["token", "create", "--usages", "signing,auth"],
    ] {
        let out = run_bin(args, dir.path(), None).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let out = run_bin(&["--help"], dir.path(), None).await;
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn pin_matches_openssl() {
    let env = Env::start().await;
    let ca = env.dir.path().join("ca.pem");
    std::fs::write(&ca, env.server.ca_pem()).unwrap();
    let out = run_bin(&["pin", ca.to_str().unwrap()], env.dir.path(), None).await;
    assert_ok(&out);
    assert_eq!(stdout(&out), format!("{}\n", openssl_pin(&ca).await));

    // Two certificates: two pins, in order.
    let other = LoopbackApiServer::builder().start().await.unwrap();
    let both = env.dir.path().join("both.pem");
    std::fs::write(&both, format!("{}{}", env.server.ca_pem(), other.ca_pem())).unwrap();
    let other_path = env.dir.path().join("other.pem");
    std::fs::write(&other_path, other.ca_pem()).unwrap();
    let out = run_bin(&["pin", both.to_str().unwrap()], env.dir.path(), None).await;
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!(
            "{}\n{}\n",
            openssl_pin(&ca).await,
            openssl_pin(&other_path).await
        )
    );

    // CA certificates: no warning.
    assert_eq!(stderr(&out), "");
    // A certificate that is not a CA (CA:FALSE): its pin all the same, and a warning on stderr
    // (kubeadm pins the cluster CA).
    let leaf = env.dir.path().join("leaf.pem");
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args(["-keyout", env.dir.path().join("leaf.key").to_str().unwrap()])
        .args([
            "-out",
            leaf.to_str().unwrap(),
            "-subj",
            "/CN=leaf",
            "-days",
            "1",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .output()
        .await
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let out = run_bin(&["pin", leaf.to_str().unwrap()], env.dir.path(), None).await;
    assert_ok(&out);
    assert_eq!(stdout(&out), format!("{}\n", openssl_pin(&leaf).await));
    let err = stderr(&out);
    assert!(err.starts_with("warning: "), "{err}");
    assert!(err.contains("certificate 1 is not a CA"), "{err}");

    // Not a certificate: exit 1.
    let junk = env.dir.path().join("junk.pem");
    std::fs::write(&junk, "not a pem").unwrap();
    let out = run_bin(&["pin", junk.to_str().unwrap()], env.dir.path(), None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: reading CA certificates from"));
}

/// The README's first command: `k8s-bootstrap demo` runs the whole flow with the real commands
/// (this binary as a child process, and kubectl) and every refused join is refused; then
/// add-on authentication through `kubectl proxy` and `forward-proxy`.
#[tokio::test]
async fn demo_runs_the_whole_flow_with_the_real_commands() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("kept");
    let out = run_bin(&["demo", "--dir", keep.to_str().unwrap()], dir.path(), None).await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for expected in [
        "$ k8s-bootstrap token create --kubeconfig",
        "--description 'k8s-bootstrap demo' --print-join-command",
        "k8s-bootstrap join 127.0.0.1:",
        "same hash as in the join command",
        "wrote the TLS-bootstrap kubeconfig for https://127.0.0.1:",
        "cluster-info",
        "the API server authenticated that request as system:bootstrap:",
        "wrote the client certificate of system:node:worker-1",
        "Approved,Issued",
        "the API server authenticated the node as system:node:worker-1",
        "none of the public keys",
        "failed to verify JWS signature",
        "can be unsafe",
        "could not find a JWS signature in the cluster-info ConfigMap",
        // Add-on authentication: kubectl proxy, the add-auth layer, forward-proxy, the add-on.
        "$ k8s-bootstrap forward-proxy --insecure-listen-address=127.0.0.1:0",
        "Starting to serve on 127.0.0.1:",
        "add-on: GET / with X-Authenticated-User: loopback-admin",
        "without add-auth=true no token is added: the forward proxy refuses (403)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(
        text.matches("refused, and no kubeconfig was written")
            .count(),
        4,
        "{text}"
    );
    // The token's secret appears where kubeadm prints it (token create's join command and the
    // token list table) and is masked in every command line the demo echoes.
    let token = text
        .split_whitespace()
        .skip_while(|w| *w != "--token")
        .nth(1)
        .unwrap()
        .to_owned();
    assert_eq!(text.matches(token.as_str()).count(), 2, "{text}");
    // kubeadm's wording once, not twice.
    assert!(!text.contains("API Server: couldn't validate"), "{text}");
    for kept in [
        "bootstrap-kubelet.conf",
        "kubelet.conf",
        "pki/kubelet-client-current.pem",
    ] {
        let meta = std::fs::metadata(keep.join(kept)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{kept}");
    }
}

/// `tracing` at its most verbose (`-vvv`, and `RUST_LOG=trace` for every crate) never carries a
/// token secret: token create/list/delete, join (success, wrong secret), and the admin token.
#[tokio::test]
async fn trace_output_never_carries_a_secret() {
    let env = Env::start().await;
    let token = "tracez.0123456789tracez";
    let wrong = "tracez.ffffffffffffffff";
    let ca = env.dir.path().join("ca.pem");
    std::fs::write(&ca, env.server.ca_pem()).unwrap();
    let pin = stdout(&run_bin(&["pin", ca.to_str().unwrap()], env.dir.path(), None).await);
    let endpoint = env.server.endpoint();
    let written = env.dir.path().join("bootstrap-kubelet.conf");
    let mut logs = String::new();
    let runs: Vec<(Vec<&str>, bool)> = vec![
        (vec!["-vvv", "token", "create", token], true),
        (vec!["-vvv", "token", "list"], true),
        (
            vec![
                "-vvv",
                "join",
                &endpoint,
                "--token",
                token,
                "--discovery-token-ca-cert-hash",
                pin.trim(),
                "--tls-bootstrap-kubeconfig",
                written.to_str().unwrap(),
            ],
            true,
        ),
        (
            vec![
                "-vvv",
                "join",
                &endpoint,
                "--token",
                wrong,
                "--discovery-token-ca-cert-hash",
                pin.trim(),
                "--discovery-timeout",
                "1s",
            ],
            false,
        ),
        (vec!["-vvv", "token", "delete", token], true),
    ];
    for (args, succeeds) in runs {
        let out = env.run(&args).await;
        assert_eq!(out.status.success(), succeeds, "{args:?}: {}", stderr(&out));
        logs.push_str(&stderr(&out));
    }
    // RUST_LOG=trace turns on every crate's events, hyper's and rustls's included.
    let out = {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "--kubeconfig",
            env.kubeconfig.to_str().unwrap(),
            "token",
            "list",
        ])
        .env("RUST_LOG", "trace")
        .env_remove("KUBECONFIG")
        .env("HOME", env.dir.path());
        cmd.output().await.unwrap()
    };
    assert!(out.status.success());
    logs.push_str(&stderr(&out));
    assert!(
        logs.contains("DEBUG") || logs.contains("TRACE"),
        "no tracing output: {logs}"
    );
    for secret in [
        "0123456789tracez",
        "ffffffffffffffff",
        env.server.admin_token(),
    ] {
        assert!(!logs.contains(secret), "a secret reached the logs:\n{logs}");
    }
}

/// `token` commands with an exec user: the library's exec layer (the 401 refresh and retry,
/// kubectl's kuberc plugin policy, `PATH` lookup), not kube's built-in exec support.
#[tokio::test]
async fn token_commands_use_the_exec_layer_and_the_kuberc_policy() {
    // Only the plugin's second token is accepted: the first request gets a 401.
    let server = LoopbackApiServer::builder()
        .static_token("exec-token-2", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let plugin = bin.join("k8s-bootstrap-test-plugin");
    write_executable(
        &plugin,
        "#!/bin/sh\necho run >> \"$COUNTER\"\nn=$(wc -l < \"$COUNTER\")\nn=$(echo $n)\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token-%s\"}}\\n' \"$n\"\n",
    );
    let counter = dir.path().join("runs");
    let kubeconfig = dir.path().join("exec.conf");
    let admin: serde_json::Value = serde_json::to_value(
        kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml()).unwrap(),
    )
    .unwrap();
    let exec_config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": admin["clusters"],
        "contexts": [{"name": "exec", "context": {"cluster": admin["clusters"][0]["name"], "user": "exec-user"}}],
        "current-context": "exec",
        "users": [{"name": "exec-user", "user": {"exec": {
            "command": "k8s-bootstrap-test-plugin",
            "apiVersion": "client.authentication.k8s.io/v1",
            "interactiveMode": "Never",
            "env": [{"name": "COUNTER", "value": counter.to_str().unwrap()}],
        }}}],
    });
    std::fs::write(&kubeconfig, exec_config.to_string()).unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    // KUBECONFIG lists a missing file first: kubectl skips it.
    let kubeconfig_env = format!(
        "{}:{}",
        dir.path().join("missing.conf").display(),
        kubeconfig.display()
    );
    let run = |kuberc: Option<&Path>| {
        let mut cmd = Command::new(BIN);
        cmd.args(["token", "list"])
            .env("RUST_LOG", "debug")
            .env_remove("KUBERC")
            .env("KUBECONFIG", &kubeconfig_env)
            .env("HOME", &home)
            .env("PATH", &path)
            .current_dir(dir.path());
        if let Some(kuberc) = kuberc {
            cmd.env("KUBERC", kuberc);
        }
        async move { cmd.output().await }
    };
    let runs = || std::fs::read_to_string(&counter).map_or(0, |s| s.lines().count());

    let out = run(None).await.unwrap();
    eprintln!(
        "runs {} requests {:?}",
        runs(),
        server
            .requests()
            .iter()
            .map(|r| (r.path.clone(), r.query.clone(), r.status, r.user.clone()))
            .collect::<Vec<_>>()
    );
    assert_ok(&out);
    assert_eq!(runs(), 2, "the plugin ran again after the 401");
    let statuses: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/kube-system/secrets")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401, 200]);

    // KUBERC's policy applies, with kubectl v1.37's message.
    let deny = dir.path().join("deny.kuberc");
    std::fs::write(
        &deny,
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n",
    )
    .unwrap();
    let out = run(Some(&deny)).await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "plugin \"k8s-bootstrap-test-plugin\" not allowed: policy set to \"DenyAll\""
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(runs(), 2);

    // ~/.kube/kuberc when KUBERC is not set: an allow-list entry naming the path the command
    // resolves to on PATH admits it (the plugin's third token is accepted).
    server.add_static_token("exec-token-3", "exec-user", &["system:masters"]);
    std::fs::write(
        home.join(".kube").join("kuberc"),
        format!(
            "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: {}\n",
            plugin.display()
        ),
    )
    .unwrap();
    let out = run(None).await.unwrap();
    assert_ok(&out);
    std::fs::write(
        home.join(".kube").join("kuberc"),
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: /usr/bin/kubelogin\n",
    )
    .unwrap();
    let out = run(None).await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not permitted by the credential plugin allowlist"),
        "{}",
        stderr(&out)
    );
    server.shutdown().await;
}

/// Writes an executable file through `sh` (a process of its own), so that no descriptor open
/// for writing on it ever exists in this test process: a process a parallel test forks could
/// otherwise inherit one for a moment and make running the file fail with ETXTBSY ("text file
/// busy").
fn write_executable(path: &std::path::Path, contents: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(contents.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
}

/// A file with the user's bytes and mode 0644, and a check that both are unchanged.
fn user_file(path: &Path) -> impl Fn() {
    std::fs::write(path, b"the user's own file\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = path.to_owned();
    move || {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"the user's own file\n",
            "{path:?}"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "{path:?}");
    }
}

/// The error for a file the command refuses to replace: exit 2, the flag and the path named,
/// `--force` offered.
fn assert_refused(out: &Output, flag: &str, path: &Path) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {flag} {}: the file already exists",
            path.display()
        )),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
}

/// `join` replaces no file it did not create: the TLS-bootstrap kubeconfig, and with
/// --node-name the node's kubeconfig and certificate, are refused before any request (the
/// user's bytes and mode unchanged), and replaced with --force. A second join with the same
/// paths is refused the same way.
#[tokio::test]
async fn join_replaces_no_file_it_did_not_create() {
    let env = Env::start().await;
    let out = env.run(&["token", "create", "--print-join-command"]).await;
    assert_ok(&out);
    let line = stdout(&out);
    let words: Vec<&str> = line.split_whitespace().collect();
    let (endpoint, token, hash) = (words[2], words[4], words[6]);
    let home = env.dir.path();
    let join = |extra: &[&str]| {
        let mut args = vec![
            "join",
            endpoint,
            "--token",
            token,
            "--discovery-token-ca-cert-hash",
            hash,
        ];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_bin(&args, home, None).await
        }
    };
    let cluster_info_requests = || {
        env.server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/configmaps/cluster-info"))
            .count()
    };

    let existing = home.join("existing.conf");
    let unchanged = user_file(&existing);
    let before = cluster_info_requests();
    let out = join(&["--tls-bootstrap-kubeconfig", existing.to_str().unwrap()]).await;
    assert_refused(&out, "--tls-bootstrap-kubeconfig", &existing);
    unchanged();
    assert_eq!(cluster_info_requests(), before, "discovery ran");

    // With --node-name: the node's kubeconfig and its certificate file too, each named.
    let kubelet = home.join("kubelet.conf");
    let unchanged_kubelet = user_file(&kubelet);
    let out = join(&[
        "--tls-bootstrap-kubeconfig",
        "new.conf",
        "--node-name",
        "worker-1",
    ])
    .await;
    assert_refused(&out, "--kubelet-kubeconfig", Path::new("kubelet.conf"));
    unchanged_kubelet();
    std::fs::create_dir(home.join("pki")).unwrap();
    let pem = home.join("pki/kubelet-client-current.pem");
    let unchanged_pem = user_file(&pem);
    let out = join(&[
        "--tls-bootstrap-kubeconfig",
        "new.conf",
        "--node-name",
        "worker-1",
        "--kubelet-kubeconfig",
        "node.conf",
    ])
    .await;
    assert_refused(
        &out,
        "--cert-dir",
        Path::new("pki/kubelet-client-current.pem"),
    );
    unchanged_pem();
    assert!(!home.join("new.conf").exists());
    assert!(!home.join("node.conf").exists());
    assert_eq!(cluster_info_requests(), before, "discovery ran");

    // --force replaces them all, 0600.
    let out = join(&[
        "--tls-bootstrap-kubeconfig",
        existing.to_str().unwrap(),
        "--node-name",
        "worker-1",
        "--force",
    ])
    .await;
    assert_ok(&out);
    for path in [&existing, &kubelet, &pem] {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains("the user's own file"), "{path:?}");
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path:?}");
    }

    // The default paths: a first join writes bootstrap-kubelet.conf, a second is refused.
    let out = join(&[]).await;
    assert_ok(&out);
    let written = std::fs::read(home.join("bootstrap-kubelet.conf")).unwrap();
    let out = join(&[]).await;
    assert_refused(
        &out,
        "--tls-bootstrap-kubeconfig",
        Path::new("bootstrap-kubelet.conf"),
    );
    assert_eq!(
        std::fs::read(home.join("bootstrap-kubelet.conf")).unwrap(),
        written
    );
}

/// `serve-loopback` leaves a file at --admin-kubeconfig or --serving-certificate alone (refused
/// before the server starts, and not removed on exit); with --force it replaces it and removes
/// what it wrote on exit. A busy --port is named with the OS reason.
#[tokio::test]
async fn serve_loopback_leaves_the_users_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("loopback-admin.conf");
    let unchanged = user_file(&admin);
    let out = run_bin(&["serve-loopback"], dir.path(), None).await;
    assert_refused(&out, "--admin-kubeconfig", Path::new("loopback-admin.conf"));
    unchanged();
    let cert = dir.path().join("serving.crt");
    let unchanged_cert = user_file(&cert);
    let out = run_bin(
        &[
            "serve-loopback",
            "--admin-kubeconfig",
            "other.conf",
            "--serving-certificate",
            cert.to_str().unwrap(),
        ],
        dir.path(),
        None,
    )
    .await;
    assert_refused(&out, "--serving-certificate", &cert);
    unchanged_cert();
    assert!(!dir.path().join("other.conf").exists());

    // A busy port: the flag, the address and the OS reason; nothing written.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let out = run_bin(
        &[
            "serve-loopback",
            "--port",
            &port,
            "--admin-kubeconfig",
            "other.conf",
        ],
        dir.path(),
        None,
    )
    .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: --port {port}: cannot listen on 127.0.0.1:{port}: "
        )),
        "{err}"
    );
    assert!(err.contains("os error"), "{err}");
    assert!(!dir.path().join("other.conf").exists());

    // --force: replaced while it runs, removed on exit.
    let mut child = Command::new(BIN)
        .args(["serve-loopback", "--force"])
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&admin)
        .unwrap_or_default()
        .contains("apiVersion")
    {
        assert!(tokio::time::Instant::now() < deadline, "not replaced");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("serve-loopback exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!admin.exists());
    unchanged_cert();
}

/// `demo --dir` takes a new or empty directory: one that holds files could hold one of the
/// demo's, and the demo replaces none.
#[tokio::test]
async fn demo_dir_must_be_new_or_empty() {
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.conf");
    let unchanged = user_file(&admin);
    let out = run_bin(
        &["demo", "--dir", dir.path().to_str().unwrap()],
        dir.path(),
        None,
    )
    .await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: --dir {}: the directory is not empty",
            dir.path().display()
        )),
        "{err}"
    );
    unchanged();
}

/// Errors in the command's own terms: the flag the user gave, the format in words with an
/// example, the file KUBECONFIG names, no tip towards an output path, the reason a duration
/// is refused.
#[tokio::test]
async fn errors_speak_of_the_flags_the_user_gave() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let token_format = "a bootstrap token is 6 characters of [a-z0-9], a dot, and 16 characters \
                        of [a-z0-9], as 07401b.f395accd246ae52d";
    for (args, expected) in [
        (
            &[
                "join",
                "127.0.0.1:6443",
                "--token",
                "bad",
                "--discovery-token-unsafe-skip-ca-verification",
            ][..],
            format!("error: --token: {token_format}\n"),
        ),
        (
            &["token", "create", "bad", "--kubeconfig", "/nonexistent"],
            format!("error: token create <TOKEN>: {token_format}\n"),
        ),
        // Checked before the kubeconfig is read; about the usage given, not a default group.
        (
            &[
                "token",
                "create",
                "--usages",
                "signing,auth",
                "--kubeconfig",
                "/nonexistent",
            ],
            "error: --usages \"signing,auth\": invalid bootstrap token usage string: auth, valid \
             usage options: signing,authentication\n"
                .to_owned(),
        ),
    ] {
        let out = run_bin(args, home, None).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}");
    }

    // KUBECONFIG names a file that does not exist: said so, with the OS reason.
    let missing = home.join("missing.conf");
    let out = run_bin(&["token", "list"], home, Some(missing.to_str().unwrap())).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the file {} named by KUBECONFIG cannot be read: No such file or directory",
            missing.display()
        )),
        "{err}"
    );
    assert!(!err.contains("no KUBECONFIG"), "{err}");

    // join takes no --kubeconfig: no tip towards --kubelet-kubeconfig, an output path.
    let out = run_bin(&["join", "--kubeconfig", "admin.conf"], home, None).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unexpected argument '--kubeconfig' found"),
        "{err}"
    );
    assert!(!err.contains("--kubelet-kubeconfig"), "{err}");
    assert!(err.contains("token create|list|delete"), "{err}");

    // A negative timeout is refused for what it is, not as an unexpected `-1`.
    for flag in ["--tls-bootstrap-timeout", "--discovery-timeout"] {
        let out = run_bin(&["join", "127.0.0.1:6443", flag, "-1s"], home, None).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "invalid value '-1s' for '{flag} <DURATION>': must be positive"
            )),
            "{err}"
        );
        assert!(!err.contains("-- -1"), "{err}");
    }
}
