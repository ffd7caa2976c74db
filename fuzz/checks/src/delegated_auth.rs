//! Checks for the `delegated_auth_*` targets: the readers of what an API server sends back
//! (TokenReview and SubjectAccessReview answers, OIDC discovery, the authentication
//! ConfigMap).

use delegated_auth::{
    AccessReviewKind, AuthenticationConfigMap, BearerToken, Decision, OidcDiscovery, TokenReview,
    TokenReviewOutcome, read_access_review,
};

use crate::hygiene::assert_hidden;
use crate::outcome::Outcome;

/// The token every TokenReview answer is read for.
const REVIEWED_TOKEN: &str = "FUZZ-reviewed-token.abcdef0123456789";

/// `TokenReview::read_answer` (status 201, audiences `aud-a` and `aud-b`, implicit `api`) on
/// the whole input.
///
/// An authentication names only audiences asked for and a user with a name; neither the
/// outcome nor an error ever shows the token; a refusal's error is bounded. Accepted: the
/// answer authenticates.
pub fn delegated_auth_token_review(data: &[u8]) -> Outcome {
    let review = TokenReview::new(BearerToken::new(REVIEWED_TOKEN.to_owned()).expect("token"))
        .with_audiences(["aud-a", "aud-b"])
        .with_implicit_audiences(["api"]);
    match review.read_answer(201, data) {
        Err(e) => {
            assert_hidden(&format!("{e} {e:?}"), REVIEWED_TOKEN, "");
            Outcome::Rejected
        }
        Ok(TokenReviewOutcome::Authenticated { user, audiences }) => {
            assert!(!user.name.is_empty());
            assert!(!audiences.is_empty());
            assert!(audiences.iter().all(|a| a == "aud-a" || a == "aud-b"));
            Outcome::Accepted
        }
        Ok(out @ TokenReviewOutcome::Unauthenticated { .. }) => {
            if let TokenReviewOutcome::Unauthenticated { error: Some(e) } = &out {
                assert!(e.len() <= delegated_auth::MAX_REVIEW_ERROR_BYTES);
                assert!(!e.contains(REVIEWED_TOKEN), "token echoed: {e}");
                assert!(!out.is_cacheable());
            }
            Outcome::Rejected
        }
        Ok(_) => Outcome::Rejected,
    }
}

/// `read_access_review` (a SubjectAccessReview, status 201) on the whole input.
///
/// An allow is always cacheable; a decision made beside an `evaluationError` that is not an
/// allow never is; reasons are bounded. Accepted: the answer allows.
pub fn delegated_auth_access_review(data: &[u8]) -> Outcome {
    let Ok(out) = read_access_review(AccessReviewKind::Subject, 201, data) else {
        return Outcome::Rejected;
    };
    assert!(out.reason.len() <= delegated_auth::MAX_REVIEW_ERROR_BYTES);
    if out.is_allowed() {
        assert_eq!(out.decision, Decision::Allow);
        assert!(out.is_cacheable());
    } else if out.evaluation_error.is_some() {
        assert!(!out.is_cacheable());
    }
    Outcome::accepted_if(out.is_allowed())
}

/// `OidcDiscovery::from_json` on the whole input.
///
/// An accepted document has an issuer and an `https://` key set URL. Accepted: it parses.
pub fn delegated_auth_oidc_discovery(data: &[u8]) -> Outcome {
    let Ok(d) = OidcDiscovery::from_json(data) else {
        return Outcome::Rejected;
    };
    assert!(!d.issuer().is_empty());
    assert!(d.jwks_uri().starts_with("https://"));
    Outcome::Accepted
}

/// `AuthenticationConfigMap::from_json` on the whole input.
///
/// Never panics; a front-proxy configuration strips what it reads: after
/// `remove_identity_headers`, the headers name no user. Accepted: it parses.
pub fn delegated_auth_configmap(data: &[u8]) -> Outcome {
    let Ok(cm) = AuthenticationConfigMap::from_json(data) else {
        return Outcome::Rejected;
    };
    if let Some(fp) = cm.front_proxy() {
        let mut headers = vec![
            ("X-Remote-User", "u"),
            ("X-Remote-Group", "g"),
            ("X-Remote-Extra-K", "v"),
            ("X-Remote-Uid", "1"),
        ];
        fp.headers().remove_identity_headers(&mut headers);
        assert_eq!(
            fp.headers().user_from_headers(&headers).expect("utf-8"),
            None
        );
    }
    Outcome::Accepted
}
