//! The bootstrap signer and token cleaner controllers (and, in `serving_approver`, the
//! kubelet-serving approver) against the loopback API server (its own signer off), with
//! kube-runtime's real watcher: tokens created, changed, deleted and expiring during the run;
//! cluster-info created late, deleted, recreated and edited concurrently; a watch ended by 410
//! Gone; UID preconditions on delete.
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

#[path = "controllers/serving_approver.rs"]
mod serving_approver;

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

/// An API server that accepts connections and never answers: the controllers' first list
/// never completes.
async fn silent_server() -> (Client, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let client = Client::try_from(Config::new(url.parse().unwrap())).unwrap();
    (client, task)
}

/// Shut down before their first list has come back, both controllers stop at once (nothing is
/// in flight). kube-runtime's graceful shutdown alone would wait for the cleaner's store to
/// fill, which never happens once its watch is stopped.
#[tokio::test]
async fn controllers_shut_down_before_their_first_list_stop_at_once() {
    let (client, silent) = silent_server().await;
    for running in [
        cleaner(client.clone(), Arc::new(Metrics::new())),
        signer(client.clone(), Arc::new(Metrics::new())),
    ] {
        // Long enough for the list request to be sent and pending.
        tokio::time::sleep(Duration::from_millis(200)).await;
        running.stop().await;
    }
    silent.abort();
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

#[tokio::test]
async fn cleaner_backs_off_a_delete_that_keeps_failing() {
    let server = server(true).await;
    let admin = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "kube-system");
    let past = rfc3339(SystemTime::now() - Duration::from_secs(60));
    secrets
        .create(
            &PostParams::default(),
            &token("ffffff", "0123456789abcdef", &[("expiration", &past)]),
        )
        .await
        .unwrap();
    // Every DELETE answered 500 (say, a webhook or etcd failing), everything else served.
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = attempts.clone();
    let failing = tower::service_fn(move |request: axum::http::Request<kube::client::Body>| {
        let (inner, counted) = (admin.clone(), counted.clone());
        async move {
            if request.method() == axum::http::Method::DELETE {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected failure","reason":"InternalError","code":500}"#;
                return Ok::<_, kube::Error>(
                    axum::http::Response::builder()
                        .status(500)
                        .header("content-type", "application/json")
                        .body(kube::client::Body::from(status.to_vec()))
                        .unwrap(),
                );
            }
            inner.send(request).await
        }
    });
    let mut options = options();
    options.max_retry_delay = Duration::from_secs(1);
    let metrics = Arc::new(Metrics::new());
    let client = Client::new(failing, "default");
    let running = start(move |rx| {
        controllers::token_cleaner(client, metrics, options, async move {
            let _ = rx.await;
        })
    });
    eventually("the first delete is tried", || {
        attempts.load(std::sync::atomic::Ordering::SeqCst) > 0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    running.stop().await;
    // 20 ms doubled per failure up to 1 s: about 8 attempts in 3 s; every 20 ms would be
    // about 150.
    let n = attempts.load(std::sync::atomic::Ordering::SeqCst);
    assert!((2..=12).contains(&n), "{n} delete attempts in 3 s");
    assert!(
        server
            .object("kube-system", "secrets", "bootstrap-token-ffffff")
            .is_some()
    );
}

/// Leader election for a test replica: `lease` duration, `renew` deadline, `retry` period and
/// per-request `timeout`.
fn election(
    identity: &str,
    lease: Duration,
    renew: Duration,
    retry: Duration,
    timeout: Duration,
) -> controllers::LeaderElection {
    let mut election = controllers::LeaderElection::new(identity);
    election.lease_duration = lease;
    election.renew_deadline = renew;
    election.retry_period = retry;
    election.request_timeout = timeout;
    election
}

/// One replica of `k8s-bootstrap controllers` with leader election.
fn replica(
    client: Client,
    election: controllers::LeaderElection,
    metrics: Arc<Metrics>,
) -> Running {
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

/// The Lease's holder as the server holds it (`""` once released).
fn holder(server: &LoopbackApiServer) -> Option<String> {
    server
        .object("kube-system", "leases", "k8s-bootstrap-controllers")?
        .pointer("/spec/holderIdentity")?
        .as_str()
        .map(str::to_owned)
}

/// Checks, every few milliseconds until aborted, that at most one replica reports itself the
/// leader and that a replica reporting it is the Lease's holder on the server (read just
/// before and just after the metrics, so a handover between the reads is not mistaken for a
/// second leader).
fn one_leader_sampler(
    replicas: [(&'static str, Arc<Metrics>); 2],
    server: &Arc<LoopbackApiServer>,
) -> tokio::task::JoinHandle<()> {
    let server = server.clone();
    tokio::spawn(async move {
        loop {
            let before = holder(&server);
            let leading: Vec<&str> = replicas
                .iter()
                .filter(|(_, m)| m.is_leader())
                .map(|(id, _)| *id)
                .collect();
            let after = holder(&server);
            assert!(leading.len() < 2, "two leaders at once: {leading:?}");
            for id in leading {
                assert!(
                    before.as_deref() == Some(id) || after.as_deref() == Some(id),
                    "{id} reports itself the leader while the Lease names {before:?} then {after:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// Ends a sampler, failing if it failed.
async fn end_sampler(sampler: tokio::task::JoinHandle<()>) {
    assert!(!sampler.is_finished(), "{:?}", sampler.await);
    sampler.abort();
    assert!(sampler.await.unwrap_err().is_cancelled());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_one_leader_and_a_handover_on_shutdown() {
    let server = Arc::new(server(true).await);
    let client = client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    let (metrics_a, metrics_b) = (Arc::new(Metrics::new()), Arc::new(Metrics::new()));
    // Never two leaders, and the one reporting it holds the Lease: sampled all along.
    let sampler = one_leader_sampler(
        [
            ("replica-a", metrics_a.clone()),
            ("replica-b", metrics_b.clone()),
        ],
        &server,
    );
    // Room for a loaded machine: a leader stops 3 s before a standby may take over.
    let settings = |id| {
        election(
            id,
            Duration::from_secs(8),
            Duration::from_secs(5),
            Duration::from_millis(200),
            Duration::from_secs(2),
        )
    };
    let a = replica(client.clone(), settings("replica-a"), metrics_a.clone());
    let b = replica(client.clone(), settings("replica-b"), metrics_b.clone());

    eventually("one replica holds the Lease", || {
        holder(&server).is_some_and(|h| !h.is_empty())
    })
    .await;
    let leader_id = holder(&server).unwrap();
    let (leader, standby, leader_metrics, standby_metrics, standby_id) = if leader_id == "replica-a"
    {
        (a, b, metrics_a, metrics_b, "replica-b")
    } else {
        (b, a, metrics_b, metrics_a, "replica-a")
    };
    eventually("the holder leads, synced; the standby waits, ready", || {
        leader_metrics.is_leader() && leader_metrics.is_ready() && standby_metrics.is_ready()
    })
    .await;
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
    assert!(!standby_metrics.is_leader());

    // The leader shuts down and releases the lease: the standby takes over well before the
    // lease would have expired on its own.
    leader.stop().await;
    assert!(!leader_metrics.is_leader());
    assert_ne!(
        holder(&server).as_deref(),
        Some(leader_id.as_str()),
        "released"
    );
    eventually("the standby takes over", || {
        standby_metrics.is_leader() && holder(&server).as_deref() == Some(standby_id)
    })
    .await;
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
    end_sampler(sampler).await;
    standby.stop().await;
}

/// A TCP forwarder on loopback in front of the API server that can be cut off: while cut, it
/// passes nothing on (bytes it read wait in it, new connections wait unconnected), as a
/// network partition that drops nothing; when reconnected it delivers what waited, late.
struct Forwarder {
    addr: std::net::SocketAddr,
    cut: tokio::sync::watch::Sender<bool>,
    /// Connections accepted and not yet closed at both ends.
    open: Arc<std::sync::atomic::AtomicUsize>,
}

impl Forwarder {
    async fn start(upstream: std::net::SocketAddr) -> Forwarder {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (cut, cut_rx) = tokio::sync::watch::channel(false);
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = open.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut cut = cut_rx.clone();
                let open = count.clone();
                open.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    if cut.wait_for(|c| !*c).await.is_ok()
                        && let Ok(server) = tokio::net::TcpStream::connect(upstream).await
                    {
                        forward(client, server, cut).await;
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Forwarder { addr, cut, open }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }

    fn open(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Forwards one connection both ways, holding what it reads while cut. When the client has
/// gone and bytes it sent during the cut were delivered late, the server's side stays open
/// until the server has answered them (so the late request is processed, not dropped with a
/// half-closed connection).
async fn forward(
    client: tokio::net::TcpStream,
    server: tokio::net::TcpStream,
    cut: tokio::sync::watch::Receiver<bool>,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Chunks read from the server so far.
    let (answers_tx, answers) = tokio::sync::watch::channel(0_u64);
    let up = {
        let mut cut = cut.clone();
        let mut answers = answers.clone();
        async move {
            let mut buf = vec![0; 16 * 1024];
            let mut late_at = None;
            loop {
                let n = match client_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let held = *cut.borrow();
                if cut.wait_for(|c| !*c).await.is_err()
                    || server_write.write_all(&buf[..n]).await.is_err()
                {
                    break;
                }
                if held {
                    late_at = Some(*answers.borrow());
                }
            }
            if let Some(seen) = late_at {
                let _ = answers.wait_for(|n| *n > seen).await;
            }
            let _ = server_write.shutdown().await;
        }
    };
    let down = {
        let mut cut = cut;
        async move {
            let mut buf = vec![0; 16 * 1024];
            let mut client_gone = false;
            loop {
                let n = match server_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                answers_tx.send_modify(|a| *a += 1);
                if cut.wait_for(|c| !*c).await.is_err() {
                    break;
                }
                // Keep reading the server after the client has gone: a late request's answer
                // still counts.
                if !client_gone {
                    client_gone = client_write.write_all(&buf[..n]).await.is_err();
                }
            }
            let _ = client_write.shutdown().await;
        }
    };
    tokio::join!(up, down);
}

/// Replica A leads through a forwarder that is then cut off; replica B talks to the server
/// directly. A must stop working (metric 0, controllers cancelled) within its renew deadline,
/// before B may take over; B takes over; once A's connection comes back, the requests A sent
/// during the cut reach the server late and must not change the Lease (nor anything else).
/// With `shutdown_during_cut`, A is also shut down during the cut, so its release is among
/// the late requests.
async fn leader_cut_off(shutdown_during_cut: bool) {
    let server = Arc::new(
        LoopbackApiServer::builder()
            .bootstrap_signer(false)
            .static_token(
                "replica-a-token-0123456789",
                "replica-a",
                &["system:masters"],
            )
            .start()
            .await
            .unwrap(),
    );
    let upstream: std::net::SocketAddr = server
        .url()
        .strip_prefix("https://")
        .unwrap()
        .parse()
        .unwrap();
    let forwarder = Forwarder::start(upstream).await;
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(&server.url(), &format!("https://{}", forwarder.addr))
        .replace(server.admin_token(), "replica-a-token-0123456789");
    let client_a = Client::try_from(
        Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&yaml).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let client_b = client(&server).await;
    let keys: BTreeMap<&str, &str> = SECRETS.into_iter().collect();
    let (metrics_a, metrics_b) = (Arc::new(Metrics::new()), Arc::new(Metrics::new()));
    let sampler = one_leader_sampler(
        [
            ("replica-a", metrics_a.clone()),
            ("replica-b", metrics_b.clone()),
        ],
        &server,
    );
    // A leader stops 3 s before a standby may take over: room for a loaded machine.
    let settings = |id| {
        election(
            id,
            Duration::from_secs(6),
            Duration::from_secs(3),
            Duration::from_millis(300),
            Duration::from_secs(1),
        )
    };
    let a = replica(client_a, settings("replica-a"), metrics_a.clone());
    eventually("A leads", || {
        metrics_a.is_leader() && holder(&server).as_deref() == Some("replica-a")
    })
    .await;
    let b = replica(client_b.clone(), settings("replica-b"), metrics_b.clone());
    eventually("A is synced and B waits, ready", || {
        metrics_a.is_ready() && metrics_b.is_ready()
    })
    .await;
    Api::<Secret>::namespaced(client_b.clone(), "kube-system")
        .create(
            &PostParams::default(),
            &token("abcdef", keys["abcdef"], &[]),
        )
        .await
        .unwrap();
    eventually("A signs", || signed(&server, &keys) == ["abcdef"]).await;
    eventually("A has renewed the Lease at least once", || {
        server.requests().iter().any(|r| {
            matches!(r.method.as_str(), "PUT" | "PATCH")
                && r.path.ends_with("/leases/k8s-bootstrap-controllers")
                && r.user.as_deref() == Some("replica-a")
                && r.status == 200
        })
    })
    .await;

    forwarder.set_cut(true);
    if shutdown_during_cut {
        // A stops its controllers at once and tries to release the Lease: the release waits
        // in the forwarder and times out.
        a.stop().await;
        assert!(!metrics_a.is_leader());
    } else {
        // A cannot renew: it must stop within its renew deadline (3 s) of its last renewal.
        let Running { stop: _stop, task } = a;
        let ended = tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("A stops when it cannot renew")
            .unwrap();
        assert!(
            matches!(ended, Err(controllers::Error::LeadershipLost)),
            "{ended:?}"
        );
        assert!(!metrics_a.is_leader(), "the leader metric says 0");
    }
    eventually("B takes over once A's lease has run out", || {
        metrics_b.is_leader() && holder(&server).as_deref() == Some("replica-b")
    })
    .await;
    let taken_over = server.requests().len();
    let lease_of_b = server
        .object("kube-system", "leases", "k8s-bootstrap-controllers")
        .unwrap();

    // Reconnected: A's requests from the cut reach the server now.
    forwarder.set_cut(false);
    eventually("every connection of A is closed", || forwarder.open() == 0).await;
    let late: Vec<_> = server.requests()[taken_over..]
        .iter()
        .filter(|r| r.user.as_deref() == Some("replica-a"))
        .cloned()
        .collect();
    // Whether a Lease write of A was in flight at the cut (and so arrives now) depends on
    // where in its retry period A was cut off; when one arrives it must fail like the rest.
    let late_lease_writes = late
        .iter()
        .filter(|r| r.method != "GET" && r.path.contains("/leases/"))
        .count();
    eprintln!("{late_lease_writes} Lease write(s) of A arrived late: {late:?}");
    for r in &late {
        assert!(
            r.method == "GET" || r.status >= 400,
            "a late request of A changed something: {r:?}"
        );
    }
    // B keeps the Lease and keeps renewing it.
    let rv = |lease: &Value| {
        lease["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    eventually("B renews after A's late requests", || {
        server
            .object("kube-system", "leases", "k8s-bootstrap-controllers")
            .is_some_and(|l| {
                l["spec"]["holderIdentity"] == "replica-b" && rv(&l) != rv(&lease_of_b)
            })
    })
    .await;
    assert!(metrics_b.is_leader());
    Api::<Secret>::namespaced(client_b, "kube-system")
        .create(
            &PostParams::default(),
            &token("ghijkl", keys["ghijkl"], &[]),
        )
        .await
        .unwrap();
    eventually("B signs", || signed(&server, &keys) == ["abcdef", "ghijkl"]).await;
    end_sampler(sampler).await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_stops_within_its_renew_deadline_and_its_late_writes_fail() {
    leader_cut_off(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_shut_down_while_cut_off_cannot_release_the_next_leaders_lease() {
    leader_cut_off(true).await;
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
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    // The sample line itself, not the metric's `# HELP` line.
    assert!(
        text.lines().any(|l| l == "k8s_bootstrap_leader 1"),
        "leader sample missing from:\n{text}"
    );
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF"
    );
    running.stop().await;
    let _ = stop_http.send(());
    http.await.unwrap().unwrap();
}
