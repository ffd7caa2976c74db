//! The signer for `kubernetes.io/kubelet-serving`: the rows of Kubernetes' `TestHandle`
//! (pkg/controller/certificates/signer) for that signer, and the plan's names and lifetimes.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{KeyPair, SanType};
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER, KeyUsage, MIN_LIFETIME, NodeKey, SignerConfig, Signing, SigningPlan,
    sign,
};

use KeyUsage::{ClientAuth, DigitalSignature, KeyEncipherment, ServerAuth};

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn config() -> SignerConfig {
    SignerConfig::new(now() + Duration::from_secs(10 * 365 * 86400))
}

fn approved(
    request: &CertificateRequest,
    signer: &str,
    usages: &[KeyUsage],
) -> CertificateSigningRequest {
    CertificateSigningRequest::builder(request.to_pem(), signer)
        .name("csr-serving")
        .usages(usages)
        .condition(Condition::new("Approved", "KubectlApprove", "approved"))
        .build()
}

fn rcgen_request(orgs: &[&str], cn: &str, sans: Vec<SanType>) -> CertificateRequest {
    crate::support::node_request(&KeyPair::generate().unwrap(), orgs, cn, sans).unwrap()
}

fn dns(name: &str) -> SanType {
    SanType::DnsName(name.try_into().unwrap())
}

fn serving_request() -> CertificateRequest {
    let key = NodeKey::generate().unwrap();
    let ip: IpAddr = "10.0.0.5".parse().unwrap();
    let v6: IpAddr = "fd00::5".parse().unwrap();
    CertificateRequest::for_node_serving(
        &"worker-1".parse().unwrap(),
        &key,
        &["worker-1", "worker-1.example.com"],
        &[ip, v6],
    )
    .unwrap()
}

fn plan(csr: &CertificateSigningRequest, config: &SignerConfig) -> SigningPlan {
    match sign(csr, config, now()) {
        Signing::Sign(p) => p,
        other => panic!("{other:?}"),
    }
}

fn failure(csr: &CertificateSigningRequest) -> String {
    match sign(csr, &config(), now()) {
        Signing::Fail(c) => {
            assert_eq!(c.type_, "Failed");
            assert_eq!(c.status, "True");
            assert_eq!(c.reason.as_deref(), Some("SignerValidationFailure"));
            c.message.unwrap()
        }
        other => panic!("{other:?}"),
    }
}

/// "should sign if signerName is kubernetes.io/kubelet-serving": server auth, digital
/// signature and key encipherment, a DNS name; the subject and names are the request's.
#[test]
fn signs_an_approved_serving_request_with_its_names() {
    let request = rcgen_request(
        &["system:nodes"],
        "system:node:hello-world",
        vec![dns("example.com")],
    );
    let csr = approved(
        &request,
        KUBELET_SERVING_SIGNER,
        &[ServerAuth, DigitalSignature, KeyEncipherment],
    );
    let p = plan(&csr, &config());
    assert_eq!(p.common_name, "system:node:hello-world");
    assert_eq!(p.organizations, ["system:nodes"]);
    assert_eq!(p.dns_names, ["example.com"]);
    assert!(p.ip_addresses.is_empty());
    assert_eq!(p.key_usages, [DigitalSignature, KeyEncipherment]);
    assert_eq!(p.extended_key_usages, [ServerAuth]);
    assert_eq!(p.public_key_der, request.public_key_der());
}

#[test]
fn the_kubelets_own_request_keeps_dns_and_ip_names_in_order() {
    let request = serving_request();
    let csr = approved(
        &request,
        KUBELET_SERVING_SIGNER,
        tls_bootstrap::kubelet_serving_usages(request.key_type()),
    );
    let p = plan(&csr, &config());
    assert_eq!(p.dns_names, ["worker-1", "worker-1.example.com"]);
    assert_eq!(
        p.ip_addresses,
        [
            "10.0.0.5".parse::<IpAddr>().unwrap(),
            "fd00::5".parse().unwrap()
        ]
    );
    assert_eq!(p.key_usages, [DigitalSignature]);
    assert_eq!(p.extended_key_usages, [ServerAuth]);
    assert_eq!(p.common_name, "system:node:worker-1");
}

/// The duration rules are the client signer's: one year by default less the backdate,
/// `expirationSeconds` honoured, ten minutes at least, never past the CA.
#[test]
fn serving_lifetimes_follow_the_client_signers_rules() {
    let request = serving_request();
    let five = Duration::from_secs(300);
    let hour = Duration::from_secs(3600);
    let base = approved(
        &request,
        KUBELET_SERVING_SIGNER,
        &[DigitalSignature, ServerAuth],
    );

    let p = plan(&base, &config());
    assert_eq!(p.not_before, now() - five);
    assert_eq!(p.not_after, now() + Duration::from_secs(365 * 86400) - five);

    let mut short = base.clone();
    short.spec.expiration_seconds = Some(3600);
    assert_eq!(plan(&short, &config()).not_after, now() + hour);

    let mut tiny = base.clone();
    tiny.spec.expiration_seconds = Some(1);
    assert_eq!(plan(&tiny, &config()).not_after, now() + MIN_LIFETIME);

    let ca_soon = SignerConfig::new(now() + hour);
    assert_eq!(plan(&base, &ca_soon).not_after, now() + hour);

    let expired = SignerConfig::new(now() - hour);
    let Signing::Retry(why) = sign(&base, &expired, now()) else {
        panic!()
    };
    assert!(why.as_str().starts_with("the signer has expired"), "{why}");
}

/// Requests the serving signer refuses get a `Failed` condition with
/// `ValidateKubeletServingCSR`'s message.
#[test]
fn invalid_serving_requests_fail_with_kubernetes_messages() {
    let ok = [DigitalSignature, ServerAuth];
    let name = vec![dns("worker-1")];
    let cases: Vec<(CertificateRequest, &[KeyUsage], &str)> = vec![
        // "should fail if the usages are for a client certificate".
        (
            rcgen_request(&["system:nodes"], "system:node:worker-1", name.clone()),
            &[DigitalSignature, ClientAuth],
            "usages did not match [digital signature key encipherment server auth]",
        ),
        (
            rcgen_request(&["system:nodes"], "system:node:worker-1", name.clone()),
            &[DigitalSignature, ServerAuth, ClientAuth],
            "usages did not match [digital signature key encipherment server auth]",
        ),
        (
            rcgen_request(&["system:nodes"], "system:node:worker-1", vec![]),
            &ok,
            "DNS or IP subjectAltName is required",
        ),
        (
            rcgen_request(&["system:masters"], "system:node:worker-1", name.clone()),
            &ok,
            "subject organization is not system:nodes",
        ),
        (
            rcgen_request(
                &["system:nodes"],
                "system:node:worker-1",
                vec![
                    dns("worker-1"),
                    SanType::Rfc822Name("a@b.c".try_into().unwrap()),
                ],
            ),
            &ok,
            "Email subjectAltNames are not allowed",
        ),
        (
            rcgen_request(
                &["system:nodes"],
                "system:node:worker-1",
                vec![
                    dns("worker-1"),
                    SanType::URI("spiffe://x/y".try_into().unwrap()),
                ],
            ),
            &ok,
            "URI subjectAltNames are not allowed",
        ),
        (
            rcgen_request(&["system:nodes"], "worker-1", name.clone()),
            &ok,
            "subject common name does not begin with system:node:",
        ),
    ];
    for (request, usages, message) in cases {
        let csr = approved(&request, KUBELET_SERVING_SIGNER, usages);
        assert_eq!(failure(&csr), message, "{usages:?}");
    }
}

/// A serving request filed for the client signer fails there (and the client signer's rules
/// keep their own message), and a client request for the serving signer fails here.
#[test]
fn each_signer_applies_its_own_validation() {
    let serving = serving_request();
    let to_client = approved(
        &serving,
        KUBELET_CLIENT_SIGNER,
        &[DigitalSignature, ServerAuth],
    );
    assert_eq!(failure(&to_client), "DNS subjectAltNames are not allowed");

    let key = NodeKey::generate().unwrap();
    let client = CertificateRequest::for_node(&"worker-1".parse().unwrap(), &key).unwrap();
    let to_serving = approved(
        &client,
        KUBELET_SERVING_SIGNER,
        &[DigitalSignature, ClientAuth],
    );
    assert_eq!(failure(&to_serving), "DNS or IP subjectAltName is required");
}

/// "should do nothing if not approved", "... if denied", "... if failed", "... if already
/// signed", and an unknown signer.
#[test]
fn undecided_or_finished_serving_requests_are_left_alone() {
    let request = serving_request();
    let base = approved(
        &request,
        KUBELET_SERVING_SIGNER,
        &[DigitalSignature, ServerAuth],
    );

    let mut pending = base.clone();
    pending.status.conditions.clear();
    assert_eq!(sign(&pending, &config(), now()), Signing::Ignore);

    let mut denied = base.clone();
    denied
        .status
        .conditions
        .push(Condition::new("Denied", "No", "no"));
    assert_eq!(sign(&denied, &config(), now()), Signing::Ignore);

    let mut failed = base.clone();
    failed
        .status
        .conditions
        .push(Condition::new("Failed", "X", "x"));
    assert_eq!(sign(&failed, &config(), now()), Signing::Ignore);

    let mut issued = base.clone();
    issued.status.certificate = Some(b"-----BEGIN CERTIFICATE-----".to_vec());
    assert_eq!(sign(&issued, &config(), now()), Signing::Ignore);

    let mut other = base;
    other.spec.signer_name = "kubernetes.io/kube-apiserver-client".to_owned();
    assert_eq!(sign(&other, &config(), now()), Signing::Ignore);
}
