//! TokenReview answers read as `k8s.io/apiserver`'s webhook token authenticator reads them
//! (plugin/pkg/authenticator/token/webhook), and hostile answers.

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
    BearerToken, Error, MAX_TOKEN_REVIEW_BYTES, TokenReview, TokenReviewOutcome, UserInfo,
};
use proptest::prelude::*;

const CANARY: &str = "CANARY-token-0123456789";

fn review(audiences: &[&str], implicit: &[&str]) -> TokenReview {
    TokenReview::new(BearerToken::new(CANARY.to_owned()).unwrap())
        .with_audiences(audiences.iter().copied())
        .with_implicit_audiences(implicit.iter().copied())
}

fn authenticated(name: &str, audiences: &[&str]) -> TokenReviewOutcome {
    TokenReviewOutcome::Authenticated {
        user: UserInfo::new(name),
        audiences: audiences.iter().map(|a| (*a).to_owned()).collect(),
    }
}

/// (name, audiences asked, implicit audiences, answer status, expected).
#[test]
fn audiences_decide_as_the_webhook_authenticator() {
    let unauth = TokenReviewOutcome::Unauthenticated { error: None };
    let cases: Vec<(
        &str,
        &[&str],
        &[&str],
        serde_json::Value,
        TokenReviewOutcome,
    )> = vec![
        (
            "no audiences asked: the answer's are not checked",
            &[],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["other"]}),
            authenticated("alice", &[]),
        ),
        (
            "the answer's audiences include ours",
            &["a", "b"],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["b", "c"]}),
            authenticated("alice", &["b"]),
        ),
        (
            "the intersection keeps our order",
            &["b", "a"],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["a", "b"]}),
            authenticated("alice", &["b", "a"]),
        ),
        (
            "an answer for another audience is not an authentication",
            &["a"],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["other"]}),
            unauth.clone(),
        ),
        (
            "no audiences in the answer, none implicit: not authenticated",
            &["a"],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}}),
            unauth.clone(),
        ),
        (
            "no audiences in the answer: the implicit ones count",
            &["a", "api"],
            &["api"],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": []}),
            authenticated("alice", &["api"]),
        ),
        (
            "audiences in the answer win over the implicit ones",
            &["api"],
            &["api"],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["other"]}),
            unauth.clone(),
        ),
        (
            "audiences are compared exactly",
            &["API"],
            &[],
            serde_json::json!({"authenticated": true, "user": {"username": "alice"}, "audiences": ["api", "API "]}),
            unauth.clone(),
        ),
        (
            "audiences are checked before the refusal's error",
            &["a"],
            &[],
            serde_json::json!({"authenticated": false, "error": "bad", "audiences": ["other"]}),
            unauth.clone(),
        ),
        (
            "a refusal",
            &[],
            &[],
            serde_json::json!({"authenticated": false}),
            unauth.clone(),
        ),
        (
            "a refusal with an error",
            &[],
            &[],
            serde_json::json!({"authenticated": false, "error": "token expired"}),
            TokenReviewOutcome::Unauthenticated {
                error: Some("token expired".to_owned()),
            },
        ),
        (
            "no status at all",
            &[],
            &[],
            serde_json::Value::Null,
            unauth.clone(),
        ),
        (
            "authenticated null is false",
            &[],
            &[],
            serde_json::json!({"authenticated": null, "user": {"username": "alice"}}),
            unauth.clone(),
        ),
    ];
    for (name, asked, implicit, status, want) in cases {
        let mut answer = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": CANARY}});
        if !status.is_null() {
            answer["status"] = status;
        }
        let got = review(asked, implicit)
            .read_answer(201, answer.to_string().as_bytes())
            .unwrap();
        assert_eq!(got, want, "{name}");
        assert_eq!(
            got.is_cacheable(),
            !matches!(got, TokenReviewOutcome::Unauthenticated { error: Some(_) }),
            "{name}"
        );
    }
}

#[test]
fn the_user_is_read_in_full() {
    let answer = br#"{"status":{"authenticated":true,"user":{"username":"system:serviceaccount:ns:sa",
        "uid":"u-1","groups":["system:serviceaccounts","system:serviceaccounts:ns","system:authenticated"],
        "extra":{"authentication.kubernetes.io/pod-name":["p"],"empty":null}}}}"#;
    let TokenReviewOutcome::Authenticated { user, audiences } =
        review(&[], &[]).read_answer(200, answer).unwrap()
    else {
        panic!("not authenticated");
    };
    assert!(audiences.is_empty());
    assert_eq!(user.name, "system:serviceaccount:ns:sa");
    assert_eq!(user.uid.as_deref(), Some("u-1"));
    assert_eq!(user.groups.len(), 3);
    assert_eq!(user.extra["authentication.kubernetes.io/pod-name"], ["p"]);
    assert!(user.extra["empty"].is_empty());
}

#[test]
fn hostile_answers_are_typed_errors() {
    let r = review(&[], &[]);
    for status in [500, 503, 401, 403, 404, 429, 0, 204, 302] {
        assert!(
            matches!(r.read_answer(status, b"{}"), Err(Error::ReviewFailed { status: s, .. }) if s == status),
            "{status}"
        );
    }
    let huge = vec![b' '; MAX_TOKEN_REVIEW_BYTES + 1];
    assert!(matches!(
        r.read_answer(201, &huge),
        Err(Error::TooLarge { .. })
    ));
    for bad in [
        &b""[..],
        b"null",
        b"[]",
        b"{",
        b"{\"status\":{\"authenticated\":\"true\"}}",
        b"{\"status\":{\"authenticated\":true,\"authenticated\":false}}",
        b"{\"status\":{\"user\":{\"groups\":\"g\"}}}",
        b"{\"status\":{\"audiences\":[1]}}",
    ] {
        assert!(
            matches!(r.read_answer(201, bad), Err(Error::Json { .. })),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    for (bad, why) in [
        (
            r#"{"kind":"SubjectAccessReview","status":{"authenticated":true,"user":{"username":"a"}}}"#,
            "kind",
        ),
        (
            r#"{"apiVersion":"authentication.k8s.io/v1beta1","status":{}}"#,
            "version",
        ),
        (
            r#"{"status":{"authenticated":true,"user":{"username":""}}}"#,
            "no name",
        ),
        (r#"{"status":{"authenticated":true}}"#, "no user"),
    ] {
        assert!(
            matches!(
                r.read_answer(201, bad.as_bytes()),
                Err(Error::Invalid { .. })
            ),
            "{why}"
        );
    }
}

#[test]
fn the_token_never_shows() {
    let r = review(&["aud"], &[]);
    assert!(!format!("{r:?}").contains(CANARY));
    // A server quoting the token in its error: redacted.
    let answer = format!(
        r#"{{"status":{{"authenticated":false,"audiences":["aud"],"error":"token {CANARY} is invalid"}}}}"#
    );
    let out = r.read_answer(201, answer.as_bytes()).unwrap();
    let TokenReviewOutcome::Unauthenticated { error: Some(e) } = &out else {
        panic!("{out:?}");
    };
    assert_eq!(e, "token <redacted> is invalid");
    // Errors from answers that echo the token in odd places.
    for bad in [
        format!(r#"{{"spec":{{"token":"{CANARY}"}},"status":{{"authenticated":"{CANARY}"}}}}"#),
        format!(r#"{{"status":{{"user":{{"username":["{CANARY}"]}}}}}}"#),
        format!(r#"{{"kind":"{CANARY}"}}"#),
        format!(r#"{{"status":"{CANARY}"#),
    ] {
        let err = r.read_answer(201, bad.as_bytes()).unwrap_err();
        assert!(!err.to_string().contains("CANARY"), "{err}");
        assert!(!format!("{err:?}").contains("CANARY"), "{err:?}");
    }
    // A refused token's error names no token.
    let err = BearerToken::new(format!("{CANARY}\0")).unwrap_err();
    assert!(!format!("{err} {err:?}").contains("CANARY"));
    // The body holds it, of course, and only there.
    assert!(
        r.to_json()
            .windows(CANARY.len())
            .any(|w| w == CANARY.as_bytes())
    );
}

#[test]
fn enormous_and_malformed_tokens_never_reach_a_review() {
    for bad in [
        String::new(),
        "a".repeat(delegated_auth::MAX_TOKEN_BYTES + 1),
        "tok\0en".to_owned(),
        "tok en".to_owned(),
        "tok\r\nX-Remote-User: admin".to_owned(),
        "t\u{f6}k".to_owned(),
    ] {
        assert!(BearerToken::new(bad).is_err());
    }
}

proptest! {
    #[test]
    fn reading_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512), status in any::<u16>()) {
        let _ = review(&["a"], &["b"]).read_answer(status, &body);
    }

    #[test]
    fn reading_any_status_object_never_panics(s in "\\PC*") {
        let body = format!(r#"{{"status":{s}}}"#);
        let _ = review(&["a"], &[]).read_answer(201, body.as_bytes());
    }

    #[test]
    fn an_authentication_is_only_for_an_audience_asked(asked in proptest::collection::vec("[a-c]", 1..3),
            answered in proptest::collection::vec("[a-d]", 0..3)) {
        let asked_refs: Vec<&str> = asked.iter().map(String::as_str).collect();
        let answer = serde_json::json!({"status": {"authenticated": true, "user": {"username": "u"}, "audiences": answered}});
        let out = review(&asked_refs, &[]).read_answer(201, answer.to_string().as_bytes()).unwrap();
        let overlap = asked.iter().any(|a| answered.contains(a));
        prop_assert_eq!(out.is_authenticated(), overlap);
        if let TokenReviewOutcome::Authenticated { audiences, .. } = out {
            prop_assert!(audiences.iter().all(|a| asked.contains(a) && answered.contains(a)));
        }
    }
}
