//! client-go's reuse of an existing request (`ensureCompatible`), Kubernetes' messages and PEM
//! reading (`ParseCSR`, `status.certificate` validation), and the API a user tests with: the
//! builder, the recognizers, the signer's duration rule, typed approval errors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::Ca;
use tls_bootstrap::{
    Approval, CertificateRequest, CertificateSigningRequest, Condition, Error,
    KUBELET_CLIENT_SIGNER, KUBELET_CLIENT_USAGES, KeyUsage, MIN_LIFETIME, NodeKey, NodeName,
    Recognizer, SignerConfig, Signing, accept_certificate, approve, is_node_client_cert,
    is_self_node_client_cert, sign, signing_duration,
};

fn node() -> NodeName {
    "worker-1".parse().unwrap()
}

fn request(key: &NodeKey) -> CertificateRequest {
    CertificateRequest::for_node(&node(), key).unwrap()
}

/// client-go `ensureCompatible`: signer names are compared only when both are set (objects
/// written before signer names have none).
#[test]
fn ensure_compatible_an_empty_signer_name_is_compatible() {
    let key = NodeKey::generate().unwrap();
    let ours = request(&key);
    let now = SystemTime::now();
    let mut existing = CertificateSigningRequest::for_node(&ours, None).unwrap();
    existing.spec.signer_name = String::new();
    existing
        .ensure_compatible(&ours, KUBELET_CLIENT_SIGNER, now)
        .unwrap();
    // The caller's signer is the one compared.
    let existing = CertificateSigningRequest::for_node(&ours, None).unwrap();
    existing
        .ensure_compatible(&ours, KUBELET_CLIENT_SIGNER, now)
        .unwrap();
    assert_eq!(
        existing
            .ensure_compatible(&ours, "example.com/other", now)
            .unwrap_err(),
        Error::Incompatible { what: "signerName" }
    );
    existing.ensure_compatible(&ours, "", now).unwrap();
    // Another subject or key.
    let other = CertificateRequest::for_node(&"worker-2".parse().unwrap(), &key).unwrap();
    assert_eq!(
        existing
            .ensure_compatible(&other, KUBELET_CLIENT_SIGNER, now)
            .unwrap_err(),
        Error::Incompatible { what: "subject" }
    );
    let other = request(&NodeKey::generate().unwrap());
    assert_eq!(
        existing
            .ensure_compatible(&other, KUBELET_CLIENT_SIGNER, now)
            .unwrap_err(),
        Error::Incompatible { what: "public key" }
    );
}

/// client-go `ensureCompatible`: an existing request whose issued certificate has expired is
/// not reused.
#[test]
fn ensure_compatible_an_expired_issued_certificate_is_not_reused() {
    let key = NodeKey::generate().unwrap();
    let ours = request(&key);
    let issued_at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let ca = Ca::with_validity(
        "cluster CA",
        Some((
            issued_at - Duration::from_secs(3600),
            issued_at + Duration::from_secs(86400 * 3650),
        )),
    );
    let mut csr =
        CertificateSigningRequest::for_node(&ours, Some(Duration::from_secs(3600))).unwrap();
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    let Signing::Sign(plan) = sign(
        &csr,
        &SignerConfig::new(issued_at + Duration::from_secs(86400 * 3650)),
        issued_at,
    ) else {
        panic!()
    };
    csr.status.certificate = Some(ca.issue(&plan).into_bytes());
    csr.ensure_compatible(&ours, KUBELET_CLIENT_SIGNER, plan.not_after)
        .unwrap();
    assert_eq!(
        csr.ensure_compatible(
            &ours,
            KUBELET_CLIENT_SIGNER,
            plan.not_after + Duration::from_secs(1)
        )
        .unwrap_err(),
        Error::Expired
    );
}

fn object_with_request(request_pem: &[u8]) -> CertificateSigningRequest {
    CertificateSigningRequest::builder(request_pem.to_vec(), KUBELET_CLIENT_SIGNER)
        .name("node-csr-x")
        .usages(&KUBELET_CLIENT_USAGES)
        .username("system:bootstrap:abcdef")
        .groups(["system:bootstrappers"])
        .build()
}

/// Kubernetes' `ParseCSR`: no PEM block, or a first block of another type, is
/// `PEM block type must be CERTIFICATE REQUEST`; the approver wraps it as
/// `unable to parse csr "<name>": ...` and keeps the typed error.
#[test]
fn approver_message_for_what_is_not_a_certificate_request_pem() {
    let key = NodeKey::generate().unwrap();
    let request_pem = request(&key).to_pem();
    for input in [
        "not PEM at all".to_owned(),
        request_pem.replace("CERTIFICATE REQUEST", "CERTIFICATE"),
        format!("{}{request_pem}", key.to_pem().unwrap().as_str()),
    ] {
        let Approval::Unparseable(why) = approve(&object_with_request(input.as_bytes()), |_| true)
        else {
            panic!("{input}")
        };
        assert_eq!(
            why.as_str(),
            "unable to parse csr \"node-csr-x\": PEM block type must be CERTIFICATE REQUEST"
        );
        assert_eq!(why.error(), Some(&Error::NotCertificateRequestPem));
        assert!(std::error::Error::source(&why).is_some());
        // The signer retries such a request with the same message.
        let mut approved = object_with_request(input.as_bytes());
        approved
            .status
            .conditions
            .push(Condition::new("Approved", "A", "a"));
        let now = SystemTime::now();
        let Signing::Retry(why) = sign(&approved, &SignerConfig::new(now), now) else {
            panic!()
        };
        assert_eq!(why.error(), Some(&Error::NotCertificateRequestPem));
    }
}

/// `ParseCSR` reads the first PEM block with Go's `pem.Decode`: explanatory text around it is
/// skipped (kube-apiserver accepts such a `spec.request`), so the approver approves it.
#[test]
fn approver_reads_a_request_with_text_around_it() {
    let key = NodeKey::generate().unwrap();
    let request_pem = request(&key).to_pem();
    let with_text = format!("Node worker-1's request:\n{request_pem}\nthanks\n");
    let verdict = approve(&object_with_request(with_text.as_bytes()), |r| {
        r.subresource == "nodeclient"
    });
    assert!(matches!(verdict, Approval::Approve { .. }), "{verdict:?}");
}

/// `status.certificate`: "Non-PEM content may appear before or after the CERTIFICATE PEM
/// blocks" (the API's field documentation); Go's `pem.Decode` in client-go's store skips it.
#[test]
fn accept_certificate_skips_text_around_the_blocks() {
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let key = NodeKey::generate().unwrap();
    let mut csr = CertificateSigningRequest::for_node(&request(&key), None).unwrap();
    csr.status
        .conditions
        .push(Condition::new("Approved", "A", "a"));
    let Signing::Sign(plan) = sign(
        &csr,
        &SignerConfig::new(now + Duration::from_secs(86400 * 3650)),
        now,
    ) else {
        panic!()
    };
    let pem = ca.issue(&plan);
    let around = format!("Issued by the cluster CA\n{pem}\nsee https://example.com\n");
    let cert =
        accept_certificate(around.as_bytes(), ca.pem().as_bytes(), &key, &node(), now).unwrap();
    assert_eq!(cert.to_pem(), pem.replace("\r\n", "\n"));
    // Still refused: a block of another type, PEM headers, no block at all.
    for bad in [
        format!("{pem}{}", key.to_pem().unwrap().as_str()),
        pem.replace(
            "-----BEGIN CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\nX-Note: 1\n",
        ),
        "just text".to_owned(),
    ] {
        let err = accept_certificate(bad.as_bytes(), ca.pem().as_bytes(), &key, &node(), now)
            .unwrap_err();
        assert!(matches!(err, Error::Pem { .. }), "{err:?}");
    }
}

/// The recognizers as Kubernetes' approver defines them, usable on their own.
#[test]
fn recognizers_are_public_functions() {
    let key = NodeKey::generate().unwrap();
    let req = request(&key);
    let by_token = object_with_request(req.to_pem().as_bytes());
    assert!(is_node_client_cert(&by_token, &req));
    assert!(!is_self_node_client_cert(&by_token, &req));
    assert!(Recognizer::NodeClient.recognizes(&by_token, &req));
    let by_node = CertificateSigningRequest::builder(req.to_pem(), KUBELET_CLIENT_SIGNER)
        .usages(&KUBELET_CLIENT_USAGES)
        .username("system:node:worker-1")
        .build();
    assert!(is_self_node_client_cert(&by_node, &req));
    assert!(Recognizer::SelfNodeClient.recognizes(&by_node, &req));
    let serving = CertificateSigningRequest::builder(req.to_pem(), KUBELET_CLIENT_SIGNER)
        .usages(&[KeyUsage::DigitalSignature, KeyUsage::ServerAuth])
        .username("system:node:worker-1")
        .build();
    assert!(!is_node_client_cert(&serving, &req));
    assert!(!is_self_node_client_cert(&serving, &req));
    let other_signer = CertificateSigningRequest::builder(req.to_pem(), "example.com/x")
        .usages(&KUBELET_CLIENT_USAGES)
        .build();
    assert!(!is_node_client_cert(&other_signer, &req));
}

/// The signer's duration rule, the rows of Kubernetes' signer `TestDuration` (cap one hour),
/// and a cap under ten minutes.
#[test]
fn signing_duration_rows() {
    let hour = Duration::from_secs(3600);
    let min = |m: u64| Duration::from_secs(60 * m);
    let secs = |d: Duration| Some(i32::try_from(d.as_secs()).unwrap());
    for (requested, want) in [
        (secs(min(30)), min(30)),
        (secs(3 * hour), hour),
        (Some(-60), min(10)),
        (secs(min(10) - Duration::from_secs(1)), min(10)),
        (secs(min(10)), min(10)),
        (secs(hour), hour),
        (None, hour),
    ] {
        assert_eq!(signing_duration(requested, hour), want, "{requested:?}");
    }
    assert_eq!(MIN_LIFETIME, min(10));
    // A cap below the minimum: a longer request gets the cap.
    assert_eq!(signing_duration(secs(hour), min(5)), min(5));
    assert_eq!(signing_duration(Some(60), min(5)), min(10));
}

/// The builder makes the objects the JSON parser makes.
#[test]
fn builder_matches_json() {
    let key = NodeKey::generate().unwrap();
    let req = request(&key);
    let built = CertificateSigningRequest::builder(req.to_pem(), KUBELET_CLIENT_SIGNER)
        .name("n")
        .object_uid("u-1")
        .usages(&KUBELET_CLIENT_USAGES)
        .expiration_seconds(3600)
        .username("system:bootstrap:abcdef")
        .uid("1")
        .groups(["g1", "g2"])
        .extra("k", ["v"])
        .condition(Condition::new("Approved", "R", "m").with_status(""))
        .certificate(b"pem".to_vec())
        .build();
    let back = CertificateSigningRequest::from_json(&built.to_json().unwrap()).unwrap();
    assert_eq!(back, built);
    assert_eq!(back.status.conditions[0].status, "");
    assert_eq!(back.metadata.uid.as_deref(), Some("u-1"));
    assert_eq!(back.spec.extra["k"], ["v"]);
}
