//! Rotation under lifetimes of seconds: the double issues every certificate for
//! [`LIFETIME`] (its test-only `test_certificate_lifetime`), and two managers keep a node's
//! client and serving certificates current through several rotations each, each new pair
//! signed before the old one expires, while concurrent loops use the current pairs the whole
//! time: API requests authenticated with the client pair, TLS handshakes with a server on the
//! serving pair (verified against the cluster CA under the node's name), and reads of both
//! `-current.pem` files. None of them may fail, and no read may find a half-written file.
//! The managers' TTL gauges say `+Inf` before the first certificate and never go negative
//! after it.

#![cfg(all(unix, feature = "tls-bootstrap"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use k8s_bootstrap::node_certificates::{
    CLIENT_TTL_METRIC, CertificateKind, CertificateMetrics, CertificateStore, Clients, LoadedPair,
    Manager, SERVER_TTL_METRIC, ServingResolver, Snapshot, client_for_pair,
};
use k8s_bootstrap::tls_bootstrap::rotation::Bootstrap;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use kube::api::{Api, ListParams, PostParams};
use loopback_apiserver::LoopbackApiServer;
use tokio::sync::watch;

use super::loopback_csr_controllers::{admin, token_client};
use super::node_certificate_manager::{
    BOOTSTRAPPERS, config_from_yaml, decide, served_certificate,
};

/// Every certificate's lifetime: the rotation deadline (70 % to 90 % of it) leaves 0.8 s to
/// 2.4 s for a rotation, room for a loaded 2-core machine.
const LIFETIME: Duration = Duration::from_secs(8);
/// Certificates each manager installs: the first, then four rotations (the loops start after
/// the first, so they see at least three).
const INSTALLS: u64 = 5;
/// The bound on the whole run (about 5 × 6.5 s when unloaded).
const RUN_WITHIN: Duration = Duration::from_secs(180);
/// The pause between two uses of a pair in each loop.
const LOOP_PAUSE: Duration = Duration::from_millis(50);

/// What one loop did: how many uses succeeded, and every failure.
#[derive(Debug, Default)]
struct Uses {
    ok: u64,
    failures: Vec<String>,
}

/// Each pair a manager published, as `(notBefore, notAfter)`, in order, and the most failed
/// attempts it reported at once; until `stop`.
async fn watch_installs(
    mut rx: watch::Receiver<Snapshot>,
    stop: Arc<AtomicBool>,
) -> (Vec<(SystemTime, SystemTime)>, u32) {
    let mut installs: Vec<(SystemTime, SystemTime)> = Vec::new();
    let mut most_failures = 0;
    while !stop.load(Ordering::Acquire) {
        {
            let snapshot = rx.borrow_and_update();
            most_failures = most_failures.max(snapshot.failed_attempts());
            if let Some(pair) = snapshot.pair() {
                let cert = pair.certificate();
                let dates = (cert.not_before(), cert.not_after());
                if installs.last() != Some(&dates) {
                    installs.push(dates);
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(200), rx.changed()).await;
    }
    (installs, most_failures)
}

/// The sample of gauge `name` in Prometheus text.
fn sample<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_and_serving_certificates_of_seconds_rotate_with_no_failed_use() {
    let server = LoopbackApiServer::builder()
        .test_certificate_lifetime(LIFETIME)
        .start()
        .await
        .unwrap();
    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let dir = tempfile::tempdir().unwrap();
    let node = || "worker-1".parse().unwrap();

    // The client certificate: the first with a bootstrap token, the next with the current one
    // (the double approves both, as kube-controller-manager with kubeadm's RBAC).
    let bootstrap = token_client(&server, "abcdef", BOOTSTRAPPERS).await;
    let client_store = CertificateStore::new("kubelet-client", dir.path()).unwrap();
    let (_client_templates, rx) = watch::channel(Some(CertificateKind::Client { node: node() }));
    let client_manager = Manager::new(
        client_store.clone(),
        Clients::from_config(config.clone()).with_bootstrap(bootstrap, Bootstrap::Present),
        rx,
    );
    let mut client_pairs = client_manager.subscribe();
    let metrics = CertificateMetrics::new().with_client(client_manager.subscribe());
    assert_eq!(sample(&metrics.encode(), CLIENT_TTL_METRIC), Some("+Inf"));
    let client_task = tokio::spawn(client_manager.run());
    let first = tokio::time::timeout(RUN_WITHIN, client_pairs.wait_for(|s| s.pair().is_some()))
        .await
        .expect("no client certificate in time")
        .unwrap()
        .pair()
        .cloned()
        .unwrap();

    // The serving certificate, requested as the kubelet does, with the client certificate in
    // use at each request (the first one for the first request).
    let (for_serving, serving_config) = (client_pairs.clone(), config.clone());
    let current_client = move |_: &LoadedPair| -> Result<kube::Client, String> {
        let pair = for_serving
            .borrow()
            .pair()
            .cloned()
            .ok_or("no client certificate")?;
        client_for_pair(&serving_config, &pair).map_err(|e| e.to_string())
    };
    let first_client = client_for_pair(&config, &first).unwrap();
    let serving_store = CertificateStore::new("kubelet-server", dir.path()).unwrap();
    let (_serving_templates, rx) = watch::channel(Some(CertificateKind::Serving {
        node: node(),
        dns_names: vec!["worker-1".to_owned()],
        ip_addresses: vec!["127.0.0.1".parse().unwrap()],
    }));
    let serving_manager = Manager::new(
        serving_store.clone(),
        Clients::new(current_client).with_bootstrap(first_client, Bootstrap::Present),
        rx,
    );
    let mut serving_pairs = serving_manager.subscribe();
    let resolver = ServingResolver::new(serving_manager.subscribe()).unwrap();
    let metrics = metrics.with_server(serving_manager.subscribe());
    assert_eq!(sample(&metrics.encode(), SERVER_TTL_METRIC), Some("+Inf"));
    let serving_task = tokio::spawn(serving_manager.run());

    let stop = Arc::new(AtomicBool::new(false));
    // Nothing approves serving requests on its own: the test approves each one it sees.
    let approver = {
        let (api, stop) = (Api::<ApiCsr>::all(admin(&server).await), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                if let Ok(list) = api.list(&ListParams::default()).await {
                    for csr in list.items {
                        let pending = csr
                            .status
                            .as_ref()
                            .is_none_or(|s| s.conditions.as_ref().is_none_or(|c| c.is_empty()));
                        if pending && csr.spec.signer_name == "kubernetes.io/kubelet-serving" {
                            decide(&api, csr.metadata.name.as_ref().unwrap(), "Approved").await;
                        }
                    }
                }
                tokio::time::sleep(LOOP_PAUSE).await;
            }
        })
    };
    tokio::time::timeout(RUN_WITHIN, serving_pairs.wait_for(|s| s.pair().is_some()))
        .await
        .expect("no serving certificate in time")
        .unwrap();
    let client_installs = tokio::spawn(watch_installs(client_pairs.clone(), stop.clone()));
    let serving_installs = tokio::spawn(watch_installs(serving_pairs.clone(), stop.clone()));

    // A TLS server on the serving pair the manager holds at each handshake.
    let tls_config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_cert_resolver(Arc::new(resolver));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tls_addr = listener.local_addr().unwrap();
    let tls_server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    use tokio::io::AsyncReadExt as _;
                    let mut byte = [0u8; 1];
                    let _ = tls.read(&mut byte).await;
                }
            });
        }
    });

    // The API loop: who am I, with the client pair in use now.
    let api_loop = {
        let (rx, stop, config) = (client_pairs.clone(), stop.clone(), config.clone());
        tokio::spawn(async move {
            let mut uses = Uses::default();
            while !stop.load(Ordering::Acquire) {
                let pair = rx.borrow().pair().cloned().unwrap();
                let client = client_for_pair(&config, &pair).unwrap();
                let review = Api::<SelfSubjectReview>::all(client)
                    .create(&PostParams::default(), &SelfSubjectReview::default())
                    .await;
                let user = review
                    .as_ref()
                    .ok()
                    .and_then(|r| r.status.as_ref()?.user_info.as_ref()?.username.clone());
                if user.as_deref() == Some("system:node:worker-1") {
                    uses.ok += 1;
                } else {
                    uses.failures
                        .push(format!("{:?}", review.map(|r| r.status)));
                }
                tokio::time::sleep(LOOP_PAUSE).await;
            }
            uses
        })
    };
    // The TLS loop: a handshake verified against the cluster CA under the node's name.
    let tls_loop = {
        let (stop, ca) = (stop.clone(), server.ca_pem().to_owned());
        tokio::spawn(async move {
            let mut uses = Uses::default();
            while !stop.load(Ordering::Acquire) {
                match served_certificate(tls_addr, &ca, "worker-1").await {
                    Ok(_) => uses.ok += 1,
                    Err(e) => uses.failures.push(e.to_string()),
                }
                tokio::time::sleep(LOOP_PAUSE).await;
            }
            uses
        })
    };
    // The file loop: both -current.pem files, read through stores of their own, always hold a
    // whole certificate and its matching key (the store checks that the key matches); and the
    // gauges stay within the lifetime, never negative.
    let file_loop = {
        let (stop, metrics) = (stop.clone(), metrics.clone());
        let longest = i64::try_from(LIFETIME.as_secs()).unwrap();
        let stores = [
            CertificateStore::new("kubelet-client", dir.path()).unwrap(),
            CertificateStore::new("kubelet-server", dir.path()).unwrap(),
        ];
        tokio::task::spawn_blocking(move || {
            let mut uses = Uses::default();
            while !stop.load(Ordering::Acquire) {
                for store in &stores {
                    match store.load() {
                        Ok(Some(_)) => uses.ok += 1,
                        Ok(None) => uses.failures.push("no pair".to_owned()),
                        Err(e) => uses.failures.push(e.to_string()),
                    }
                }
                let text = metrics.encode();
                for name in [CLIENT_TTL_METRIC, SERVER_TTL_METRIC] {
                    let ttl: Option<i64> = sample(&text, name).and_then(|v| v.parse().ok());
                    if !ttl.is_some_and(|t| (0..=longest).contains(&t)) {
                        uses.failures.push(format!("{name}: {ttl:?} in\n{text}"));
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            uses
        })
    };

    let rotated = |s: &Snapshot| s.rotations() >= INSTALLS;
    let both = async {
        client_pairs.wait_for(rotated).await.unwrap();
        serving_pairs.wait_for(rotated).await.unwrap();
    };
    let in_time = tokio::time::timeout(RUN_WITHIN, both).await;
    stop.store(true, Ordering::Release);
    let api = api_loop.await.unwrap();
    let tls = tls_loop.await.unwrap();
    let files = file_loop.await.unwrap();
    let (client_installs, client_failures) = client_installs.await.unwrap();
    let (serving_installs, serving_failures) = serving_installs.await.unwrap();
    assert!(
        in_time.is_ok(),
        "fewer than {INSTALLS} installs each in time: client {:?}, serving {:?}; last failures {:?}, {:?}",
        client_installs,
        serving_installs,
        client_pairs.borrow().last_failure(),
        serving_pairs.borrow().last_failure()
    );

    for (what, uses) in [("API", &api), ("TLS", &tls), ("file", &files)] {
        assert!(
            uses.failures.is_empty(),
            "{what}: {} failed uses, {} good: {:?}",
            uses.failures.len(),
            uses.ok,
            uses.failures
        );
        // At least one use per second of the run, about.
        assert!(uses.ok >= 20, "{what}: only {} uses", uses.ok);
    }
    for (what, installs, failures) in [
        ("client", &client_installs, client_failures),
        ("serving", &serving_installs, serving_failures),
    ] {
        assert_eq!(failures, 0, "{what}: a rotation attempt failed");
        // The first seen, then at least three rotations.
        assert!(installs.len() >= 4, "{what}: {installs:?}");
        for pair in installs.windows(2) {
            let ((_, old_not_after), (new_not_before, new_not_after)) = (pair[0], pair[1]);
            // Issued for the double's lifetime, to the second.
            assert_eq!(
                new_not_after.duration_since(new_not_before).unwrap(),
                LIFETIME
            );
            // Signed (and so installed after) no later than the old one's last valid second,
            // and never too early: past 70 % of the old one's life.
            assert!(new_not_before <= old_not_after, "{what}: {pair:?}");
            assert!(
                old_not_after.duration_since(new_not_before).unwrap()
                    <= LIFETIME * 3 / 10 + Duration::from_secs(1),
                "{what}: rotated too early: {pair:?}"
            );
        }
    }
    // Every pair file the managers wrote is kept; -current.pem names the newest.
    let written = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.starts_with("kubelet-server-2"))
        .count();
    assert!(written >= 4, "{written}");

    tls_server.abort();
    approver.abort();
    client_task.abort();
    serving_task.abort();
    server.shutdown().await;
}

/// The gauges' values outside rotation: `+Inf` without a certificate, none for a manager not
/// given, and negative whole seconds for a certificate that expired (a manager that cannot
/// replace it still publishes it).
#[tokio::test]
async fn the_ttl_gauges_are_infinite_without_a_certificate_and_negative_once_it_expired() {
    assert_eq!(CertificateMetrics::new().encode(), "");
    assert_eq!(
        Snapshot::default().ttl_seconds(SystemTime::now()),
        f64::INFINITY
    );

    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new("kubelet-client", dir.path()).unwrap();
    // Issued a year and a day ago for a year: expired a day ago.
    let issued_at = SystemTime::now() - Duration::from_secs(366 * 86400);
    let (cert, key) = server
        .issue_client_certificate_at("system:node:worker-1", &["system:nodes"], issued_at)
        .unwrap();
    store
        .update(format!("{cert}{key}").as_bytes(), issued_at)
        .unwrap();
    // No credential can replace it: the manager keeps publishing it.
    let clients = Clients::new(|_| Err("no credential in this test".to_owned()));
    let (_templates, rx) = watch::channel(Some(CertificateKind::Client {
        node: "worker-1".parse().unwrap(),
    }));
    let manager = Manager::new(store, clients, rx);
    let mut snapshots = manager.subscribe();
    let metrics = CertificateMetrics::new().with_client(manager.subscribe());
    let text = metrics.encode();
    assert_eq!(sample(&text, CLIENT_TTL_METRIC), Some("+Inf"), "{text}");
    assert!(
        text.contains(&format!("# TYPE {CLIENT_TTL_METRIC} gauge")),
        "{text}"
    );
    assert!(!text.contains(SERVER_TTL_METRIC), "{text}");
    let task = tokio::spawn(manager.run());
    tokio::time::timeout(RUN_WITHIN, snapshots.wait_for(|s| s.pair().is_some()))
        .await
        .expect("the pair was not published in time")
        .unwrap();
    let ttl: i64 = sample(&metrics.encode(), CLIENT_TTL_METRIC)
        .unwrap()
        .parse()
        .unwrap();
    assert!((-86_400 - 120..=-86_400).contains(&ttl), "{ttl}");
    let exact = snapshots.borrow().ttl_seconds(SystemTime::now());
    assert!(exact <= -86_400.0 && exact.fract() == 0.0, "{exact}");
    task.abort();
    server.shutdown().await;
}
