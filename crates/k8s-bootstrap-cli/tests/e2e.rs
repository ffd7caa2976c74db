//! The command against a real cluster: runs only when `K8S_BOOTSTRAP_E2E_KUBECONFIG` names an
//! admin kubeconfig, and says it was skipped otherwise.
//!
//! `token create --print-join-command` (10-minute TTL), `token list`, `join` with the printed
//! parameters and `--node-name` (waiting up to two minutes for kube-controller-manager's
//! bootstrap signer, then for its CSR approver and signer to issue the node's certificate, as
//! kubeadm's `kubeadm:node-autoapprove-bootstrap` binding allows), kubectl with the written
//! kubeconfigs (when kubectl is installed: `auth whoami` as `system:node:<name>`),
//! `token delete`, the CSR deleted; and, with
//! the `controllers` feature, `k8s-bootstrap controllers` signing and cleaning tokens behind
//! leader election on a Lease of its own.
#![cfg(feature = "loopback-server")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "test code, which reads the wall clock"
)]

use std::process::Output;

use tokio::process::Command;

#[path = "support/process.rs"]
mod support;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const VAR: &str = "K8S_BOOTSTRAP_E2E_KUBECONFIG";

async fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap()
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn token_create_join_delete_against_a_real_cluster() {
    let Some(kubeconfig) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        println!(
            "skipped: {VAR} is not set (set it to an admin kubeconfig to run this test against that cluster)"
        );
        return;
    };
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path").to_owned();
    let out = run(&[
        "--kubeconfig",
        &kubeconfig,
        "token",
        "create",
        "--ttl",
        "10m",
        "--description",
        "k8s-bootstrap e2e test",
        "--print-join-command",
    ])
    .await;
    let line = ok("token create", &out);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["k8s-bootstrap", "join"], "{line}");
    let endpoint = words[2].to_owned();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag).unwrap();
        words[i + 1].to_owned()
    };
    let token = after("--token");
    let hash = after("--discovery-token-ca-cert-hash");
    let id = token.split('.').next().unwrap().to_owned();

    let listed = ok(
        "token list",
        &run(&["--kubeconfig", &kubeconfig, "token", "list"]).await,
    );
    assert!(listed.contains(&id), "{listed}");

    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("bootstrap-kubelet.conf");
    let kubelet_conf = dir.path().join("kubelet.conf");
    let cert_dir = dir.path().join("pki");
    // A node name no real node has; the certificate is for it alone.
    let node = format!("k8s-bootstrap-e2e-{id}");
    let joined = run(&[
        "join",
        &endpoint,
        "--token",
        &token,
        "--discovery-token-ca-cert-hash",
        &hash,
        "--discovery-timeout",
        "2m",
        "--tls-bootstrap-kubeconfig",
        written.to_str().unwrap(),
        "--node-name",
        &node,
        "--cert-dir",
        cert_dir.to_str().unwrap(),
        "--kubelet-kubeconfig",
        kubelet_conf.to_str().unwrap(),
        "--tls-bootstrap-timeout",
        "2m",
    ])
    .await;
    // Delete before asserting, so a failed join leaves no token behind.
    let deleted = run(&["--kubeconfig", &kubeconfig, "token", "delete", &id]).await;
    ok("join", &joined);
    ok("token delete", &deleted);
    assert!(written.exists());
    assert!(kubelet_conf.exists());

    match std::process::Command::new("kubectl")
        .args([
            "--kubeconfig",
            kubelet_conf.to_str().unwrap(),
            "auth",
            "whoami",
            "-o",
            "json",
        ])
        .output()
    {
        Ok(out) => {
            let review: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            // Clean up this node's request, and only it (kube-controller-manager would after
            // an hour): the CSRs filed by this test's token.
            let listed = std::process::Command::new("kubectl")
                .args(["--kubeconfig", &kubeconfig, "get", "csr", "-o", "json"])
                .output()
                .map(|o| o.stdout)
                .unwrap_or_default();
            let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap_or_default();
            let requester = format!("system:bootstrap:{id}");
            for csr in listed["items"].as_array().into_iter().flatten() {
                if csr["spec"]["username"] == requester.as_str()
                    && let Some(name) = csr["metadata"]["name"].as_str()
                {
                    let _ = std::process::Command::new("kubectl")
                        .args(["--kubeconfig", &kubeconfig, "delete", "csr", name])
                        .output();
                }
            }
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                review["status"]["userInfo"]["username"],
                format!("system:node:{node}"),
                "{review}"
            );
        }
        Err(_) => println!("kubectl not installed: the kubectl steps were skipped"),
    }

    match std::process::Command::new("kubectl")
        .args(["--kubeconfig", written.to_str().unwrap(), "version"])
        .output()
    {
        // The token is deleted by now: the server answers, and refuses the credential or
        // serves the version; either way kubectl reached the discovered server over TLS
        // verified against the discovered CA (a TLS failure would say "certificate").
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(!text.contains("certificate"), "{text}");
        }
        Err(_) => println!("kubectl not installed: the kubectl step was skipped"),
    }
}

/// `k8s-bootstrap controllers` against the cluster: with leader election on a Lease of its own,
/// it becomes leader, a new signing token gets its signature in cluster-info and an expired
/// token is deleted (on a kubeadm cluster kube-controller-manager's own controllers may get
/// there first; both write the same signature), its `/metrics` show its reconciles, and SIGTERM
/// stops it with exit code 0 after releasing the Lease.
#[cfg(feature = "controllers")]
#[tokio::test]
async fn controllers_sign_and_clean_against_a_real_cluster() {
    use std::time::Duration;

    use k8s_bootstrap::k8s_openapi::ByteString;
    use k8s_bootstrap::k8s_openapi::api::coordination::v1::Lease;
    use k8s_bootstrap::k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use k8s_bootstrap::kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let Some(kubeconfig) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        println!("skipped: {VAR} is not set");
        return;
    };
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path").to_owned();
    let config = k8s_bootstrap::kube::Config::from_custom_kubeconfig(
        k8s_bootstrap::kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = k8s_bootstrap::kube::Client::try_from(config).unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    let cluster_info: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");

    let id = |out: &str| out.trim().split('.').next().unwrap().to_owned();
    let new_id = id(&ok("token generate", &run(&["token", "generate"]).await));
    let old_id = id(&ok("token generate", &run(&["token", "generate"]).await));
    let token = |id: &str, extra: &[(&str, &str)]| {
        let mut data: std::collections::BTreeMap<String, ByteString> = [
            ("token-id", id),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-signing", "true"),
            ("description", "k8s-bootstrap e2e test"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
        .collect();
        data.retain(|_, v| !v.0.is_empty());
        Secret {
            metadata: ObjectMeta {
                name: Some(format!("bootstrap-token-{id}")),
                ..ObjectMeta::default()
            },
            type_: Some("bootstrap.kubernetes.io/token".to_owned()),
            data: Some(data),
            ..Secret::default()
        }
    };
    let lease_name = format!("k8s-bootstrap-e2e-{new_id}");
    // Its log goes to a file (read for the address the kernel gave its HTTP port).
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("controllers.log");
    let mut child = Command::new(BIN)
        .args([
            "--kubeconfig",
            &kubeconfig,
            "controllers",
            "--leader-elect=true",
            &format!("--leader-elect-resource-name={lease_name}"),
            "--http-address=127.0.0.1:0",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("POD_NAME", "e2e")
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = support::eventually_some("the controllers log their HTTP address", || {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .filter(|l| l.contains("serving /healthz"))
            .find_map(|l| support::addr_field(l, "local"))
    })
    .await;
    let metrics = || async move {
        let mut s = tokio::net::TcpStream::connect(http).await.ok()?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        Some(out)
    };
    let wait = |what: &'static str| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        move || {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(200))
        }
    };
    let tick = wait("leading");
    while !metrics()
        .await
        .is_some_and(|m| m.contains("k8s_bootstrap_leader 1"))
    {
        tick().await;
    }
    secrets
        .create(&PostParams::default(), &token(&new_id, &[]))
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &token(&old_id, &[("expiration", "2020-01-01T00:00:00Z")]),
        )
        .await
        .unwrap();
    let tick = wait("signed");
    while !cluster_info
        .get("cluster-info")
        .await
        .unwrap()
        .data
        .unwrap_or_default()
        .contains_key(&format!("jws-kubeconfig-{new_id}"))
    {
        tick().await;
    }
    let tick = wait("expired token deleted");
    while secrets
        .get_opt(&format!("bootstrap-token-{old_id}"))
        .await
        .unwrap()
        .is_some()
    {
        tick().await;
    }
    let m = metrics().await.unwrap();
    assert!(
        !m.contains("k8s_bootstrap_reconciles_total{controller=\"bootstrapsigner\"} 0"),
        "{m}"
    );

    let pid = child.id().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let lease = leases.get(&lease_name).await.unwrap();
    // Released as client-go releases a Lease: an empty holder identity.
    let holder = lease.spec.and_then(|s| s.holder_identity);
    assert!(
        holder.as_deref().unwrap_or_default().is_empty(),
        "the Lease is released: {holder:?}"
    );
    let _ = leases.delete(&lease_name, &DeleteParams::default()).await;
    let _ = secrets
        .delete(
            &format!("bootstrap-token-{new_id}"),
            &DeleteParams::default(),
        )
        .await;
}

/// `k8s-bootstrap forward-proxy --audience-from-services` against the cluster: a Service made
/// for the test, selecting the labels the proxy is given, makes `default/<service>` an
/// accepted audience; a token for another audience is refused.
#[cfg(feature = "sidecar")]
#[tokio::test]
async fn forward_proxy_learns_audiences_from_a_real_cluster() {
    use std::time::{Duration, SystemTime};

    use k8s_bootstrap::addon_jwt::{Audience, Issuer, Minter, SigningKey};
    use k8s_bootstrap::k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
    use k8s_bootstrap::kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
    let Some(kubeconfig) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        println!("skipped: {VAR} is not set");
        return;
    };
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path").to_owned();
    let config = k8s_bootstrap::kube::Config::from_custom_kubeconfig(
        k8s_bootstrap::kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = k8s_bootstrap::kube::Client::try_from(config).unwrap();
    let services: Api<Service> = Api::namespaced(client, "default");
    let id = ok("token generate", &run(&["token", "generate"]).await)
        .trim()
        .split('.')
        .next()
        .unwrap()
        .to_owned();
    let name = format!("k8s-bootstrap-e2e-{id}");
    services
        .create(
            &PostParams::default(),
            &Service {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(ServiceSpec {
                    selector: Some([("k8s-bootstrap-e2e".to_owned(), id.clone())].into()),
                    ports: Some(vec![ServicePort {
                        port: 80,
                        ..ServicePort::default()
                    }]),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            },
        )
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels");
    std::fs::write(&labels, format!("k8s-bootstrap-e2e=\"{id}\"\n")).unwrap();
    let key = dir.path().join("key.pem");
    let signing = SigningKey::from_pkcs8_pem(KEY).unwrap();
    std::fs::write(&key, signing.public_key_pem().unwrap()).unwrap();
    let addon = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = addon.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = addon.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
            });
        }
    });
    // On ports the kernel picks: the proxy's `listening` line gives them.
    let mut command = Command::new(BIN);
    command
        .args([
            "forward-proxy",
            "--insecure-listen-address=127.0.0.1:0",
            &format!("--forward={upstream}"),
            "--issuer=https://kubernetes.default.svc",
            "--audience-from-services",
            "--pod-namespace=default",
            &format!("--pod-labels-file={}", labels.display()),
            &format!("--public-key-file={}", key.display()),
            "--algorithm=EdDSA",
            "--http-address=127.0.0.1:0",
        ])
        .env("KUBECONFIG", &kubeconfig);
    let mut proxy = support::spawn_proxy(command).await;
    let listen = proxy.listen;
    let mut minter = Minter::new(signing, Issuer::new("https://kubernetes.default.svc"));
    let mut status = |audience: String| {
        let token = minter
            .mint("e2e", &Audience::new(audience), SystemTime::now())
            .unwrap()
            .expose_secret()
            .to_owned();
        async move {
            let mut s = tokio::net::TcpStream::connect(listen).await.ok()?;
            s.write_all(
                format!("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .ok()?;
            let mut out = String::new();
            s.read_to_string(&mut out).await.ok()?;
            out.get(9..12)?.parse::<u16>().ok()
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while status(format!("default/{name}")).await != Some(200) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Service's audience is never accepted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status("default/kubernetes".to_owned()).await, Some(403));
    proxy.child.kill().await.unwrap();
    services
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}
