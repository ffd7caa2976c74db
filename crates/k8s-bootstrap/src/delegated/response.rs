//! The layer's own answers, as kube-apiserver writes them: a `v1` `Status` in JSON, and the
//! response body that is either the inner service's or one of these.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use delegated_auth::{Attributes, Target};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::json;

pin_project_lite::pin_project! {
    /// The body of a [`DelegatedAuthService`](super::DelegatedAuthService)'s response: the
    /// inner service's body, or the layer's own answer (a `Status` in JSON, or a redirect's
    /// empty body) in one frame.
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Own { data: Option<Bytes> },
    }
}

impl<B> ResponseBody<B> {
    pub(super) fn inner(body: B) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Inner { body },
        }
    }

    fn own(data: Bytes) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Own {
                data: (!data.is_empty()).then_some(data),
            },
        }
    }
}

impl<B> std::fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Inner { .. } => "inner",
            Kind::Own { .. } => "own",
        };
        f.debug_struct("ResponseBody").field("kind", &kind).finish()
    }
}

impl<B> http_body::Body for ResponseBody<B>
where
    B: http_body::Body,
    B::Data: From<Bytes>,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Own { data } => Poll::Ready(
                data.take()
                    .map(|d| Ok(http_body::Frame::data(B::Data::from(d)))),
            ),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Own { data } => data.is_none(),
        }
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Own { data } => {
                http_body::SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
        }
    }
}

/// 401, as kube-apiserver answers a request it could not authenticate (no
/// `WWW-Authenticate`: kube-apiserver sends none).
pub(super) fn unauthorized<B>() -> Response<ResponseBody<B>> {
    status(
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "Unauthorized",
        None,
    )
}

/// 403 for `attributes`, as kube-apiserver's `responsewriters.Forbidden` words it, with the
/// authorizer's `reason` appended when given.
pub(super) fn forbidden<B>(
    attributes: &Attributes,
    reason: Option<&str>,
) -> Response<ResponseBody<B>> {
    let user = &attributes.user.name;
    let verb = &attributes.verb;
    let (subject, details, message) = match &attributes.target {
        Target::Resource(r) => resource_forbidden(user, verb, r),
        other => {
            let path = match other {
                Target::NonResource { path } => path.as_str(),
                _ => "",
            };
            (
                "forbidden".to_owned(),
                json!({}),
                format!("User {user:?} cannot {verb} path {path:?}"),
            )
        }
    };
    let message = match reason.filter(|r| !r.is_empty()) {
        Some(reason) => format!("{subject}: {message}: {reason}"),
        None => format!("{subject}: {message}"),
    };
    status(StatusCode::FORBIDDEN, "Forbidden", &message, Some(details))
}

/// The subject, details and message of a 403 for a resource request.
fn resource_forbidden(
    user: &str,
    verb: &str,
    r: &delegated_auth::ResourceAttributes,
) -> (String, serde_json::Value, String) {
    {
        {
            let mut resource = r.resource.clone();
            if !r.subresource.is_empty() {
                resource = format!("{resource}/{}", r.subresource);
            }
            let scope = if r.namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {:?}", r.namespace)
            };
            let group_resource = if r.api_group.is_empty() {
                r.resource.clone()
            } else {
                format!("{}.{}", r.resource, r.api_group)
            };
            let subject = if r.name.is_empty() {
                format!("{group_resource} is forbidden")
            } else {
                format!("{group_resource} {:?} is forbidden", r.name)
            };
            let mut details = serde_json::Map::new();
            for (k, v) in [
                ("name", &r.name),
                ("group", &r.api_group),
                ("kind", &r.resource),
            ] {
                if !v.is_empty() {
                    details.insert(k.to_owned(), json!(v));
                }
            }
            (
                subject,
                serde_json::Value::Object(details),
                format!(
                    "User {user:?} cannot {verb} resource {resource:?} in API group {:?} {scope}",
                    r.api_group
                ),
            )
        }
    }
}

/// 400, for a request whose path or attributes cannot be read.
pub(super) fn bad_request<B>(message: &str) -> Response<ResponseBody<B>> {
    status(StatusCode::BAD_REQUEST, "BadRequest", message, None)
}

/// 500, as kube-apiserver's `responsewriters.InternalError`: a review failed, so nothing was
/// decided.
pub(super) fn internal_error<B>(message: &str) -> Response<ResponseBody<B>> {
    status(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        &format!("Internal error occurred: {message}"),
        Some(json!({"causes": [{"message": message}]})),
    )
}

/// 429, as kube-apiserver's `errors.NewTooManyRequests`: `details.retryAfterSeconds` and the
/// `Retry-After` header.
pub(super) fn too_many_requests<B>(retry_after: u32) -> Response<ResponseBody<B>> {
    let mut response = status(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Too many requests: too many reviews, please try again later",
        Some(json!({"retryAfterSeconds": retry_after})),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}

/// 301 to the clean path, as Go's `ServeMux` answers a path that is not clean.
pub(super) fn redirect<B>(clean: &str, query: Option<&str>) -> Response<ResponseBody<B>> {
    let mut location = String::with_capacity(clean.len());
    for b in clean.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            location.push(char::from(b));
        } else {
            location.push_str(&format!("%{b:02X}"));
        }
    }
    if let Some(query) = query {
        location.push('?');
        location.push_str(query);
    }
    let mut response = Response::new(ResponseBody::own(Bytes::new()));
    *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    } else {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    response
}

fn status<B>(
    code: StatusCode,
    reason: &str,
    message: &str,
    details: Option<serde_json::Value>,
) -> Response<ResponseBody<B>> {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    });
    if let (Some(details), Some(object)) = (details, status.as_object_mut()) {
        object.insert("details".to_owned(), details);
    }
    if let Some(object) = status.as_object_mut() {
        object.insert("code".to_owned(), json!(code.as_u16()));
    }
    let mut body = serde_json::to_vec(&status).unwrap_or_default();
    body.push(b'\n');
    let mut response = Response::new(ResponseBody::own(Bytes::from(body)));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use delegated_auth::{ResourceAttributes, UserInfo};
    use http_body_util::{BodyExt as _, Full};

    use super::*;

    async fn message(response: Response<ResponseBody<Full<Bytes>>>) -> serde_json::Value {
        let body = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn forbidden_is_worded_as_kube_apiserver_words_it() {
        let user = UserInfo::new("alice");
        let path = Attributes::non_resource(user.clone(), "get", "/metrics");
        let s = message(forbidden(&path, None)).await;
        assert_eq!(
            s["message"],
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
        assert_eq!(s["details"], json!({}));
        let s = message(forbidden(&path, Some("RBAC: no binding"))).await;
        assert_eq!(
            s["message"],
            r#"forbidden: User "alice" cannot get path "/metrics": RBAC: no binding"#
        );
        let pods = Attributes::resource(
            user.clone(),
            "list",
            ResourceAttributes::new("", "v1", "pods").in_namespace("default"),
        );
        let s = message(forbidden(&pods, None)).await;
        assert_eq!(
            s["message"],
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        let scale = Attributes::resource(
            user,
            "update",
            ResourceAttributes::new("apps", "v1", "deployments")
                .with_subresource("scale")
                .with_name("web"),
        );
        let s = message(forbidden(&scale, None)).await;
        assert_eq!(
            s["message"],
            r#"deployments.apps "web" is forbidden: User "alice" cannot update resource "deployments/scale" in API group "apps" at the cluster scope"#
        );
        assert_eq!(
            s["details"],
            json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        assert_eq!(
            (s["code"].as_u64(), s["reason"].as_str()),
            (Some(403), Some("Forbidden"))
        );
    }

    #[tokio::test]
    async fn too_many_requests_says_when_to_retry() {
        let r = too_many_requests::<Full<Bytes>>(3);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "3");
        let s = message(r).await;
        assert_eq!(
            (s["reason"].as_str(), s["code"].as_u64()),
            (Some("TooManyRequests"), Some(429))
        );
        assert_eq!(s["details"], json!({"retryAfterSeconds": 3}));
    }

    #[test]
    fn redirects_encode_the_clean_path() {
        let r = redirect::<Full<Bytes>>("/a b/\u{e9}", Some("x=1"));
        assert_eq!(r.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(r.headers()[header::LOCATION], "/a%20b/%C3%A9?x=1");
    }
}
