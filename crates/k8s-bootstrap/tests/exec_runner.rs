//! The plugin runner and the layer with real plugin processes: timeout with process-group
//! kill, the stdout cap, single flight, and secrets kept out of `Debug`, errors and `tracing`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity
)]
#![cfg(feature = "exec")]

#[path = "support/executable.rs"]
mod executable;
use executable::write_executable;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use k8s_bootstrap::exec::{Error, ExecCredentials, ExecLayer};
use k8s_bootstrap::exec_credential::{
    ApiVersion, Cluster, ExecAuthenticator, ExecConfig, InteractiveMode,
};
use tower::{Layer as _, Service};

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    write_executable(&path, &format!("#!/bin/sh\n{body}"));
    path
}

fn authenticator(config: ExecConfig) -> ExecAuthenticator {
    ExecAuthenticator::new(config, Cluster::new("https://127.0.0.1:6443")).unwrap()
}

/// Whether `pid` is gone (or a zombie nobody reaped yet: it runs no code).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) for the kernel to finish delivering `SIGKILL`.
async fn wait_dead(pid: u32) -> bool {
    for _ in 0..500 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_hanging_plugin_is_killed_with_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let plugin = script(
        dir.path(),
        "hang.sh",
        &format!(
            "sleep 1000 &\necho $$ $! > {}.tmp\nmv {0}.tmp {0}\nwait\n",
            pids.display()
        ),
    );
    let mut auth = authenticator(ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    ));
    auth.set_timeouts(Duration::from_secs(3), Duration::from_secs(3));
    let credentials = ExecCredentials::from_authenticator(auth);

    let err = credentials.credential().await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Plugin(k8s_bootstrap::exec_credential::Error::PluginTimedOut { timeout, .. })
                if *timeout == Duration::from_secs(3)
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("running exec plugin: "),
        "{err}"
    );

    let text = std::fs::read_to_string(&pids).unwrap();
    let mut it = text.split_whitespace().map(|p| p.parse::<u32>().unwrap());
    let (shell, child) = (it.next().unwrap(), it.next().unwrap());
    assert!(wait_dead(shell).await, "the plugin survived");
    assert!(wait_dead(child).await, "the plugin's child survived");
}

#[tokio::test]
async fn an_endless_writer_is_stopped_at_the_stdout_cap() {
    let mut auth = authenticator(ExecConfig::new(
        "yes",
        ApiVersion::V1,
        InteractiveMode::Never,
    ));
    auth.set_max_stdout(64 * 1024);
    auth.set_timeouts(Duration::from_secs(60), Duration::from_secs(60));
    let credentials = ExecCredentials::from_authenticator(auth);
    let err = credentials.credential().await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Plugin(k8s_bootstrap::exec_credential::Error::OutputTooLarge { limit: 65536 })
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_missing_bare_command_is_not_found() {
    let credentials = ExecCredentials::from_authenticator(authenticator(ExecConfig::new(
        "k8s-bootstrap-no-such-plugin",
        ApiVersion::V1,
        InteractiveMode::Never,
    )));
    let err = credentials.credential().await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Plugin(k8s_bootstrap::exec_credential::Error::PluginNotFound { .. })
        ),
        "{err:?}"
    );
}

/// A service that accepts one bearer token and records what it saw.
#[derive(Clone)]
struct Server {
    accept: &'static str,
    seen: Arc<Mutex<Vec<(Option<String>, Bytes, u16)>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Server")
    }
}

impl Service<http::Request<Full<Bytes>>> for Server {
    type Response = http::Response<String>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<http::Response<String>, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Full<Bytes>>) -> Self::Future {
        let auth = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap().to_owned());
        let status = if auth.as_deref() == Some(self.accept) {
            200
        } else {
            401
        };
        // The bodies here are `Full`: read the one frame synchronously.
        let body = {
            use http_body::Body as _;
            let mut body = req.into_body();
            let waker = std::task::Waker::noop();
            let mut cx = Context::from_waker(waker);
            match std::pin::Pin::new(&mut body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
                _ => Bytes::new(),
            }
        };
        self.seen.lock().unwrap().push((auth, body, status));
        std::future::ready(Ok(http::Response::builder()
            .status(status)
            .body(String::new())
            .unwrap()))
    }
}

const COUNTING_PLUGIN: &str = r#"echo run >> "$COUNTER"
n=$(wc -l < "$COUNTER")
n=$(echo $n)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s-%s"}}\n' "$PREFIX" "$n"
"#;

fn counting(dir: &Path, prefix: &str) -> (ExecCredentials, PathBuf) {
    let plugin = script(dir, "count.sh", COUNTING_PLUGIN);
    let counter = dir.join("runs");
    let config = ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    )
    .env("COUNTER", counter.to_str().unwrap())
    .env("PREFIX", prefix);
    (
        ExecCredentials::from_authenticator(authenticator(config)),
        counter,
    )
}

fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter).map_or(0, |s| s.lines().count())
}

#[tokio::test]
async fn the_layer_retries_a_replayable_request_once_and_passes_explicit_auth_through() {
    let dir = tempfile::tempdir().unwrap();
    let (credentials, counter) = counting(dir.path(), "token");
    // Warm the cache with token-1, which the server rejects.
    assert_eq!(
        credentials
            .credential()
            .await
            .unwrap()
            .token()
            .unwrap()
            .expose_secret(),
        "token-1"
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut svc = ExecLayer::new(credentials.clone()).layer(Server {
        accept: "Bearer token-2",
        seen: seen.clone(),
    });
    let req = http::Request::post("/x")
        .body(Full::new(Bytes::from_static(b"payload")))
        .unwrap();
    let resp = svc.call(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(runs(&counter), 2);
    {
        let seen = seen.lock().unwrap();
        let auth: Vec<_> = seen
            .iter()
            .map(|(a, b, s)| (a.clone().unwrap(), b.clone(), *s))
            .collect();
        assert_eq!(
            auth,
            [
                (
                    "Bearer token-1".to_owned(),
                    Bytes::from_static(b"payload"),
                    401
                ),
                (
                    "Bearer token-2".to_owned(),
                    Bytes::from_static(b"payload"),
                    200
                ),
            ]
        );
    }

    // A request that already has a header is sent as is, and not retried.
    let req = http::Request::get("/y")
        .header("authorization", "Bearer mine")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(svc.call(req).await.unwrap().status(), 401);
    assert_eq!(runs(&counter), 2);
    assert_eq!(
        seen.lock().unwrap().last().unwrap().0.as_deref(),
        Some("Bearer mine")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_callers_share_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let (credentials, counter) = counting(dir.path(), "token");
    let svc = ExecLayer::new(credentials.clone()).layer(Server {
        accept: "Bearer token-1",
        seen: Arc::new(Mutex::new(Vec::new())),
    });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let mut svc = svc.clone();
        tasks.spawn(async move {
            svc.call(
                http::Request::get("/")
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
            )
            .await
            .unwrap()
            .status()
        });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.unwrap(), 200);
    }
    assert_eq!(runs(&counter), 1);
    assert_eq!(credentials.plugin_runs(), 1);
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn canaries_never_appear_in_debug_errors_or_tracing() {
    const CANARIES: [&str; 4] = ["CANARY-ARG", "CANARY-ENV", "CANARY-TOKEN", "CANARY-OUTPUT"];
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let mut seen_text = Vec::new();

    // Success path, then a 401 and a refresh with a retry.
    let plugin = script(dir.path(), "canary.sh", COUNTING_PLUGIN);
    let counter = dir.path().join("runs");
    let config = ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    )
    .arg("--client-secret=CANARY-ARG")
    .env("COUNTER", counter.to_str().unwrap())
    .env("SECRET", "CANARY-ENV")
    .env("PREFIX", "CANARY-TOKEN");
    seen_text.push(format!("{config:?}"));
    let credentials = ExecCredentials::from_authenticator(authenticator(config));
    let credential = credentials.credential().await.unwrap();
    assert_eq!(
        credential.token().unwrap().expose_secret(),
        "CANARY-TOKEN-1"
    );
    seen_text.push(format!("{credential:?}"));
    seen_text.push(format!("{credentials:?}"));
    let layer = ExecLayer::new(credentials.clone());
    seen_text.push(format!("{layer:?}"));
    let mut svc = layer.layer(Server {
        accept: "Bearer CANARY-TOKEN-2",
        seen: Arc::new(Mutex::new(Vec::new())),
    });
    seen_text.push(format!("{svc:?}"));
    let resp = svc
        .call(
            http::Request::get("/")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // Failure paths: output that is not a credential, and a non-zero exit, with canaries on
    // stdout.
    for body in [
        "echo '{\"CANARY-OUTPUT\": CANARY-OUTPUT'\n",
        "echo CANARY-OUTPUT\nexit 3\n",
        "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"CANARY-TOKEN\",\"expirationTimestamp\":\"CANARY-OUTPUT\"}}'\n",
    ] {
        let bad = script(dir.path(), "bad.sh", body);
        let config = ExecConfig::new(
            bad.to_str().unwrap(),
            ApiVersion::V1,
            InteractiveMode::Never,
        )
        .arg("CANARY-ARG")
        .env("X", "CANARY-ENV");
        let credentials = ExecCredentials::from_authenticator(authenticator(config));
        let err = credentials.credential().await.unwrap_err();
        seen_text.push(format!("{err}"));
        seen_text.push(format!("{err:?}"));
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            seen_text.push(format!("{s} {s:?}"));
            source = s.source();
        }
        let mut svc = ExecLayer::new(credentials).layer(Server {
            accept: "",
            seen: Arc::new(Mutex::new(Vec::new())),
        });
        let err = svc
            .call(
                http::Request::get("/")
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
            )
            .await
            .unwrap_err();
        seen_text.push(format!("{err} {err:?}"));
    }

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("exec_plugin"),
        "tracing captured nothing: {logs}"
    );
    assert!(logs.contains("retrying the request once"), "{logs}");
    seen_text.push(logs);
    for text in &seen_text {
        for canary in CANARIES {
            assert!(!text.contains(canary), "{canary} leaked into: {text}");
        }
    }
}

/// A plugin that says it started (by opening `started` for writing, which blocks until the
/// test reads it), then waits until the test writes a line to `release`, then answers like
/// the counting plugin.
struct Gated {
    _dir: tempfile::TempDir,
    started: PathBuf,
    /// The write end of `release`, open from the start (read-write, so opening never blocks
    /// and a write never waits for the plugin).
    release: std::fs::File,
    counter: PathBuf,
    credentials: ExecCredentials,
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn gated() -> Gated {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let release = dir.path().join("release");
    mkfifo(&started);
    mkfifo(&release);
    let plugin = script(
        dir.path(),
        "gated.sh",
        &format!("echo started > \"$STARTED\"\nread line < \"$RELEASE\"\n{COUNTING_PLUGIN}"),
    );
    let counter = dir.path().join("runs");
    let config = ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    )
    .env("COUNTER", counter.to_str().unwrap())
    .env("PREFIX", "token")
    .env("STARTED", started.to_str().unwrap())
    .env("RELEASE", release.to_str().unwrap());
    let release = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&release)
        .unwrap();
    Gated {
        credentials: ExecCredentials::from_authenticator(authenticator(config)),
        _dir: dir,
        started,
        release,
        counter,
    }
}

impl Gated {
    /// Returns once the plugin has started.
    async fn wait_started(&self) {
        let started = self.started.clone();
        tokio::task::spawn_blocking(move || std::fs::read_to_string(started).unwrap())
            .await
            .unwrap();
    }

    /// Lets the plugin answer.
    fn release(&self) {
        use std::io::Write as _;
        (&self.release).write_all(b"go\n").unwrap();
    }
}

fn token_of(credential: &k8s_bootstrap::exec_credential::Credential) -> String {
    credential.token().unwrap().expose_secret().to_owned()
}

#[tokio::test]
async fn cancelling_one_caller_never_ends_the_run_another_waits_on() {
    let g = gated();
    // A starts the run; B waits on it.
    let a = tokio::spawn({
        let credentials = g.credentials.clone();
        async move { credentials.credential().await }
    });
    g.wait_started().await;
    let b = tokio::spawn({
        let credentials = g.credentials.clone();
        async move { credentials.credential().await }
    });
    // Current-thread runtime: B runs up to its wait before this task resumes.
    tokio::task::yield_now().await;
    // A is cancelled (a request dropped, or its timeout fired) while the plugin runs.
    a.abort();
    assert!(a.await.unwrap_err().is_cancelled());
    g.release();
    // B gets the run's credential: the plugin was not killed, and the cancel was no failure.
    assert_eq!(token_of(&b.await.unwrap().unwrap()), "token-1");
    assert_eq!(g.credentials.plugin_runs(), 1);
    // C finds it cached: no second run, no failure back-off.
    assert_eq!(
        token_of(&g.credentials.credential().await.unwrap()),
        "token-1"
    );
    assert_eq!(runs(&g.counter), 1);
}

#[tokio::test]
async fn a_run_nobody_waits_for_any_more_finishes_and_fills_the_cache() {
    let g = gated();
    // A request with a timeout gives up while the plugin runs.
    let a = tokio::spawn({
        let credentials = g.credentials.clone();
        async move { credentials.credential().await }
    });
    g.wait_started().await;
    a.abort();
    assert!(a.await.unwrap_err().is_cancelled());
    g.release();
    // The next caller gets that run's credential (waiting for the run if it has not ended yet).
    assert_eq!(
        token_of(&g.credentials.credential().await.unwrap()),
        "token-1"
    );
    assert_eq!(runs(&g.counter), 1);
    assert_eq!(g.credentials.plugin_runs(), 1);
}

#[tokio::test]
async fn a_request_timing_out_through_the_layer_is_not_a_plugin_failure() {
    let g = gated();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let svc = ExecLayer::new(g.credentials.clone()).layer(Server {
        accept: "Bearer token-1",
        seen: seen.clone(),
    });
    let request = || {
        http::Request::get("/")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let mut a_svc = svc.clone();
    let a = tokio::spawn(async move { a_svc.call(request()).await.map(|r| r.status()) });
    g.wait_started().await;
    let mut b_svc = svc.clone();
    let b = tokio::spawn(async move { b_svc.call(request()).await.map(|r| r.status()) });
    tokio::task::yield_now().await;
    a.abort();
    assert!(a.await.unwrap_err().is_cancelled());
    g.release();
    assert_eq!(b.await.unwrap().unwrap(), 200);
    let mut c_svc = svc.clone();
    assert_eq!(c_svc.call(request()).await.unwrap().status(), 200);
    assert_eq!(runs(&g.counter), 1);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// A plugin whose clock runs behind: every answer has already expired by ours.
fn expired_plugin(dir: &Path, reuse: Duration) -> (ExecCredentials, PathBuf) {
    let plugin = script(
        dir,
        "expired.sh",
        r#"echo run >> "$COUNTER"
n=$(wc -l < "$COUNTER")
n=$(echo $n)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"old-%s","expirationTimestamp":"2020-01-01T00:00:00Z"}}\n' "$n"
"#,
    );
    let counter = dir.join("runs");
    let config = ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    )
    .env("COUNTER", counter.to_str().unwrap());
    let mut auth = authenticator(config);
    auth.set_stale_credential_reuse(reuse);
    (ExecCredentials::from_authenticator(auth), counter)
}

// One thread: the warning is logged on the run's task, and the subscriber is this thread's.
#[tokio::test]
async fn answers_arriving_expired_are_used_and_do_not_run_the_plugin_per_request() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    // A reuse interval no test run outlasts, so the count below does not depend on speed.
    let (credentials, counter) = expired_plugin(dir.path(), Duration::from_secs(3600));
    let seen = Arc::new(Mutex::new(Vec::new()));
    // The server's clock disagrees with the plugin's: it accepts the token.
    let svc = ExecLayer::new(credentials.clone()).layer(Server {
        accept: "Bearer old-1",
        seen: seen.clone(),
    });
    let request = || {
        http::Request::get("/")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    // 300 requests, 20 at a time: one plugin run (client-go runs it for each of them).
    for _ in 0..15 {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let mut svc = svc.clone();
            tasks.spawn(async move { svc.call(request()).await.unwrap().status() });
        }
        while let Some(status) = tasks.join_next().await {
            assert_eq!(status.unwrap(), 200);
        }
    }
    assert_eq!(runs(&counter), 1);
    assert_eq!(credentials.plugin_runs(), 1);
    assert_eq!(seen.lock().unwrap().len(), 300);
    // A server that refuses it: the 401 runs nothing more inside the interval.
    let mut refusing = ExecLayer::new(credentials.clone()).layer(Server {
        accept: "Bearer another",
        seen: seen.clone(),
    });
    assert_eq!(refusing.call(request()).await.unwrap().status(), 401);
    assert_eq!(runs(&counter), 1);
    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert_eq!(logs.matches("already expired").count(), 1, "{logs}");
    assert!(!logs.contains("old-1"), "{logs}");

    // After the reuse interval an expired answer runs the plugin again. (In this test, not
    // one of its own: tests that log the same event beside a thread-local subscriber race
    // on tracing's per-event interest cache.)
    let dir = tempfile::tempdir().unwrap();
    let (credentials, counter) = expired_plugin(dir.path(), Duration::from_millis(200));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let layer = |accept| {
        ExecLayer::new(credentials.clone()).layer(Server {
            accept,
            seen: seen.clone(),
        })
    };
    assert_eq!(
        layer("Bearer old-1")
            .call(request())
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(runs(&counter), 1);
    // The clock moved on past the interval: the next request runs the plugin again.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        layer("Bearer old-2")
            .call(request())
            .await
            .unwrap()
            .status(),
        200
    );
    let tokens: Vec<Option<String>> = seen.lock().unwrap().iter().map(|s| s.0.clone()).collect();
    assert_eq!(
        tokens,
        [
            Some("Bearer old-1".to_owned()),
            Some("Bearer old-2".to_owned()),
        ]
    );
    assert_eq!(runs(&counter), 2);
}

#[tokio::test]
async fn a_missing_absolute_command_fails_in_gos_words() {
    let credentials = ExecCredentials::from_authenticator(authenticator(ExecConfig::new(
        "/nonexistent/k8s-bootstrap-plugin",
        ApiVersion::V1,
        InteractiveMode::Never,
    )));
    let err = credentials.credential().await.unwrap_err();
    // client-go: `exec: fork/exec <path>: no such file or directory`.
    assert_eq!(
        err.to_string(),
        "running exec plugin: exec: fork/exec /nonexistent/k8s-bootstrap-plugin: no such file or directory"
    );
}

#[tokio::test]
async fn dropping_a_plugin_run_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    mkfifo(&pids);
    let plugin = script(
        dir.path(),
        "hang.sh",
        &format!("sleep 1000 &\necho $$ $! > {}\nwait\n", pids.display()),
    );
    let mut auth = authenticator(ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    ));
    let _ = auth.credential(std::time::SystemTime::UNIX_EPOCH).unwrap();
    let Some(k8s_bootstrap::exec_credential::Action::RunPlugin(run)) = auth.poll_action() else {
        panic!("no run")
    };
    let running = tokio::spawn(async move { k8s_bootstrap::exec::run_plugin(&run).await });
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(pids).unwrap())
        .await
        .unwrap();
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    let mut it = text.split_whitespace().map(|p| p.parse::<u32>().unwrap());
    let (shell, child) = (it.next().unwrap(), it.next().unwrap());
    assert!(wait_dead(shell).await, "the plugin survived");
    assert!(wait_dead(child).await, "the plugin's child survived");
}
