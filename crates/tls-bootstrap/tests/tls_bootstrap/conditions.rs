//! How each Kubernetes reader of a CertificateSigningRequest's conditions reads them, function
//! by function, built with the public builder (conditions of any status, as a client may
//! write them to an API server that does not default them):
//!
//! * client-go `util/certificate/csr.WaitForCertificate` (the kubelet's wait, [`State`]):
//!   conditions in order; the first of type `Denied` or `Failed` ends the wait whatever its
//!   status; `Approved` of any status counts.
//! * `pkg/controller/certificates.IsCertificateRequestApproved` /
//!   `GetCertApprovalCondition` (the signer, the approver): types only.
//! * `pkg/controller/certificates.HasTrueCondition` (the signer's `Failed` check): status
//!   `True` or empty.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tls_bootstrap::{
    Approval, CertificateRequest, CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER,
    KUBELET_CLIENT_USAGES, NodeKey, SignerConfig, Signing, State, approve, sign,
};

static REQUEST: LazyLock<CertificateRequest> = LazyLock::new(|| {
    CertificateRequest::for_node(&"n".parse().unwrap(), &NodeKey::generate().unwrap()).unwrap()
});

/// Our node's request with `conditions`, as `system:bootstrap:abcdef` filed it.
fn with(conditions: &[Condition]) -> CertificateSigningRequest {
    let mut b = CertificateSigningRequest::builder(REQUEST.to_pem(), KUBELET_CLIENT_SIGNER)
        .name("node-csr-x")
        .usages(&KUBELET_CLIENT_USAGES)
        .username("system:bootstrap:abcdef")
        .groups(["system:bootstrappers"]);
    for c in conditions {
        b = b.condition(c.clone());
    }
    b.build()
}

fn cond(type_: &str, status: &str) -> Condition {
    Condition::new(type_, type_, &format!("{type_} {status:?}")).with_status(status)
}

fn signed(csr: &CertificateSigningRequest) -> bool {
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let config = SignerConfig::new(now + Duration::from_secs(86400 * 3650));
    matches!(sign(csr, &config, now), Signing::Sign(_))
}

#[test]
fn wait_for_certificate_denied_of_any_status_ends_the_wait() {
    for status in ["", "True", "False", "Unknown"] {
        let csr = with(&[cond("Denied", status)]);
        assert!(matches!(csr.state(), State::Denied { .. }), "{status:?}");
    }
}

#[test]
fn wait_for_certificate_failed_of_any_status_ends_the_wait() {
    for status in ["", "True", "False"] {
        let csr = with(&[cond("Approved", "True"), cond("Failed", status)]);
        assert!(matches!(csr.state(), State::Failed { .. }), "{status:?}");
    }
}

#[test]
fn wait_for_certificate_approved_of_any_status_is_issued_with_a_certificate() {
    for status in ["", "True", "False"] {
        let mut csr = with(&[cond("Approved", status)]);
        assert_eq!(csr.state(), State::Approved, "{status:?}");
        csr.status.certificate = Some(b"pem".to_vec());
        assert_eq!(csr.state(), State::Issued(b"pem"), "{status:?}");
    }
}

#[test]
fn wait_for_certificate_the_first_denied_or_failed_in_order_wins() {
    let csr = with(&[cond("Failed", "True"), cond("Denied", "True")]);
    assert_eq!(
        csr.state(),
        State::Failed {
            reason: Some("Failed"),
            message: Some("Failed \"True\"")
        }
    );
    let csr = with(&[cond("Denied", ""), cond("Failed", "True")]);
    assert!(matches!(csr.state(), State::Denied { .. }));
    // Other types are ignored.
    assert_eq!(with(&[cond("Pending", "True")]).state(), State::Pending);
}

#[test]
fn is_certificate_request_approved_reads_types_only() {
    for status in ["", "True", "False"] {
        assert!(
            with(&[cond("Approved", status)]).is_approved(),
            "{status:?}"
        );
        assert!(
            !with(&[cond("Approved", "True"), cond("Denied", status)]).is_approved(),
            "{status:?}"
        );
    }
    assert!(!with(&[]).is_approved());
}

#[test]
fn has_true_condition_is_true_or_empty() {
    assert!(with(&[cond("Failed", "")]).has_true_condition("Failed"));
    assert!(with(&[cond("Failed", "True")]).has_true_condition("Failed"));
    assert!(!with(&[cond("Failed", "False")]).has_true_condition("Failed"));
    assert!(!with(&[cond("Failed", "Unknown")]).has_true_condition("Failed"));
    assert!(!with(&[cond("Approved", "")]).has_true_condition("Failed"));
}

/// The signer (`signer.handle`): `!IsCertificateRequestApproved || HasTrueCondition(Failed)`
/// leaves the request.
#[test]
fn signer_handle_signs_an_approved_condition_with_an_empty_status() {
    assert!(signed(&with(&[cond("Approved", "")])));
    assert!(signed(&with(&[cond("Approved", "True")])));
}

#[test]
fn signer_handle_leaves_a_failed_condition_with_an_empty_status() {
    assert!(!signed(&with(&[
        cond("Approved", "True"),
        cond("Failed", "")
    ])));
    assert!(!signed(&with(&[
        cond("Approved", "True"),
        cond("Failed", "True")
    ])));
    // HasTrueCondition: a Failed condition whose status is False does not stop it.
    assert!(signed(&with(&[
        cond("Approved", "True"),
        cond("Failed", "False")
    ])));
}

#[test]
fn signer_handle_leaves_a_denied_condition_of_any_status() {
    for status in ["", "True", "False"] {
        assert!(
            !signed(&with(&[cond("Approved", "True"), cond("Denied", status)])),
            "{status:?}"
        );
    }
}

/// The approver (`sarApprover.handle`): `GetCertApprovalCondition` reads types only.
#[test]
fn sar_approver_handle_leaves_approved_or_denied_of_any_status() {
    for type_ in ["Approved", "Denied"] {
        for status in ["", "True", "False"] {
            assert_eq!(
                approve(&with(&[cond(type_, status)]), |_| true),
                Approval::AlreadyDecided,
                "{type_} {status:?}"
            );
        }
    }
    // A Failed condition is not the approver's concern.
    assert!(matches!(
        approve(&with(&[cond("Failed", "True")]), |_| true),
        Approval::Approve { .. }
    ));
    let _ = SystemTime::UNIX_EPOCH;
}
