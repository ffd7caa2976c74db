//! A request's authorization attributes as `k8s.io/apiserver`'s `RequestInfoFactory` derives
//! them (`pkg/endpoints/request/requestinfo.go`).

use crate::attributes::{Attributes, ResourceAttributes};
use crate::error::Error;
use crate::list_options;
use crate::query::ListParams;
use crate::request_path::{MAX_REQUEST_TARGET_BYTES, RequestPath};
use crate::user::UserInfo;

/// Which path prefixes hold API resources: kube-apiserver's (`/api` without a group, `/apis`
/// with one), or none, as kube-rbac-proxy configures it (every request is a non-resource one).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiPrefixes {
    /// `/api/{version}/...` and `/apis/{group}/{version}/...`, as kube-apiserver and every
    /// aggregated API server resolve them.
    Kubernetes,
    /// No API prefix: every request is a non-resource request for its path.
    None,
}

/// What a request asks for, as Kubernetes' `RequestInfo` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RequestInfo {
    /// Whether the request is for an API resource (or subresource).
    pub is_resource_request: bool,
    /// The request's decoded, clean path.
    pub path: String,
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`) for resource requests; the lowercase HTTP method for
    /// non-resource requests; empty for a resource request with another method.
    pub verb: String,
    /// `api` or `apis`, empty for non-resource requests.
    pub api_prefix: String,
    /// The API group, empty for the core group.
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The namespace, empty for cluster-scoped requests and requests across namespaces.
    pub namespace: String,
    /// The resource (`pods`).
    pub resource: String,
    /// The subresource (`status`, `log`), empty for none.
    pub subresource: String,
    /// The object's name, from the path or from an exact `metadata.name` field selector on a
    /// list or watch.
    pub name: String,
    /// The path segments from the resource on (`pods`, `foo`, `status`, ...).
    pub parts: Vec<String>,
    /// The raw `fieldSelector` of a `list`, `watch` or `deletecollection` (not of the
    /// deprecated `/watch/` paths), empty otherwise.
    pub field_selector: String,
    /// The raw `labelSelector` of a `list`, `watch` or `deletecollection` (not of the
    /// deprecated `/watch/` paths), empty otherwise.
    pub label_selector: String,
}

impl RequestInfo {
    /// Resolves a request as Kubernetes' `RequestInfoFactory.NewRequestInfo` does, with
    /// `prefixes` telling which paths hold resources.
    ///
    /// `method` is the HTTP method as sent (`GET`; compared exactly, as Go compares it),
    /// `path` the request's decoded, clean path, `query` its raw query string (without `?`),
    /// if any. Field and label selectors are read as with `AuthorizeWithSelectors` (GA in
    /// Kubernetes 1.34).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] for a query over the request-target bound. A path that Kubernetes
    /// cannot resolve (`/api/v1/watch` with nothing after it) is not an error here: Kubernetes
    /// answers it with the information known so far and so does this function.
    pub fn resolve(
        method: &str,
        path: &RequestPath,
        query: Option<&str>,
        prefixes: &ApiPrefixes,
    ) -> Result<Self, Error> {
        let query = query.unwrap_or("");
        if query.len() > MAX_REQUEST_TARGET_BYTES {
            return Err(Error::TooLarge {
                what: "request query",
                limit: MAX_REQUEST_TARGET_BYTES,
            });
        }
        Ok(resolve(method, path.as_str(), query, prefixes))
    }

    /// The attributes an authorizer decides on, for `user`; copies what it needs (see
    /// [`RequestInfo::into_attributes`] to move it instead).
    #[must_use]
    pub fn to_attributes(&self, user: UserInfo) -> Attributes {
        self.clone().into_attributes(user)
    }

    /// The attributes an authorizer decides on, for `user`, made of this request's own
    /// strings (nothing is copied).
    #[must_use]
    pub fn into_attributes(self, user: UserInfo) -> Attributes {
        if self.is_resource_request {
            let mut resource =
                ResourceAttributes::new(self.api_group, self.api_version, self.resource)
                    .in_namespace(self.namespace)
                    .with_subresource(self.subresource)
                    .with_name(self.name);
            resource.field_selector = self.field_selector;
            resource.label_selector = self.label_selector;
            Attributes::resource(user, self.verb, resource)
        } else {
            Attributes::non_resource(user, self.verb, self.path)
        }
    }
}

/// The lowercase name of an HTTP method, as Go's `strings.ToLower` gives it (the common ones
/// without walking the characters).
fn lowercase_method(method: &str) -> String {
    match method {
        "GET" => "get",
        "HEAD" => "head",
        "POST" => "post",
        "PUT" => "put",
        "PATCH" => "patch",
        "DELETE" => "delete",
        "OPTIONS" => "options",
        other => return other.to_lowercase(),
    }
    .to_owned()
}

/// The verbs that come from a path segment, and those of them that take no subresource.
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// The subresources of a namespace (`/api/v1/namespaces/{name}/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

fn resolve(method: &str, path: &str, query: &str, prefixes: &ApiPrefixes) -> RequestInfo {
    let mut info = RequestInfo {
        path: path.to_owned(),
        verb: lowercase_method(method),
        ..RequestInfo::default()
    };
    let trimmed = path.trim_matches('/');
    // Fewer than three segments (`/metrics`, `/healthz/ready`) is never a resource request:
    // known before the segments are collected.
    if *prefixes == ApiPrefixes::None || trimmed.splitn(3, '/').count() < 3 {
        return info;
    }
    let segments: Vec<&str> = trimmed.split('/').collect();
    let mut parts: &[&str] = &segments;
    let (prefix, grouped) = match parts.first() {
        Some(&"api") => ("api", false),
        Some(&"apis") => ("apis", true),
        _ => return info,
    };
    info.api_prefix = prefix.to_owned();
    parts = parts.get(1..).unwrap_or_default();
    if grouped {
        if parts.len() < 3 {
            return info;
        }
        info.api_group = parts.first().copied().unwrap_or_default().to_owned();
        parts = parts.get(1..).unwrap_or_default();
    }
    info.is_resource_request = true;
    info.api_version = parts.first().copied().unwrap_or_default().to_owned();
    parts = parts.get(1..).unwrap_or_default();

    let mut verb_from_path = false;
    match parts.first() {
        Some(first) if SPECIAL_VERBS.contains(first) => {
            if parts.len() < 2 {
                // Kubernetes returns an error with what it knows so far.
                return info;
            }
            info.verb = (*first).to_owned();
            parts = parts.get(1..).unwrap_or_default();
            verb_from_path = true;
        }
        _ => {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }
    }

    if let (Some(&"namespaces"), Some(namespace)) = (parts.first(), parts.get(1)) {
        info.namespace = (*namespace).to_owned();
        if parts
            .get(2)
            .is_some_and(|next| !NAMESPACE_SUBRESOURCES.contains(next))
        {
            parts = parts.get(2..).unwrap_or_default();
        }
    }
    info.parts = parts.iter().map(|s| (*s).to_owned()).collect();

    if parts.len() >= 3 && info.verb != "proxy" {
        info.subresource = parts.get(2).copied().unwrap_or_default().to_owned();
    }
    if parts.len() >= 2 {
        info.name = parts.get(1).copied().unwrap_or_default().to_owned();
    }
    info.resource = parts.first().copied().unwrap_or_default().to_owned();

    let params = ListParams::read(query);
    if info.name.is_empty() && info.verb == "get" {
        let list = list_options::resolve(&params);
        info.verb = list.verb.to_owned();
        if let Some(name) = list.name {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".to_owned();
    }
    if !verb_from_path && matches!(info.verb.as_str(), "list" | "watch" | "deletecollection") {
        if let Some(v) = params.field_selector {
            info.field_selector = v.value;
        }
        if let Some(v) = params.label_selector {
            info.label_selector = v.value;
        }
    }
    info
}
