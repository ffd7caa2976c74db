//! The control plane's rules, row by row: kubelet client validation, the approver, the signer.

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

use rcgen::{CertificateParams, DnType, KeyPair, SanType};
use tls_bootstrap::{
    Approval, CertificateRequest, CertificateSigningRequest, Condition, KeyUsage, MIN_LIFETIME,
    NodeKey, SignerConfig, Signing, approve, sign, validate_kubelet_client,
};

use KeyUsage::{ClientAuth, DigitalSignature, KeyEncipherment, ServerAuth};

fn request(dn: &[(DnType, &str)], sans: Vec<SanType>) -> CertificateRequest {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for (t, v) in dn {
        params.distinguished_name.push(t.clone(), *v);
    }
    params.subject_alt_names = sans;
    let csr = params.serialize_request(&key).unwrap();
    CertificateRequest::from_der(csr.der()).unwrap()
}

fn node_dn(cn: &str) -> Vec<(DnType, &str)> {
    vec![
        (DnType::OrganizationName, "system:nodes"),
        (DnType::CommonName, cn),
    ]
}

#[test]
fn kubelet_client_validation_in_kubernetes_order() {
    let ok = [DigitalSignature, ClientAuth];
    let cases: Vec<(CertificateRequest, &[KeyUsage], Option<&str>)> = vec![
        (request(&node_dn("system:node:a"), vec![]), &ok, None),
        (
            request(&node_dn("system:node:a"), vec![]),
            &[ClientAuth, KeyEncipherment, DigitalSignature],
            None,
        ),
        (
            request(&node_dn("system:node:a"), vec![]),
            &[DigitalSignature, ClientAuth, ClientAuth],
            None,
        ),
        (
            request(
                &[
                    (DnType::OrganizationName, "system:nodes"),
                    (DnType::OrganizationName, "system:masters"),
                    (DnType::CommonName, "system:node:a"),
                ],
                vec![],
            ),
            &ok,
            Some("subject organization is not system:nodes"),
        ),
        (
            request(&[(DnType::CommonName, "system:node:a")], vec![]),
            &ok,
            Some("subject organization is not system:nodes"),
        ),
        (
            request(
                &node_dn("system:node:a"),
                vec![SanType::DnsName("a.example".try_into().unwrap())],
            ),
            &ok,
            Some("DNS subjectAltNames are not allowed"),
        ),
        (
            request(
                &node_dn("system:node:a"),
                vec![SanType::Rfc822Name("a@example.com".try_into().unwrap())],
            ),
            &ok,
            Some("Email subjectAltNames are not allowed"),
        ),
        (
            request(
                &node_dn("system:node:a"),
                vec![SanType::IpAddress("10.1.2.3".parse().unwrap())],
            ),
            &ok,
            Some("IP subjectAltNames are not allowed"),
        ),
        (
            request(
                &node_dn("system:node:a"),
                vec![SanType::URI("spiffe://a/b".try_into().unwrap())],
            ),
            &ok,
            Some("URI subjectAltNames are not allowed"),
        ),
        (
            request(&node_dn("system:nodes:a"), vec![]),
            &ok,
            Some("subject common name does not begin with system:node:"),
        ),
        (
            request(&node_dn("admin"), vec![]),
            &ok,
            Some("subject common name does not begin with system:node:"),
        ),
        (
            request(&node_dn("system:node:a"), vec![]),
            &[DigitalSignature, ClientAuth, ServerAuth],
            Some("usages did not match [client auth digital signature key encipherment]"),
        ),
        (
            request(&node_dn("system:node:a"), vec![]),
            &[ClientAuth],
            Some("usages did not match [client auth digital signature key encipherment]"),
        ),
        (
            request(&node_dn("system:node:a"), vec![]),
            &[],
            Some("usages did not match [client auth digital signature key encipherment]"),
        ),
    ];
    for (i, (req, usages, want)) in cases.into_iter().enumerate() {
        let got = validate_kubelet_client(&req, usages).err();
        assert_eq!(got.as_ref().map(|r| r.as_str()), want, "case {i}");
    }
}

fn object(cn: &str, usages: &[KeyUsage], user: &str, groups: &[&str]) -> CertificateSigningRequest {
    let req = request(&node_dn(cn), vec![]);
    let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
    csr.spec.usages = usages.to_vec();
    csr.spec.username = Some(user.to_owned());
    csr.spec.groups = groups.iter().map(|g| (*g).to_owned()).collect();
    csr
}

#[test]
fn approver_asks_the_authorizer_what_kubernetes_asks() {
    let csr = object(
        "system:node:a",
        &[DigitalSignature, ClientAuth],
        "system:bootstrap:abcdef",
        &["system:bootstrappers"],
    );
    let mut seen = Vec::new();
    let verdict = approve(&csr, |r| {
        seen.push((
            r.user.to_owned(),
            r.verb,
            r.group,
            r.resource,
            r.subresource,
            r.groups.to_vec(),
        ));
        false
    });
    // Not the node itself: only `nodeclient` is asked.
    assert_eq!(
        seen,
        [(
            "system:bootstrap:abcdef".to_owned(),
            "create",
            "certificates.k8s.io",
            "certificatesigningrequests",
            "nodeclient",
            vec!["system:bootstrappers".to_owned()]
        )]
    );
    assert!(matches!(verdict, Approval::NotAuthorized(_)));

    // The node itself: `selfnodeclient` first, then `nodeclient`.
    let csr = object(
        "system:node:a",
        &[DigitalSignature, ClientAuth],
        "system:node:a",
        &["system:nodes"],
    );
    let mut asked = Vec::new();
    let Approval::NotAuthorized(why) = approve(&csr, |r| {
        asked.push(r.subresource);
        false
    }) else {
        panic!()
    };
    assert_eq!(asked, ["selfnodeclient", "nodeclient"]);
    assert!(
        why.as_str()
            .ends_with("as [selfnodeclient nodeclient] but subject access review was not approved"),
        "{why}"
    );
}

#[test]
fn approver_leaves_what_is_not_its_own() {
    let allow = |_: &tls_bootstrap::AccessReview<'_>| true;
    let base = object(
        "system:node:a",
        &[DigitalSignature, ClientAuth],
        "u",
        &["g"],
    );
    assert!(matches!(approve(&base, allow), Approval::Approve { .. }));

    let mut other_signer = base.clone();
    other_signer.spec.signer_name = "kubernetes.io/kube-apiserver-client".to_owned();
    assert!(matches!(
        approve(&other_signer, allow),
        Approval::NotRecognized(_)
    ));

    let server_usages = object(
        "system:node:a",
        &[DigitalSignature, ServerAuth],
        "u",
        &["g"],
    );
    assert!(matches!(
        approve(&server_usages, allow),
        Approval::NotRecognized(_)
    ));

    for decided in ["Approved", "Denied"] {
        let mut csr = base.clone();
        csr.status
            .conditions
            .push(Condition::new(decided, "ByHand", "decided"));
        assert_eq!(approve(&csr, allow), Approval::AlreadyDecided);
    }
    let mut issued = base.clone();
    issued.status.certificate = Some(b"x".to_vec());
    assert_eq!(approve(&issued, allow), Approval::AlreadyDecided);

    let mut garbage = base.clone();
    garbage.spec.request =
        b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n".to_vec();
    assert!(matches!(approve(&garbage, allow), Approval::Unparseable(_)));
}

fn approved(expiration: Option<i32>) -> CertificateSigningRequest {
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&"n".parse().unwrap(), &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
    csr.spec.expiration_seconds = expiration;
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    csr
}

fn plan(
    csr: &CertificateSigningRequest,
    config: &SignerConfig,
    now: SystemTime,
) -> tls_bootstrap::SigningPlan {
    match sign(csr, config, now) {
        Signing::Sign(p) => p,
        other => panic!("{other:?}"),
    }
}

#[test]
fn signer_lifetimes() {
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let far = now + Duration::from_secs(20 * 365 * 86400);
    let config = SignerConfig::new(far);
    let five = Duration::from_secs(300);
    let hour = Duration::from_secs(3600);

    // Default: one year, less the backdate at both ends.
    let p = plan(&approved(None), &config, now);
    assert_eq!(p.not_before, now - five);
    assert_eq!(p.not_after, now + Duration::from_secs(365 * 86400) - five);
    assert_eq!(p.key_usages, [DigitalSignature]);
    assert_eq!(p.extended_key_usages, [ClientAuth]);
    assert_eq!(p.common_name, "system:node:n");
    assert_eq!(p.organizations, ["system:nodes"]);

    // Short lifetimes (under 8 h) keep their full length.
    let p = plan(&approved(Some(3600)), &config, now);
    assert_eq!(p.not_after, now + hour);
    // Eight hours or more lose the backdate.
    let p = plan(&approved(Some(8 * 3600)), &config, now);
    assert_eq!(p.not_after, now + 8 * hour - five);
    // Under ten minutes is raised to ten minutes.
    let p = plan(&approved(Some(60)), &config, now);
    assert_eq!(p.not_after, now + MIN_LIFETIME);
    // Over the cap is the cap.
    let mut capped = config;
    capped.max_duration = 2 * hour;
    let p = plan(&approved(Some(24 * 3600)), &capped, now);
    assert_eq!(p.not_after, now + 2 * hour);
    // Never past the CA.
    let ca_soon = SignerConfig::new(now + hour);
    let p = plan(&approved(None), &ca_soon, now);
    assert_eq!(p.not_after, now + hour);
    // An expired CA signs nothing.
    let expired = SignerConfig::new(now - hour);
    let Signing::Retry(why) = sign(&approved(None), &expired, now) else {
        panic!()
    };
    assert!(
        why.as_str()
            .starts_with("the signer has expired: NotAfter="),
        "{why}"
    );
}

#[test]
fn signer_fails_invalid_and_ignores_undecided() {
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let config = SignerConfig::new(now + Duration::from_secs(86400 * 3650));

    let mut server = approved(None);
    server.spec.usages = vec![DigitalSignature, ServerAuth];
    let Signing::Fail(condition) = sign(&server, &config, now) else {
        panic!()
    };
    assert_eq!(condition.type_, "Failed");
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason.as_deref(), Some("SignerValidationFailure"));
    assert_eq!(
        condition.message.as_deref(),
        Some("usages did not match [client auth digital signature key encipherment]")
    );

    let mut pending = approved(None);
    pending.status.conditions.clear();
    assert_eq!(sign(&pending, &config, now), Signing::Ignore);
    let mut denied = approved(None);
    denied
        .status
        .conditions
        .push(Condition::new("Denied", "No", "no"));
    assert_eq!(sign(&denied, &config, now), Signing::Ignore);
    let mut failed = approved(None);
    failed
        .status
        .conditions
        .push(Condition::new("Failed", "X", "x"));
    assert_eq!(sign(&failed, &config, now), Signing::Ignore);
    let mut other = approved(None);
    other.spec.signer_name = "example.com/other".to_owned();
    assert_eq!(sign(&other, &config, now), Signing::Ignore);
    // Kubernetes' signer reads the Approved condition by type (`IsCertificateRequestApproved`);
    // the API server refuses to store one whose status is not True.
    let mut false_approval = approved(None);
    false_approval.status.conditions[0].status = "False".to_owned();
    assert!(matches!(
        sign(&false_approval, &config, now),
        Signing::Sign(_)
    ));
}

#[test]
fn rotation_deadline_is_70_to_90_percent() {
    let nb = UNIX_EPOCH + Duration::from_secs(1_000_000);
    let na = nb + Duration::from_secs(1000);
    let at = |j: f64| {
        tls_bootstrap::rotation_deadline(nb, na, j)
            .duration_since(nb)
            .unwrap()
            .as_secs_f64()
    };
    assert!((at(0.0) - 700.0).abs() < 1e-6);
    assert!((at(0.5) - 800.0).abs() < 1e-6);
    assert!((at(0.999_999) - 900.0).abs() < 1e-3);
    assert!((at(f64::NAN) - 700.0).abs() < 1e-6);
    assert!((at(-3.0) - 700.0).abs() < 1e-6);
    assert!((at(7.0) - 900.0).abs() < 1e-6);
    // A certificate whose notAfter precedes notBefore is never valid: its deadline is that
    // notAfter, the earlier instant.
    assert_eq!(tls_bootstrap::rotation_deadline(na, nb, 0.5), nb);
}
