//! The kubelet's mapping of its HTTPS API paths to `nodes/<subresource>` attributes
//! (`pkg/kubelet/server/auth.go`, `GetRequestAttributes`).

use std::sync::Arc;

use crate::attributes::{Attributes, ResourceAttributes};
use crate::request_path::RequestPath;
use crate::user::UserInfo;

/// Whether the kubelet authorizes its endpoints with fine-grained subresources
/// (`KubeletFineGrainedAuthz`: alpha in Kubernetes 1.32, on by default from 1.33, GA in 1.36).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KubeletAuthz {
    /// `/pods`, `/runningpods/`, `/healthz`, `/configz` and `/statusz` are first authorized as
    /// `nodes/pods`, `nodes/healthz`, `nodes/configz`, `nodes/statusz`, then as `nodes/proxy`.
    FineGrained,
    /// Only `/stats`, `/metrics`, `/logs` and `/checkpoint` have subresources of their own;
    /// everything else is `nodes/proxy` (before Kubernetes 1.33, or with the gate off).
    Coarse,
}

/// The attributes the kubelet authorizes a request to its API with, in the order it tries them:
/// the request is allowed when any one of them is (the kubelet stops at the first allowed).
///
/// Every attribute is a resource request for `nodes/<subresource>` named `node_name`, API
/// version `v1`, with the verb from the method (`POST` `create`, `GET` `get`, `PUT` `update`,
/// `PATCH` `patch`, `DELETE` `delete`, any other the empty verb), and the subresource from the
/// path:
///
/// | path (and below it) | subresources tried |
/// | --- | --- |
/// | `/stats` | `stats` |
/// | `/metrics` | `metrics` |
/// | `/logs` | `log` |
/// | `/checkpoint` | `checkpoint` |
/// | `/pods`, `/runningpods` | `pods` (fine-grained), `proxy` |
/// | `/healthz` | `healthz` (fine-grained), `proxy` |
/// | `/configz` | `configz` (fine-grained), `proxy` |
/// | `/statusz` | `statusz` (fine-grained), `proxy` |
/// | anything else (`/exec`, `/run`, `/attach`, `/spec`, ...) | `proxy` |
///
/// "Below" means the path itself or a path under it (`/metrics/cadvisor`), never a longer
/// name (`/metricsx` is `proxy`). `path` is the decoded, clean path: an unclean one is
/// redirected by Go's `ServeMux` before the kubelet authorizes it (see [`RequestPath`]). Every
/// attribute set shares `user`.
#[must_use]
pub fn kubelet_attributes(
    user: &Arc<UserInfo>,
    method: &str,
    path: &RequestPath<'_>,
    node_name: &str,
    authz: KubeletAuthz,
) -> Vec<Attributes> {
    let verb = match method {
        "POST" => "create",
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    };
    let path = path.as_str();
    let fine = authz == KubeletAuthz::FineGrained;
    let subresources: &[&str] = if is_subpath(path, "/stats/") {
        &["stats"]
    } else if is_subpath(path, "/metrics") {
        &["metrics"]
    } else if is_subpath(path, "/logs/") {
        &["log"]
    } else if is_subpath(path, "/checkpoint/") {
        &["checkpoint"]
    } else if fine && (is_subpath(path, "/pods") || is_subpath(path, "/runningpods/")) {
        &["pods", "proxy"]
    } else if fine && is_subpath(path, "/healthz") {
        &["healthz", "proxy"]
    } else if fine && is_subpath(path, "/configz") {
        &["configz", "proxy"]
    } else if fine && is_subpath(path, "/statusz") {
        &["statusz", "proxy"]
    } else {
        &["proxy"]
    };
    subresources
        .iter()
        .map(|sub| {
            Attributes::resource(
                Arc::clone(user),
                verb,
                ResourceAttributes::new("", "v1", "nodes")
                    .with_subresource(*sub)
                    .with_name(node_name),
            )
        })
        .collect()
}

/// The kubelet's `isSubpath`: `path` without its trailing `/`, or a path under it.
fn is_subpath(subpath: &str, path: &str) -> bool {
    let path = path.strip_suffix('/').unwrap_or(path);
    subpath == path
        || subpath
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `TestIsSubPath` (pkg/kubelet/server/auth_test.go): subpath | path | expected.
    #[test]
    fn is_subpath_table() {
        for (sub, path, want) in [
            ("", "", true),
            ("foo", "foo", true),
            ("/foo", "/foo", true),
            ("/foo/", "/foo/", true),
            ("/foo/bar", "/foo/bar", true),
            ("/foo", "/", true),
            ("/foo/", "/", true),
            ("/foo/bar", "/", true),
            ("/foo", "/foo", true),
            ("/foo/", "/foo", true),
            ("/foo/bar", "/foo", true),
            ("/foo", "/bar", false),
            ("/foo", "/foobar", false),
            ("/foobar", "/foo", false),
        ] {
            assert_eq!(is_subpath(sub, path), want, "{sub:?} under {path:?}");
        }
    }
}
