//! The bootstrap signer and token cleaner controllers against the loopback API server (its own
//! signer off), with kube-runtime's real watcher: tokens created, changed, deleted and expiring
//! during the run; cluster-info created late, deleted, recreated and edited concurrently; a
//! watch ended by 410 Gone; UID preconditions on delete.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_bootstrap::controllers::{self, Metrics, Options};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::LoopbackApiServer;
use serde_json::Value;
use tokio::sync::oneshot;

async fn client(server: &LoopbackApiServer) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

async fn server(cluster_info: bool) -> LoopbackApiServer {
    LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .cluster_info(cluster_info)
        .start()
        .await
        .unwrap()
}

/// A bootstrap-token Secret for `id` with `secret`, signing usage on, plus `extra` data.
fn token(id: &str, secret: &str, extra: &[(&str, &str)]) -> Secret {
    let mut data: BTreeMap<String, ByteString> = [
        ("token-id", id),
        ("token-secret", secret),
        ("usage-bootstrap-signing", "true"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
    .collect();
    data.retain(|_, v| !v.0.is_empty());
    Secret {
        metadata: ObjectMeta {
            name: Some(format!("bootstrap-token-{id}")),
            namespace: Some("kube-system".to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("bootstrap.kubernetes.io/token".to_owned()),
        data: Some(data),
        ..Secret::default()
    }
}

fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    k8s_openapi::jiff::Timestamp::from_second(i64::try_from(secs).unwrap())
        .unwrap()
        .to_string()
}

/// The cluster-info ConfigMap's data as the server holds it.
fn cluster_info(server: &LoopbackApiServer) -> Option<BTreeMap<String, String>> {
    let object = server.object("kube-public", "configmaps", "cluster-info")?;
    let data = object.get("data").cloned().unwrap_or(Value::Null);
    Some(serde_json::from_value(data).unwrap_or_default())
}

/// The token IDs cluster-info holds a *valid* signature for (each checked with its secret).
fn signed(server: &LoopbackApiServer, secrets: &BTreeMap<&str, &str>) -> Vec<String> {
    let Some(data) = cluster_info(server) else {
        return Vec::new();
    };
    let Some(kubeconfig) = data.get("kubeconfig") else {
        return Vec::new();
    };
    let mut ids = Vec::new();
    for (key, jws) in &data {
        let Some(id) = key.strip_prefix("jws-kubeconfig-") else {
            continue;
        };
        let secret = secrets
            .get(id)
            .expect("a signature for a token the test made");
        jws_detached::verify_kubernetes(jws, kubeconfig.as_bytes(), id, secret.as_bytes())
            .unwrap_or_else(|e| panic!("signature for {id} does not verify: {e}"));
        ids.push(id.to_owned());
    }
    ids
}

/// Polls `check` every 20 ms until it holds; fails after 15 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts a controller; dropping the guard (or `stop`) shuts it down.
struct Running {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), controllers::Error>>,
}

impl Running {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .expect("graceful shutdown within 5 s")
            .unwrap()
            .unwrap();
    }
}

fn options() -> Options {
    let mut options = Options::default();
    options.retry_delay = Duration::from_millis(20);
    options
}

fn start<F, Fut>(run: F) -> Running
where
    F: FnOnce(oneshot::Receiver<()>) -> Fut,
    Fut: Future<Output = Result<(), controllers::Error>> + Send + 'static,
{
    let (stop, rx) = oneshot::channel();
    Running {
        stop: Some(stop),
        task: tokio::spawn(run(rx)),
    }
}

fn signer(client: Client, metrics: Arc<Metrics>) -> Running {
    start(move |rx| {
        controllers::bootstrap_signer(client, metrics, options(), async move {
            let _ = rx.await;
        })
    })
}

fn cleaner(client: Client, metrics: Arc<Metrics>) -> Running {
    start(move |rx| {
        controllers::token_cleaner(client, metrics, options(), async move {
            let _ = rx.await;
        })
    })
}

const SECRETS: [(&str, &str); 4] = [
    ("abcdef", "0123456789abcdef"),
    ("ghijkl", "0123456789ghijkl"),
    ("mnopqr", "0123456789mnopqr"),
    ("stuvwx", "0123456789stuvwx"),
];

#[tokio::test]
async fn signer_follows_tokens_created_changed_deleted_and_expiring() {
    let server = server(true).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    // One token exists before the controller starts: the first list signs it.
    secrets
        .create(
            &PostParams::default(),
            &token("abcdef", keys["abcdef"], &[]),
        )
        .await
        .unwrap();
    let metrics = Arc::new(Metrics::new());
    let running = signer(client.clone(), metrics.clone());
    eventually("the existing token signs", || {
        signed(&server, &keys) == ["abcdef"]
    })
    .await;

    // Created while running; one expiring in two seconds.
    let soon = rfc3339(SystemTime::now() + Duration::from_secs(2));
    secrets
        .create(
            &PostParams::default(),
            &token("ghijkl", keys["ghijkl"], &[]),
        )
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &token("mnopqr", keys["mnopqr"], &[("expiration", &soon)]),
        )
        .await
        .unwrap();
    // Not a signing token: never signs.
    secrets
        .create(
            &PostParams::default(),
            &token("stuvwx", keys["stuvwx"], &[("usage-bootstrap-signing", "")]),
        )
        .await
        .unwrap();
    eventually("three tokens sign", || {
        signed(&server, &keys) == ["abcdef", "ghijkl", "mnopqr"]
    })
    .await;

    // Changed: signing usage switched off.
    let mut changed = secrets.get("bootstrap-token-ghijkl").await.unwrap();
    changed.data.as_mut().unwrap().insert(
        "usage-bootstrap-signing".to_owned(),
        ByteString(b"false".to_vec()),
    );
    secrets
        .replace("bootstrap-token-ghijkl", &PostParams::default(), &changed)
        .await
        .unwrap();
    // Deleted.
    secrets
        .delete("bootstrap-token-abcdef", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the changed and deleted tokens' signatures go", || {
        signed(&server, &keys) == ["mnopqr"]
    })
    .await;
    // Expired: its signature goes at expiry, with no event and no token cleaner.
    eventually("the expired token's signature goes", || {
        signed(&server, &keys).is_empty()
    })
    .await;
    assert!(metrics.cluster_info_writes() >= 4, "{metrics:?}");
    assert!(
        metrics
            .encode()
            .contains("k8s_bootstrap_cluster_info_writes_total")
    );
    running.stop().await;
}

#[tokio::test]
async fn signer_waits_for_cluster_info_and_signs_it_again_after_recreation() {
    let server = server(false).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    let running = signer(client.clone(), Arc::new(Metrics::new()));
    secrets
        .create(
            &PostParams::default(),
            &token("abcdef", keys["abcdef"], &[]),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        cluster_info(&server).is_none(),
        "nothing is created by the signer"
    );

    let cluster_info_cm = |kubeconfig: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some("cluster-info".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            kubeconfig.to_owned(),
        )])),
        ..ConfigMap::default()
    };
    configmaps
        .create(&PostParams::default(), &cluster_info_cm("first"))
        .await
        .unwrap();
    eventually("cluster-info created late is signed", || {
        signed(&server, &keys) == ["abcdef"]
    })
    .await;

    configmaps
        .delete("cluster-info", &DeleteParams::default())
        .await
        .unwrap();
    configmaps
        .create(&PostParams::default(), &cluster_info_cm("second"))
        .await
        .unwrap();
    eventually(
        "the recreated cluster-info is signed over its new content",
        || {
            cluster_info(&server).is_some_and(|d| d["kubeconfig"] == "second")
                && signed(&server, &keys) == ["abcdef"]
        },
    )
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signer_never_overwrites_a_concurrent_writer() {
    let server = server(true).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    let metrics = Arc::new(Metrics::new());
    let running = signer(client.clone(), metrics.clone());

    // Another writer adds 40 keys, each with a get and an update (retrying its own 409s),
    // while 30 tokens come and go.
    let editor = tokio::spawn(async move {
        for i in 0..40 {
            loop {
                let mut cm = configmaps.get("cluster-info").await.unwrap();
                cm.data
                    .get_or_insert_with(BTreeMap::new)
                    .insert(format!("extra-{i}"), i.to_string());
                match configmaps
                    .replace("cluster-info", &PostParams::default(), &cm)
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    });
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    for i in 0..30 {
        let id = format!("t{i:05}");
        let secret = format!("{i:016}");
        secrets
            .create(&PostParams::default(), &token(&id, &secret, &[]))
            .await
            .unwrap();
        keys.insert(id, secret);
    }
    editor.await.unwrap();
    let key_refs: BTreeMap<&str, &str> =
        keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    eventually(
        "every token signs and every concurrent edit survives",
        || {
            let data = cluster_info(&server).unwrap();
            (0..40).all(|i| data.get(&format!("extra-{i}")) == Some(&i.to_string()))
                && signed(&server, &key_refs).len() == 30
        },
    )
    .await;
    // Bursts coalesce: far fewer reconciles than the 70 events.
    assert!(
        metrics.reconciles("bootstrapsigner") < 70,
        "{}",
        metrics.encode()
    );
    running.stop().await;
}

#[tokio::test]
async fn signer_resumes_after_its_watch_expires_with_410() {
    let server = server(true).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    let running = signer(client.clone(), Arc::new(Metrics::new()));
    secrets
        .create(
            &PostParams::default(),
            &token("abcdef", keys["abcdef"], &[]),
        )
        .await
        .unwrap();
    eventually("signed", || signed(&server, &keys) == ["abcdef"]).await;

    // etcd compaction: every open watch ends with 410 Gone; the watcher re-lists.
    server.compact();
    let gone_before = server.requests().len();
    secrets
        .create(
            &PostParams::default(),
            &token("ghijkl", keys["ghijkl"], &[]),
        )
        .await
        .unwrap();
    eventually("a token created after the 410 signs", || {
        signed(&server, &keys) == ["abcdef", "ghijkl"]
    })
    .await;
    let relisted = server.requests()[gone_before..].iter().any(|r| {
        r.method == "GET" && r.path.ends_with("/secrets") && !r.query.contains("watch=true")
    });
    assert!(relisted, "the watcher re-listed after the 410");
    running.stop().await;
}

#[tokio::test]
async fn cleaner_deletes_expired_tokens_when_they_expire_and_keeps_the_rest() {
    let server = server(true).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let now = SystemTime::now();
    let past = rfc3339(now - Duration::from_secs(60));
    let soon = rfc3339(now + Duration::from_secs(2));
    let later = rfc3339(now + Duration::from_secs(3600));
    for (id, exp) in [
        ("aaaaaa", past.as_str()),
        ("bbbbbb", "not-a-time"),
        ("cccccc", soon.as_str()),
        ("dddddd", later.as_str()),
        ("eeeeee", ""),
    ] {
        secrets
            .create(
                &PostParams::default(),
                &token(id, "0123456789abcdef", &[("expiration", exp)]),
            )
            .await
            .unwrap();
    }
    let metrics = Arc::new(Metrics::new());
    let running = cleaner(client.clone(), metrics.clone());
    let exists = |id: &str| {
        server
            .object("kube-system", "secrets", &format!("bootstrap-token-{id}"))
            .is_some()
    };
    eventually("expired and unparseable tokens are deleted", || {
        !exists("aaaaaa") && !exists("bbbbbb")
    })
    .await;
    assert!(exists("cccccc"), "not expired yet");
    eventually("the token expiring during the run is deleted", || {
        !exists("cccccc")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        exists("dddddd") && exists("eeeeee"),
        "live and non-expiring tokens stay"
    );
    assert_eq!(metrics.deleted_tokens(), 3);

    // Every delete carried the Secret's UID as precondition: the loopback server enforces it,
    // and a token created later with an expiry in the past under a known name goes too.
    let deletes: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    secrets
        .create(
            &PostParams::default(),
            &token("aaaaaa", "0123456789abcdef", &[("expiration", &past)]),
        )
        .await
        .unwrap();
    eventually("a recreated expired token is deleted too", || {
        !exists("aaaaaa")
    })
    .await;
    running.stop().await;
}

/// One replica of `k8s-bootstrap controllers` with leader election.
fn replica(client: Client, identity: &str, metrics: Arc<Metrics>) -> Running {
    let mut election = controllers::LeaderElection::new(identity);
    // Short for a test, with room for a loaded machine: the leader renews when 3 s remain, so
    // only a 3 s stall of its renewal could let the standby take a lease the leader still
    // believes it holds (2 s and 1 s were seen to fail under CI load).
    election.lease_duration = Duration::from_secs(8);
    election.grace = Duration::from_secs(3);
    start(move |rx| {
        controllers::run(
            client,
            controllers::Enabled::all(),
            Some(election),
            options(),
            metrics,
            async move {
                let _ = rx.await;
            },
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_one_leader_and_a_handover_on_shutdown() {
    let server = server(true).await;
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    let (metrics_a, metrics_b) = (Arc::new(Metrics::new()), Arc::new(Metrics::new()));
    let a = replica(client.clone(), "replica-a", metrics_a.clone());
    let b = replica(client.clone(), "replica-b", metrics_b.clone());

    // Never two leaders: sampled all along.
    let (ma, mb) = (metrics_a.clone(), metrics_b.clone());
    let sampler = tokio::spawn(async move {
        loop {
            assert!(!(ma.is_leader() && mb.is_leader()), "two leaders at once");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    eventually("one replica leads", || {
        metrics_a.is_leader() || metrics_b.is_leader()
    })
    .await;
    eventually("both are ready (leader synced, standby waiting)", || {
        metrics_a.is_ready() && metrics_b.is_ready()
    })
    .await;
    let (leader, standby, leader_metrics, standby_metrics, leader_id, standby_id) =
        if metrics_a.is_leader() {
            (a, b, metrics_a, metrics_b, "replica-a", "replica-b")
        } else {
            (b, a, metrics_b, metrics_a, "replica-b", "replica-a")
        };
    let holder = |server: &LoopbackApiServer| {
        server
            .object("kube-system", "leases", "k8s-bootstrap-controllers")
            .and_then(|l| l.pointer("/spec/holderIdentity").cloned())
            .and_then(|h| h.as_str().map(str::to_owned))
    };
    assert_eq!(holder(&server).as_deref(), Some(leader_id));
    secrets
        .create(
            &PostParams::default(),
            &token("abcdef", keys["abcdef"], &[]),
        )
        .await
        .unwrap();
    eventually("the leader signs", || signed(&server, &keys) == ["abcdef"]).await;
    assert_eq!(
        standby_metrics.reconciles("bootstrapsigner"),
        0,
        "the standby never works"
    );

    // The leader shuts down and releases the lease: the standby takes over well before the
    // lease would have expired on its own.
    leader.stop().await;
    assert!(!leader_metrics.is_leader());
    eventually("the standby takes over", || standby_metrics.is_leader()).await;
    assert_eq!(holder(&server).as_deref(), Some(standby_id));
    secrets
        .create(
            &PostParams::default(),
            &token("ghijkl", keys["ghijkl"], &[]),
        )
        .await
        .unwrap();
    eventually("the new leader signs", || {
        signed(&server, &keys) == ["abcdef", "ghijkl"]
    })
    .await;
    sampler.abort();
    assert!(
        sampler.await.unwrap_err().is_cancelled(),
        "the sampler never saw two leaders"
    );
    standby.stop().await;
}

/// A plain HTTP/1.1 GET on loopback: status and body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[tokio::test]
async fn health_readiness_and_metrics_endpoints() {
    let server = server(true).await;
    let client = client(&server).await;
    let metrics = Arc::new(Metrics::new());
    // A free port, then serve on it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (stop_http, http_rx) = oneshot::channel::<()>();
    let http = tokio::spawn(controllers::serve_http(addr, metrics.clone(), async move {
        let _ = http_rx.await;
    }));
    eventually("listening", || std::net::TcpStream::connect(addr).is_ok()).await;
    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".to_owned()));
    assert_eq!(
        http_get(addr, "/readyz").await.0,
        503,
        "not ready before the caches sync"
    );

    let running = start({
        let metrics = metrics.clone();
        move |rx| {
            controllers::run(
                client,
                controllers::Enabled::all(),
                None,
                options(),
                metrics,
                async move {
                    let _ = rx.await;
                },
            )
        }
    });
    eventually("ready", || metrics.is_ready()).await;
    assert_eq!(http_get(addr, "/readyz").await, (200, "ok".to_owned()));
    let (status, text) = http_get(addr, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "k8s_bootstrap_reconciles_total{controller=\"bootstrapsigner\"}",
        "k8s_bootstrap_reconcile_errors_total",
        "k8s_bootstrap_queue_latency_seconds_bucket",
        "k8s_bootstrap_signed_tokens",
        "k8s_bootstrap_cluster_info_writes_total",
        "k8s_bootstrap_deleted_tokens_total",
        "k8s_bootstrap_leader 1",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF"
    );
    running.stop().await;
    let _ = stop_http.send(());
    http.await.unwrap().unwrap();
}
