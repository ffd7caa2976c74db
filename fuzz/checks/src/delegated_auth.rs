//! Checks for the `delegated_auth_*` targets: the readers of what an API server sends back
//! (TokenReview and SubjectAccessReview answers, OIDC discovery, the authentication
//! ConfigMap), and of what clients and operators send (request lines, RBAC objects,
//! kube-rbac-proxy configuration files).

use std::sync::Arc;

use delegated_auth::{
    AccessReviewKind, ApiPrefixes, Attributes, AuthenticationConfigMap, BearerToken,
    BearerTokenRef, Decision, Error, KubeletAuthz, OidcDiscovery, Policy, RbacObjects,
    RbacProxyConfig, RequestInfo, RequestPath, ResourceAttributes, TokenReview, TokenReviewOutcome,
    UserInfo, kubelet_attributes, read_access_review,
};

use crate::hygiene::assert_hidden;
use crate::input::split_at_first;
use crate::outcome::Outcome;

/// `BearerTokenRef::from_authorization` on the whole input as an `Authorization` header value,
/// against Kubernetes' reading written out plainly (trim, split at spaces into at most three,
/// `Bearer` in any case, then the token checked): the same token or the same refusal; the
/// owned reading agrees; `Debug` never shows the token. Accepted: a bearer token.
pub fn delegated_auth_bearer_header(data: &[u8]) -> Outcome {
    let reference = {
        let value = data.trim_ascii();
        let mut parts = value.splitn(3, |b| *b == b' ');
        match (parts.next(), parts.next()) {
            (Some(scheme), Some(token))
                if scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty() =>
            {
                let ok = token.len() <= delegated_auth::MAX_TOKEN_BYTES
                    && token.iter().all(|b| (b'!'..=b'~').contains(b));
                Some(ok.then_some(token))
            }
            _ => None,
        }
    };
    let ours = BearerTokenRef::from_authorization(data);
    let owned = BearerToken::from_authorization(data);
    match (reference, ours, owned) {
        (None, Ok(None), Ok(None)) => Outcome::Rejected,
        (Some(None), Err(_), Err(_)) => Outcome::Rejected,
        (Some(Some(want)), Ok(Some(token)), Ok(Some(owned))) => {
            assert_eq!(token.expose_secret().as_bytes(), want);
            assert_eq!(owned.expose_secret().as_bytes(), want);
            assert_eq!(owned.borrow_token(), token);
            // Only the fixed redaction, whatever the token (which may itself be a substring of
            // the type's name).
            assert_eq!(format!("{token:?}"), "BearerTokenRef(<redacted>)");
            assert_eq!(format!("{owned:?}"), "BearerToken(<redacted>)");
            Outcome::Accepted
        }
        (reference, ours, owned) => {
            panic!("reference {reference:?}, borrowed {ours:?}, owned {owned:?}")
        }
    }
}

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

/// `RequestPath::parse` then `RequestInfo::resolve` on a request line: the method, a space,
/// the request target (`/path?query`), as UTF-8.
///
/// A parsed path is clean and parses to itself once more (when no `%` is left in it); a
/// redirect target is clean; the resolved verb of a resource request is a Kubernetes verb or
/// empty; the kubelet's mapping gives one or two attributes. Accepted: the path parses.
pub fn delegated_auth_request_info(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let (method, target) = text.split_once(' ').unwrap_or(("GET", text));
    let (raw_path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let path = match RequestPath::parse(raw_path) {
        Ok(path) => path,
        Err(Error::PathNotClean { clean }) => {
            assert!(!clean.contains("//") && !clean.contains("/../") && !clean.contains("/./"));
            if !clean.contains('%') && !clean.bytes().any(|b| b <= b' ' || b == 0x7f) {
                assert_eq!(RequestPath::parse(&clean).unwrap().as_str(), clean);
            }
            return Outcome::Rejected;
        }
        Err(_) => return Outcome::Rejected,
    };
    if !path.as_str().contains('%') && !path.as_str().bytes().any(|b| b <= b' ' || b == 0x7f) {
        assert_eq!(RequestPath::parse(path.as_str()).unwrap(), path);
    }
    let info = RequestInfo::resolve(method, &path, query, &ApiPrefixes::Kubernetes).unwrap();
    // Any other method's verb is the method in lowercase, as RequestInfoFactory gives it.
    if info.is_resource_request && info.verb != method.to_ascii_lowercase() {
        assert!(matches!(
            &*info.verb,
            "" | "get"
                | "list"
                | "watch"
                | "create"
                | "update"
                | "patch"
                | "delete"
                | "deletecollection"
                | "proxy"
        ));
    } else {
        assert_eq!(info.verb, method.to_lowercase());
    }
    // The parts start at the resource; the segments borrowed are the path's.
    assert_eq!(info.parts().next().unwrap_or(""), info.resource);
    assert!(info.parts().all(|part| path.as_str().contains(part)));
    let user = Arc::new(UserInfo::new("u"));
    let attrs = info.to_attributes(Arc::clone(&user));
    assert_eq!(info.into_attributes(Arc::clone(&user)), attrs);
    let node = kubelet_attributes(&user, method, &path, "n", KubeletAuthz::FineGrained);
    assert!((1..=2).contains(&node.len()));
    Outcome::Accepted
}

/// `RbacObjects::add_json`, or `add_yaml` when the input does not start with `{`, then
/// `Policy::new` and decisions for a fixed set of requests.
///
/// An allowed request is allowed by one of the rules `rules_for` gives the same user in the
/// same namespace, and a request no such rule allows is not allowed. Accepted: the objects
/// read.
pub fn delegated_auth_rbac_objects(data: &[u8]) -> Outcome {
    let mut objects = RbacObjects::new();
    let read = if data.first() == Some(&b'{') {
        objects.add_json(data)
    } else {
        objects.add_yaml(data)
    };
    if read.is_err() {
        return Outcome::Rejected;
    }
    let policy = Policy::new(&objects);
    let users = [
        UserInfo::new("alice").with_groups(["devs", "system:authenticated"]),
        UserInfo::new("system:serviceaccount:ns:app").with_groups(["system:serviceaccounts"]),
    ];
    for user in users {
        let requests = [
            Attributes::resource(
                user.clone(),
                "get",
                ResourceAttributes::new("", "v1", "pods")
                    .in_namespace("ns")
                    .with_name("p"),
            ),
            Attributes::resource(
                user.clone(),
                "list",
                ResourceAttributes::new("apps", "v1", "deployments").with_subresource("scale"),
            ),
            Attributes::non_resource(user.clone(), "get", "/metrics"),
        ];
        for request in &requests {
            let namespace = match &request.target {
                delegated_auth::Target::Resource(r) => r.namespace.clone(),
                _ => String::new(),
            };
            let rules = policy.rules_for(&request.user, &namespace).rules;
            assert_eq!(
                policy.authorize(request).is_allowed(),
                rules.iter().any(|r| r.allows(request))
            );
        }
    }
    Outcome::Accepted
}

/// `RbacProxyConfig::from_yaml` on the configuration before the first `\0`; after it, the
/// request target (`/path?query`) to derive attributes for, with header value `h`.
///
/// A configuration that reads gives, for a clean path, attributes whose verb is the lowercase
/// method, at least one unless rewrites are configured; static authorizations and the path
/// rule decide without panicking. Accepted: the configuration reads.
pub fn delegated_auth_proxy_config(data: &[u8]) -> Outcome {
    let (config, request) = split_at_first(data, 0);
    let Ok(config) = RbacProxyConfig::from_yaml(config) else {
        return Outcome::Rejected;
    };
    let target = std::str::from_utf8(request).unwrap_or("/metrics");
    let (raw_path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let path = RequestPath::parse(raw_path).unwrap_or_else(|_| RequestPath::parse("/").unwrap());
    let user = Arc::new(UserInfo::new("u").with_groups(["g"]));
    let attrs = config.attributes(&user, "GET", &path, query, &["h"]);
    for a in &attrs {
        assert_eq!(a.verb, "get");
        let _ = config.static_allows(a);
    }
    let _ = config.path_rule(&path);
    Outcome::Accepted
}
