//! Client certificates, SelfSubjectReviews and CertificateSigningRequests on the loopback API
//! server, with `kube::Client` and the installed `kubectl`.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use futures_util::StreamExt as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
    CertificateSigningRequestStatus,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::{Error, LoopbackApiServer};
use serde_json::{Value, json};

use crate::support::kubectl::{kubectl, stderr, stdout, write};

const ID: &str = "abcdef";
const SECRET: &str = "0123456789abcdef";
const KUBELET_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

async fn client_from_yaml(yaml: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(yaml).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

async fn client_with_token(server: &LoopbackApiServer, token: &str) -> Client {
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), token);
    client_from_yaml(&yaml).await
}

async fn admin(server: &LoopbackApiServer) -> Client {
    client_with_token(server, server.admin_token()).await
}

async fn client_with_certificate(server: &LoopbackApiServer, cert: &str, key: &str) -> Client {
    client_from_yaml(&server.kubeconfig_with_client_certificate(cert, key)).await
}

/// A bootstrap token Secret for `abcdef.0123456789abcdef`, as `kubeadm token create` writes it.
fn token_secret() -> Secret {
    let data: BTreeMap<String, String> = [
        ("token-id", ID),
        ("token-secret", SECRET),
        ("expiration", "2999-01-01T00:00:00Z"),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("bootstrap-token-{ID}")),
            ..Default::default()
        },
        type_: Some("bootstrap.kubernetes.io/token".to_owned()),
        string_data: Some(data),
        ..Default::default()
    }
}

/// A PKCS #10 request (ECDSA P-256) for `CN=cn, O=org`, as PEM.
fn request_pem(cn: &str, org: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    params.serialize_request(&key).unwrap().pem().unwrap()
}

/// `pem` with the last byte of its DER (inside the signature) flipped.
fn tampered(pem: &str) -> String {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let mut der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    *der.last_mut().unwrap() ^= 0x01;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        lines.join("\n")
    )
}

fn csr(name: &str, request: &str) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request.as_bytes().to_vec()),
            signer_name: KUBELET_SIGNER.to_owned(),
            usages: Some(vec![
                "digital signature".to_owned(),
                "client auth".to_owned(),
            ]),
            // The server replaces what the client claims.
            username: Some("mallory".to_owned()),
            groups: Some(vec!["system:masters".to_owned()]),
            ..Default::default()
        },
        // Nobody may create a pre-approved request: the status is cleared.
        status: Some(CertificateSigningRequestStatus {
            conditions: Some(vec![condition("Approved")]),
            ..Default::default()
        }),
    }
}

fn condition(type_: &str) -> CertificateSigningRequestCondition {
    CertificateSigningRequestCondition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: Some("LoopbackTest".to_owned()),
        message: Some(format!("{type_} by the test")),
        ..Default::default()
    }
}

fn api_error(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn types(csr: &CertificateSigningRequest) -> Vec<String> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().map(|c| c.type_.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn csr_lifecycle_with_kube_client() {
    let server = LoopbackApiServer::builder()
        // Approval and certificates by hand here; the automatic ones are tested in
        // cli_tls_bootstrap and below.
        .csr_approver(false)
        .csr_signer(false)
        .start()
        .await
        .unwrap();
    let admin = admin(&server).await;
    Api::<Secret>::namespaced(admin.clone(), "kube-system")
        .create(&PostParams::default(), &token_secret())
        .await
        .unwrap();
    let joiner: Api<CertificateSigningRequest> =
        Api::all(client_with_token(&server, &format!("{ID}.{SECRET}")).await);
    let csrs: Api<CertificateSigningRequest> = Api::all(admin);

    // Created by the bootstrap token's user: the server names the requester.
    let created = joiner
        .create(
            &PostParams::default(),
            &csr(
                "node-csr-1",
                &request_pem("system:node:worker-1", "system:nodes"),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        created.spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    assert_eq!(
        created.spec.groups.as_deref().unwrap(),
        [
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated"
        ]
    );
    assert!(created.spec.uid.is_none() && created.spec.extra.is_none());
    assert!(types(&created).is_empty());
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv = created.metadata.resource_version.clone().unwrap();

    // The joiner may read and list its request, but not approve it.
    joiner.get("node-csr-1").await.unwrap();
    assert_eq!(
        joiner
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let patch = json!({"status": {"conditions": [condition("Approved")]}});
    let e = api_error(
        joiner
            .patch_approval("node-csr-1", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "certificatesigningrequests.certificates.k8s.io \"node-csr-1\" is forbidden: User \"system:bootstrap:abcdef\" cannot patch resource \"certificatesigningrequests/approval\" in API group \"certificates.k8s.io\" at the cluster scope"
    );
    let e = api_error(
        joiner
            .delete("node-csr-1", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);

    let mut events = csrs
        .watch(&kube::api::WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();

    // The admin approves through the approval subresource; the server stamps the condition.
    let approved = csrs
        .patch_approval("node-csr-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(types(&approved), ["Approved"]);
    let c = &approved
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()[0];
    assert!(c.last_update_time.is_some() && c.last_transition_time.is_some());
    assert_eq!(approved.spec, created.spec);

    // Approval through the status subresource, or a certificate through the approval one, is
    // refused.
    let e = api_error(
        csrs.patch_status(
            "node-csr-1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [condition("Approved"), condition("Denied")]}}),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message.contains(
            "status.conditions: Forbidden: updates may not add a condition of type \"Denied\""
        ),
        "{}",
        e.message
    );

    // The signer's part: the certificate through the status subresource.
    let (issued, _key) = server
        .issue_client_certificate("system:node:worker-1", &["system:nodes"])
        .unwrap();
    let mut with_cert = approved.clone();
    with_cert.status.as_mut().unwrap().certificate = Some(ByteString(issued.as_bytes().to_vec()));
    let signed = csrs
        .replace_status("node-csr-1", &PostParams::default(), &with_cert)
        .await
        .unwrap();
    assert_eq!(
        signed
            .status
            .as_ref()
            .unwrap()
            .certificate
            .as_ref()
            .unwrap()
            .0,
        issued.as_bytes()
    );
    assert_eq!(types(&signed), ["Approved"]);

    // Once set, the certificate is immutable.
    let (other, _key) = server
        .issue_client_certificate("system:node:worker-2", &["system:nodes"])
        .unwrap();
    let mut again = signed.clone();
    again.status.as_mut().unwrap().certificate = Some(ByteString(other.as_bytes().to_vec()));
    let e = api_error(
        csrs.replace_status("node-csr-1", &PostParams::default(), &again)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "CertificateSigningRequest.certificates.k8s.io \"node-csr-1\" is invalid: status.certificate: Forbidden: updates may not modify existing certificate content"
    );

    // Approved and Denied exclude each other; conditions are never removed.
    let both = json!({"status": {"conditions": [condition("Approved"), condition("Denied")]}});
    let e = api_error(
        csrs.patch_approval("node-csr-1", &PatchParams::default(), &Patch::Merge(&both))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "CertificateSigningRequest.certificates.k8s.io \"node-csr-1\" is invalid: status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
    );
    let details = e.details.unwrap();
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("certificates.k8s.io", "CertificateSigningRequest")
    );
    let none = json!({"status": {"conditions": []}});
    let e = api_error(
        csrs.patch_approval("node-csr-1", &PatchParams::default(), &Patch::Merge(&none))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "CertificateSigningRequest.certificates.k8s.io \"node-csr-1\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
    );
    let not_true = json!({"status": {"conditions": [{"type": "Approved", "status": "False"}]}});
    let e = api_error(
        csrs.patch_approval(
            "node-csr-1",
            &PatchParams::default(),
            &Patch::Merge(&not_true),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        e.message.contains(
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
        ),
        "{}",
        e.message
    );

    // An update of the object itself changes only its metadata.
    let mut relabelled = signed.clone();
    relabelled.metadata.labels = Some(BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    relabelled.spec.username = Some("mallory".to_owned());
    relabelled.status = None;
    let updated = csrs
        .replace("node-csr-1", &PostParams::default(), &relabelled)
        .await
        .unwrap();
    assert_eq!(updated.spec, signed.spec);
    assert_eq!(updated.status, signed.status);
    assert_eq!(updated.metadata.labels, relabelled.metadata.labels);

    // The watch saw approval, signing and relabelling, in order.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let next = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match next {
            WatchEvent::Modified(c) => seen.push(c),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(types(&seen[0]), ["Approved"]);
    assert!(seen[0].status.as_ref().unwrap().certificate.is_none());
    assert!(seen[1].status.as_ref().unwrap().certificate.is_some());
    assert!(seen[2].metadata.labels.is_some());

    csrs.delete("node-csr-1", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        server
            .object("", "certificatesigningrequests", "node-csr-1")
            .is_none()
    );
}

#[tokio::test]
async fn csr_validation_on_create() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(admin(&server).await);
    let invalid = |e: kube::Error| {
        let s = api_error(e);
        assert_eq!(
            (s.code, s.reason.as_str()),
            (422, "Invalid"),
            "{}",
            s.message
        );
        s.message
    };

    // Not a CERTIFICATE REQUEST block.
    let (cert, _key) = server.issue_client_certificate("someone", &[]).unwrap();
    let message = invalid(
        csrs.create(&PostParams::default(), &csr("a-cert", &cert))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        message,
        "CertificateSigningRequest.certificates.k8s.io \"a-cert\" is invalid: spec.request: Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST"
    );

    // A request whose signature does not verify.
    let message = invalid(
        csrs.create(
            &PostParams::default(),
            &csr("tampered", &tampered(&request_pem("x", "y"))),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        message.ends_with(
            "spec.request: Invalid value: []byte{...}: x509: ECDSA verification failure"
        ),
        "{message}"
    );

    // No usages, no signer, too short a duration: every error at once.
    let mut bare = csr("bare", &request_pem("x", "y"));
    bare.spec.usages = None;
    bare.spec.signer_name = String::new();
    bare.spec.expiration_seconds = Some(300);
    let message = invalid(
        csrs.create(&PostParams::default(), &bare)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        message,
        "CertificateSigningRequest.certificates.k8s.io \"bare\" is invalid: [spec.usages: Required value, spec.signerName: Required value, spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 600 seconds (10 minutes)]"
    );

    // An unknown usage, and a signer name that is not `<domain>/<path>`.
    let mut odd = csr("odd", &request_pem("x", "y"));
    odd.spec.usages = Some(vec!["client auth".to_owned(), "flying".to_owned()]);
    odd.spec.signer_name = "no-slash".to_owned();
    let message = invalid(csrs.create(&PostParams::default(), &odd).await.unwrap_err());
    assert!(
        message.contains("spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\""),
        "{message}"
    );
    assert!(
        message.contains("spec.signerName: Invalid value: \"no-slash\": must be a fully qualified domain and path of the form 'example.com/signer-name'"),
        "{message}"
    );

    // Nothing was stored; a valid request is.
    assert!(
        csrs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let mut fine = csr("fine", &request_pem("x", "y"));
    fine.spec.expiration_seconds = Some(600);
    let stored = csrs.create(&PostParams::default(), &fine).await.unwrap();
    assert_eq!(stored.spec.username.as_deref(), Some("loopback-admin"));
    assert_eq!(
        stored.spec.groups.as_deref().unwrap(),
        ["system:masters", "system:authenticated"]
    );
    // Server-side apply that creates a request names the requester too.
    let mut applied = csr("applied", &request_pem("x", "y"));
    applied.status = None;
    let stored = csrs
        .patch(
            "applied",
            &PatchParams::apply("loopback-test"),
            &Patch::Apply(&applied),
        )
        .await
        .unwrap();
    assert_eq!(stored.spec.username.as_deref(), Some("loopback-admin"));

    let e = api_error(
        csrs.create(&PostParams::default(), &fine)
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        e.message,
        "certificatesigningrequests.certificates.k8s.io \"fine\" already exists"
    );
    let e = api_error(csrs.get("missing").await.unwrap_err());
    assert_eq!(
        e.message,
        "certificatesigningrequests.certificates.k8s.io \"missing\" not found"
    );
}

#[tokio::test]
async fn client_certificates_authenticate_as_kube_apiserver_does() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let (cert, key) = server
        .issue_client_certificate("alice", &["team-a", "team-b"])
        .unwrap();
    let alice = client_with_certificate(&server, &cert, &key).await;
    let reviews: Api<SelfSubjectReview> = Api::all(alice.clone());
    let review = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let info = review.status.unwrap().user_info.unwrap();
    assert_eq!(info.username.as_deref(), Some("alice"));
    assert_eq!(
        info.groups.as_deref().unwrap(),
        ["team-a", "team-b", "system:authenticated"]
    );
    assert!(info.uid.is_none());
    let extra = info.extra.unwrap();
    let ids = &extra["authentication.kubernetes.io/credential-id"];
    assert_eq!(ids.len(), 1);
    assert!(ids[0].starts_with("X509SHA256=") && ids[0].len() == 11 + 64);
    assert_eq!(
        server.requests().last().unwrap().user.as_deref(),
        Some("alice")
    );

    // Alice is no master: Secrets are forbidden, by name.
    let e = api_error(
        Api::<Secret>::namespaced(alice, "kube-system")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    assert!(e.message.contains("User \"alice\" cannot list"));

    // x509 comes before the token authenticators: with both, the certificate names the user,
    // and the token is not even checked.
    for token in [server.admin_token().to_owned(), "not-a-token".to_owned()] {
        let yaml = server
            .kubeconfig_with_client_certificate(&cert, &key)
            .replace(
                "    client-key-data:",
                &format!("    token: {token}\n    client-key-data:"),
            );
        let review = Api::<SelfSubjectReview>::all(client_from_yaml(&yaml).await)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap();
        assert_eq!(
            review
                .status
                .unwrap()
                .user_info
                .unwrap()
                .username
                .as_deref(),
            Some("alice")
        );
    }

    // A node certificate may create CertificateSigningRequests (renewal), as itself.
    let (node_cert, node_key) = server
        .issue_client_certificate("system:node:worker-1", &["system:nodes"])
        .unwrap();
    let node: Api<CertificateSigningRequest> =
        Api::all(client_with_certificate(&server, &node_cert, &node_key).await);
    let renewal = node
        .create(
            &PostParams::default(),
            &csr(
                "renewal",
                &request_pem("system:node:worker-1", "system:nodes"),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        renewal.spec.username.as_deref(),
        Some("system:node:worker-1")
    );
    assert_eq!(
        renewal.spec.groups.as_deref().unwrap(),
        ["system:nodes", "system:authenticated"]
    );
    assert!(
        renewal.spec.extra.unwrap()["authentication.kubernetes.io/credential-id"][0]
            .starts_with("X509SHA256=")
    );

    // A certificate from another CA: the handshake takes it (kube-apiserver asks with Go's
    // `tls.RequestClientCert`), the x509 authenticator refuses it, and with no token to fall
    // back on the request is 401, not anonymous.
    let (foreign_cert, foreign_key) = foreign_client_certificate("alice");
    let foreign = client_with_certificate(&server, &foreign_cert, &foreign_key).await;
    let e = api_error(
        Api::<SelfSubjectReview>::all(foreign)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (401, "Unauthorized"));
    // A token after the refused certificate still authenticates the request.
    let yaml = server
        .kubeconfig_with_client_certificate(&foreign_cert, &foreign_key)
        .replace(
            "    client-key-data:",
            &format!("    token: {}\n    client-key-data:", server.admin_token()),
        );
    let review = Api::<SelfSubjectReview>::all(client_from_yaml(&yaml).await)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    assert_eq!(
        review
            .status
            .unwrap()
            .user_info
            .unwrap()
            .username
            .as_deref(),
        Some("loopback-admin")
    );

    // At most two organizations.
    assert!(matches!(
        server.issue_client_certificate("x", &["a", "b", "c"]),
        Err(Error::TooManyOrganizations { max: 2 })
    ));
}

/// A client certificate and key from a CA the server does not know, as PEM.
fn foreign_client_certificate(cn: &str) -> (String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "some other CA");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    (cert.pem(), key.serialize_pem())
}

// ---- kubectl ----

/// The table row that starts with `name`, split into cells.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn csr_manifest(name: &str, expiration_seconds: u32) -> String {
    let request = base64::engine::general_purpose::STANDARD
        .encode(request_pem("system:node:worker-1", "system:nodes"));
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: {KUBELET_SIGNER}\n  expirationSeconds: {expiration_seconds}\n  usages:\n  - digital signature\n  - client auth\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_lists_and_approves_csrs() {
    let server = LoopbackApiServer::builder()
        // Approval and certificates by hand here; the automatic ones are tested in
        // cli_tls_bootstrap and below.
        .csr_approver(false)
        .csr_signer(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());

    let manifest = write(dir.path(), "csr.yaml", &csr_manifest("demo", 86_400));
    let out = kubectl(&kc, &["create", "-f", manifest.to_str().unwrap()]).await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        "certificatesigningrequest.certificates.k8s.io/demo created"
    );
    let manifest = write(dir.path(), "other.yaml", &csr_manifest("other", 3_600));
    let out = kubectl(&kc, &["create", "-f", manifest.to_str().unwrap()]).await;
    assert!(out.status.success());

    // kube-apiserver's columns and cells.
    let out = kubectl(&kc, &["get", "csr"]).await;
    assert!(out.status.success());
    let table = stdout(&out);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    let demo = row(&table, "demo");
    assert_eq!(
        demo[2..],
        [KUBELET_SIGNER, "loopback-admin", "24h", "Pending"]
    );
    assert_eq!(row(&table, "other")[4], "60m");

    // `-o json` is the stored object.
    let out = kubectl(&kc, &["get", "csr", "demo", "-o", "json"]).await;
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json,
        server
            .object("", "certificatesigningrequests", "demo")
            .unwrap()
    );
    assert_eq!(json["spec"]["username"], "loopback-admin");

    // `kubectl certificate approve|deny` use the approval subresource.
    let out = kubectl(&kc, &["certificate", "approve", "demo"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "certificatesigningrequest.certificates.k8s.io/demo approved"
    );
    let out = kubectl(&kc, &["certificate", "deny", "other"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "certificatesigningrequest.certificates.k8s.io/other denied"
    );
    let approval = server
        .requests()
        .into_iter()
        .find(|r| r.method == "PUT")
        .unwrap();
    assert_eq!(
        approval.path,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/demo/approval"
    );
    let stored = server
        .object("", "certificatesigningrequests", "demo")
        .unwrap();
    assert_eq!(stored["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(
        stored["status"]["conditions"][0]["reason"],
        "KubectlApprove"
    );

    // The signer's write, with `kubectl patch --subresource=status`.
    let (issued, _key) = server
        .issue_client_certificate("system:node:worker-1", &["system:nodes"])
        .unwrap();
    let patch = json!({"status": {"certificate": base64::engine::general_purpose::STANDARD.encode(&issued)}})
        .to_string();
    let out = kubectl(
        &kc,
        &[
            "patch",
            "csr",
            "demo",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));

    let out = kubectl(&kc, &["get", "csr"]).await;
    let table = stdout(&out);
    assert_eq!(row(&table, "demo")[5], "Approved,Issued");
    assert_eq!(row(&table, "other")[5], "Denied");

    // kubectl itself refuses to approve a denied request (the server would too: the kube::Client
    // test sends both conditions).
    let out = kubectl(&kc, &["certificate", "approve", "other"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("certificate signing request \"other\" is already Denied"),
        "{}",
        stderr(&out)
    );

    let out = kubectl(&kc, &["delete", "csr", "demo"]).await;
    assert!(out.status.success());
    assert!(
        stdout(&out)
            .trim()
            .starts_with("certificatesigningrequest.certificates.k8s.io \"demo\" deleted"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_whoami() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    // A node's client certificate.
    let (cert, key) = server
        .issue_client_certificate("system:node:worker-1", &["system:nodes"])
        .unwrap();
    let node = write(
        dir.path(),
        "node.yaml",
        &server.kubeconfig_with_client_certificate(&cert, &key),
    );
    let out = kubectl(&node, &["auth", "whoami"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let username: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("Username"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(username, ["Username", "system:node:worker-1"]);
    let groups = text.lines().find(|l| l.starts_with("Groups")).unwrap();
    assert!(
        groups.ends_with("[system:nodes system:authenticated]"),
        "{text}"
    );
    assert!(
        text.contains("authentication.kubernetes.io/credential-id"),
        "{text}"
    );

    let out = kubectl(&node, &["auth", "whoami", "-o", "json"]).await;
    assert!(out.status.success());
    let review: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(
        review["status"]["userInfo"]["username"],
        "system:node:worker-1"
    );
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["system:nodes", "system:authenticated"])
    );

    // The admin token.
    let admin = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let out = kubectl(&admin, &["auth", "whoami"]).await;
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("loopback-admin"), "{text}");
    assert!(
        text.contains("[system:masters system:authenticated]"),
        "{text}"
    );

    // A certificate from another CA: the handshake succeeds, the x509 authenticator refuses the
    // certificate, and without a token the request is 401 (not anonymous).
    let (foreign_cert, foreign_key) = foreign_client_certificate("system:node:worker-1");
    let foreign = write(
        dir.path(),
        "foreign.yaml",
        &server.kubeconfig_with_client_certificate(&foreign_cert, &foreign_key),
    );
    let out = kubectl(&foreign, &["auth", "whoami"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        stderr(&out)
    );
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!((last.status, last.user), (401, None));
}
