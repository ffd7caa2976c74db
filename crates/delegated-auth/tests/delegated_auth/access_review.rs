//! SubjectAccessReview answers read as `k8s.io/apiserver`'s webhook authorizer reads them
//! (plugin/pkg/authorizer/webhook), and hostile answers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity,
    reason = "tests"
)]

use delegated_auth::{
    AccessReviewKind, AccessReviewOutcome, Decision, Error, MAX_ACCESS_REVIEW_BYTES,
    read_access_review,
};
use proptest::prelude::*;

fn read(status: serde_json::Value) -> AccessReviewOutcome {
    let body = serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "status": status});
    read_access_review(AccessReviewKind::Subject, 201, body.to_string().as_bytes()).unwrap()
}

/// (name, status, decision, cacheable): the webhook authorizer's table (allowed, denied,
/// no opinion, both) and the evaluation errors.
#[test]
fn decisions_as_the_webhook_authorizer() {
    let cases = [
        (
            "allowed",
            serde_json::json!({"allowed": true, "reason": "RBAC: allowed"}),
            Decision::Allow,
            true,
        ),
        (
            "denied",
            serde_json::json!({"allowed": false, "denied": true, "reason": "access denied"}),
            Decision::Deny,
            true,
        ),
        (
            "no opinion",
            serde_json::json!({"allowed": false}),
            Decision::NoOpinion,
            true,
        ),
        (
            "empty status",
            serde_json::json!({}),
            Decision::NoOpinion,
            true,
        ),
        (
            "null status",
            serde_json::Value::Null,
            Decision::NoOpinion,
            true,
        ),
        (
            "both allowed and denied is a denial",
            serde_json::json!({"allowed": true, "denied": true}),
            Decision::Deny,
            true,
        ),
        (
            "evaluation error without an allow: no opinion, never cached",
            serde_json::json!({"allowed": false, "evaluationError": "etcd unavailable"}),
            Decision::NoOpinion,
            false,
        ),
        (
            "evaluation error with a denial: a denial, never cached",
            serde_json::json!({"allowed": false, "denied": true, "evaluationError": "partial"}),
            Decision::Deny,
            false,
        ),
        (
            "evaluation error beside an allow: an allow (another authorizer allowed)",
            serde_json::json!({"allowed": true, "evaluationError": "one binding unreadable"}),
            Decision::Allow,
            true,
        ),
        (
            "an empty evaluation error is none",
            serde_json::json!({"allowed": false, "evaluationError": ""}),
            Decision::NoOpinion,
            true,
        ),
        (
            "allowed null",
            serde_json::json!({"allowed": null, "denied": null}),
            Decision::NoOpinion,
            true,
        ),
    ];
    for (name, status, decision, cacheable) in cases {
        let out = read(status);
        assert_eq!(out.decision, decision, "{name}");
        assert_eq!(out.is_cacheable(), cacheable, "{name}");
        assert_eq!(out.is_allowed(), decision == Decision::Allow, "{name}");
    }
    let out = read(
        serde_json::json!({"allowed": false, "reason": "no RBAC policy matched", "evaluationError": "x"}),
    );
    assert_eq!(out.reason, "no RBAC policy matched");
    assert_eq!(out.evaluation_error.as_deref(), Some("x"));
}

#[test]
fn kinds_must_match() {
    let body = br#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","status":{"allowed":true}}"#;
    assert!(
        read_access_review(AccessReviewKind::SelfReview, 201, body)
            .unwrap()
            .is_allowed()
    );
    assert!(matches!(
        read_access_review(AccessReviewKind::Subject, 201, body),
        Err(Error::Invalid { .. })
    ));
    let v1beta1 = br#"{"apiVersion":"authorization.k8s.io/v1beta1","status":{"allowed":true}}"#;
    assert!(read_access_review(AccessReviewKind::Subject, 201, v1beta1).is_err());
}

#[test]
fn backend_failures_are_errors_never_decisions() {
    for status in [500, 502, 503, 504, 401, 403, 404, 0, 204] {
        let err = read_access_review(
            AccessReviewKind::Subject,
            status,
            br#"{"status":{"allowed":true}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::ReviewFailed { status: s, .. } if s == status),
            "{status}"
        );
    }
    let huge = vec![b' '; MAX_ACCESS_REVIEW_BYTES + 1];
    assert!(matches!(
        read_access_review(AccessReviewKind::Subject, 201, &huge),
        Err(Error::TooLarge { .. })
    ));
    for bad in [
        &b""[..],
        b"{",
        b"[]",
        b"{\"status\":{\"allowed\":\"true\"}}",
        b"{\"status\":{\"allowed\":1}}",
        b"{\"status\":{\"allowed\":false,\"allowed\":true}}",
    ] {
        assert!(
            matches!(
                read_access_review(AccessReviewKind::Subject, 201, bad),
                Err(Error::Json { .. })
            ),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn long_reasons_are_cut() {
    let out = read(
        serde_json::json!({"allowed": false, "reason": "r".repeat(10_000), "evaluationError": "e".repeat(10_000)}),
    );
    assert_eq!(out.reason.len(), delegated_auth::MAX_REVIEW_ERROR_BYTES);
    assert_eq!(
        out.evaluation_error.unwrap().len(),
        delegated_auth::MAX_REVIEW_ERROR_BYTES
    );
}

proptest! {
    #[test]
    fn reading_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512), status in any::<u16>()) {
        let _ = read_access_review(AccessReviewKind::Subject, status, &body);
    }

    #[test]
    fn a_failed_evaluation_never_becomes_an_allow_or_a_cached_denial(allowed in any::<Option<bool>>(),
            denied in any::<Option<bool>>(), error in "\\PC{1,20}") {
        let out = read(serde_json::json!({"allowed": allowed, "denied": denied, "evaluationError": error}));
        prop_assert_eq!(out.is_allowed(), allowed == Some(true) && denied != Some(true));
        if !out.is_allowed() {
            prop_assert!(!out.is_cacheable());
        }
    }
}
