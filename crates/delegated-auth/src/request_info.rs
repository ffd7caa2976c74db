//! A request's authorization attributes as `k8s.io/apiserver`'s `RequestInfoFactory` derives
//! them (`pkg/endpoints/request/requestinfo.go`).

use std::borrow::Cow;
use std::sync::Arc;

use crate::attributes::{Attributes, ResourceAttributes};
use crate::error::Error;
use crate::list_options;
use crate::query::ListParams;
use crate::request_path::{MAX_REQUEST_TARGET_BYTES, RequestPath, for_each_slash};
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
///
/// It borrows from the request: the path's segments from the [`RequestPath`] (already
/// decoded), the selectors from the query unless they had to be unescaped, the verb from a
/// constant unless the method is an uncommon one. Nothing is copied until
/// [`RequestInfo::into_attributes`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    /// Whether the request is for an API resource (or subresource).
    pub is_resource_request: bool,
    /// The request's decoded, clean path.
    pub path: &'a str,
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`) for resource requests; the lowercase HTTP method for
    /// non-resource requests; empty for a resource request with another method.
    pub verb: Cow<'a, str>,
    /// `api` or `apis`, empty for non-resource requests.
    pub api_prefix: &'a str,
    /// The API group, empty for the core group.
    pub api_group: &'a str,
    /// The API version.
    pub api_version: &'a str,
    /// The namespace, empty for cluster-scoped requests and requests across namespaces.
    pub namespace: &'a str,
    /// The resource (`pods`).
    pub resource: &'a str,
    /// The subresource (`status`, `log`), empty for none.
    pub subresource: &'a str,
    /// The object's name, from the path or from an exact `metadata.name` field selector on a
    /// list or watch (owned when the selector escaped it).
    pub name: Cow<'a, str>,
    /// The raw `fieldSelector` of a `list`, `watch` or `deletecollection` (not of the
    /// deprecated `/watch/` paths), empty otherwise; owned when it was percent-encoded.
    pub field_selector: Cow<'a, str>,
    /// The raw `labelSelector` of a `list`, `watch` or `deletecollection` (not of the
    /// deprecated `/watch/` paths), empty otherwise; owned when it was percent-encoded.
    pub label_selector: Cow<'a, str>,
    /// The path from the resource on (`pods/foo/status`), read by [`RequestInfo::parts`].
    parts: &'a str,
}

impl<'a> RequestInfo<'a> {
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
        method: &'a str,
        path: &'a RequestPath<'_>,
        query: Option<&'a str>,
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

    /// The path segments from the resource on (`pods`, `foo`, `status`, ...), as Kubernetes'
    /// `RequestInfo.Parts`; none for a non-resource request.
    pub fn parts(&self) -> impl Iterator<Item = &'a str> + Clone + use<'a> {
        self.parts.split('/').filter(|s| !s.is_empty())
    }

    /// The attributes an authorizer decides on, for `user` (shared: a reference count when
    /// `user` is an `Arc`); copies this request's strings (see
    /// [`RequestInfo::into_attributes`] to move those it owns).
    #[must_use]
    pub fn to_attributes(&self, user: impl Into<Arc<UserInfo>>) -> Attributes {
        self.clone().into_attributes(user)
    }

    /// The attributes an authorizer decides on, for `user` (shared: a reference count when
    /// `user` is an `Arc`), made of copies of the strings this request borrows and of the
    /// strings it owns, moved.
    #[must_use]
    pub fn into_attributes(self, user: impl Into<Arc<UserInfo>>) -> Attributes {
        if self.is_resource_request {
            let mut resource =
                ResourceAttributes::new(self.api_group, self.api_version, self.resource)
                    .in_namespace(self.namespace)
                    .with_subresource(self.subresource)
                    .with_name(self.name);
            resource.field_selector = self.field_selector.into_owned();
            resource.label_selector = self.label_selector.into_owned();
            Attributes::resource(user, self.verb, resource)
        } else {
            Attributes::non_resource(user, self.verb, self.path)
        }
    }
}

/// The lowercase name of an HTTP method, as Go's `strings.ToLower` gives it (the common ones
/// without walking the characters or allocating).
fn lowercase_method(method: &str) -> Cow<'static, str> {
    Cow::Borrowed(match method {
        "GET" => "get",
        "HEAD" => "head",
        "POST" => "post",
        "PUT" => "put",
        "PATCH" => "patch",
        "DELETE" => "delete",
        "OPTIONS" => "options",
        other => return Cow::Owned(other.to_lowercase()),
    })
}

/// The verbs that come from a path segment, and those of them that take no subresource.
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// The subresources of a namespace (`/api/v1/namespaces/{name}/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

fn resolve<'a>(
    method: &str,
    path: &'a str,
    query: &'a str,
    prefixes: &ApiPrefixes,
) -> RequestInfo<'a> {
    let mut info = RequestInfo {
        path,
        verb: lowercase_method(method),
        ..RequestInfo::default()
    };
    if *prefixes == ApiPrefixes::None {
        return info;
    }
    // Go trims every `/` at either end; a clean path has at most one at each.
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let mut rest = Segments::new(trimmed.strip_suffix('/').unwrap_or(trimmed));
    // Fewer than three segments (`/metrics`, `/healthz/ready`) is never a resource request.
    if rest.count_up_to(3) < 3 {
        return info;
    }
    let (prefix, grouped) = match rest.first() {
        Some("api") => ("api", false),
        Some("apis") => ("apis", true),
        _ => return info,
    };
    info.api_prefix = prefix;
    rest.skip(1);
    if grouped {
        if rest.count_up_to(3) < 3 {
            return info;
        }
        info.api_group = rest.first().unwrap_or_default();
        rest.skip(1);
    }
    info.is_resource_request = true;
    info.api_version = rest.first().unwrap_or_default();
    rest.skip(1);

    let mut verb_from_path = false;
    match rest.first() {
        Some(first) if SPECIAL_VERBS.contains(&first) => {
            if rest.count_up_to(2) < 2 {
                // Kubernetes returns an error with what it knows so far.
                return info;
            }
            info.verb = Cow::Borrowed(first);
            rest.skip(1);
            verb_from_path = true;
        }
        _ => {
            info.verb = Cow::Borrowed(match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            });
        }
    }

    if let (Some("namespaces"), Some(namespace)) = (rest.first(), rest.nth(1)) {
        info.namespace = namespace;
        if rest
            .nth(2)
            .is_some_and(|next| !NAMESPACE_SUBRESOURCES.contains(&next))
        {
            rest.skip(2);
        }
    }
    info.parts = rest.rest();

    if info.verb != "proxy" {
        info.subresource = rest.nth(2).unwrap_or_default();
    }
    if let Some(name) = rest.nth(1) {
        info.name = Cow::Borrowed(name);
    }
    info.resource = rest.first().unwrap_or_default();
    // A named request reads nothing from the query: the list options below decide a verb or a
    // name only for a request without one, and selectors only for list, watch and
    // deletecollection, which a name rules out (or the path's verb: its selectors are not
    // read either).
    if !info.name.is_empty() {
        return info;
    }

    let params = ListParams::read(query);
    if info.name.is_empty() && info.verb == "get" {
        let list = list_options::resolve(&params);
        info.verb = Cow::Borrowed(list.verb);
        if let Some(name) = list.name {
            info.name = Cow::Owned(name);
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = Cow::Borrowed("deletecollection");
    }
    if !verb_from_path && matches!(&*info.verb, "list" | "watch" | "deletecollection") {
        if let Some(v) = params.field_selector {
            info.field_selector = v.value;
        }
        if let Some(v) = params.label_selector {
            info.label_selector = v.value;
        }
    }
    info
}

/// The segments of a trimmed path (no leading or trailing `/`; a clean path has no empty
/// segment), read from the front. The first [`Segments::HEAD`] are found once, in place;
/// resolving never looks further (prefix, group, version, verb, `namespaces`, namespace,
/// resource, name, subresource), and [`Segments::rest`] gives the path from the current one on.
/// Small (a segment is kept as where it ends), so that making it copies little.
#[derive(Clone, Copy)]
struct Segments<'a> {
    /// Where each of the first segments ends (the `/` after it, or the path's end); each starts
    /// one past the end of the one before it, the first at 0.
    ends: [u32; Segments::HEAD],
    /// How many segments the head holds (at most `HEAD`).
    len: usize,
    /// How many have been dropped from the front.
    at: usize,
    /// The whole trimmed path.
    path: &'a str,
}

impl<'a> Segments<'a> {
    const HEAD: usize = 10;

    #[inline]
    fn new(path: &'a str) -> Self {
        let mut segments = Segments {
            ends: [0; Segments::HEAD],
            len: 0,
            at: 0,
            path,
        };
        // A request path is at most `MAX_REQUEST_TARGET_BYTES` long, so every bound fits.
        let Ok(path_len) = u32::try_from(path.len()) else {
            return segments;
        };
        if path.is_empty() {
            return segments;
        }
        // Bytes, not chars: `/` is ASCII, so every split falls on a char boundary.
        let full = !for_each_slash(path.as_bytes(), |i| {
            u32::try_from(i).is_ok_and(|end| segments.push(end))
        });
        if !full {
            segments.push(path_len);
        }
        segments
    }

    /// Keeps the next segment, which ends at `end`; false when the head is full.
    #[inline]
    fn push(&mut self, end: u32) -> bool {
        let Some(e) = self.ends.get_mut(self.len) else {
            return false;
        };
        *e = end;
        self.len = self.len.saturating_add(1);
        true
    }

    /// Where the segment at `i` (from the front of the path) starts.
    #[inline]
    fn start(&self, i: usize) -> Option<usize> {
        match i.checked_sub(1) {
            None => Some(0),
            Some(before) => self
                .ends
                .get(before)
                .map(|end| (*end as usize).saturating_add(1)),
        }
    }

    /// The first segment, if any.
    #[inline]
    fn first(&self) -> Option<&'a str> {
        self.nth(0)
    }

    /// The segment at `n` from the current one, if any (within the head).
    #[inline]
    fn nth(&self, n: usize) -> Option<&'a str> {
        let i = self.at.checked_add(n)?;
        if i >= self.len {
            return None;
        }
        let end = *self.ends.get(i)? as usize;
        self.path.get(self.start(i)?..end)
    }

    /// How many segments there are from the current one, counting no further than `limit`
    /// (at most what the head holds).
    #[inline]
    fn count_up_to(&self, limit: usize) -> usize {
        self.len.saturating_sub(self.at).min(limit)
    }

    /// Drops the first `n` segments (all of them if there are fewer).
    #[inline]
    fn skip(&mut self, n: usize) {
        self.at = self.at.saturating_add(n).min(self.len);
    }

    /// The path from the current segment on, empty when none is left.
    #[inline]
    fn rest(&self) -> &'a str {
        if self.at >= self.len {
            return "";
        }
        self.start(self.at)
            .and_then(|start| self.path.get(start..))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Segments;
    use crate::request_path::for_each_slash;

    /// The slashes found eight bytes at a time are exactly those of a byte loop, for bytes of
    /// every value around `/` and in every position of a word.
    #[test]
    fn for_each_slash_finds_every_slash_and_nothing_else() {
        let alphabet = [
            b'/', b'.', b'0', b'\x00', b'\x2e', b'\x30', b'\xaf', b'\xff', b'a',
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..40 {
            for _ in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        alphabet[(state % alphabet.len() as u64) as usize]
                    })
                    .collect();
                let expected: Vec<usize> = (0..len).filter(|i| bytes[*i] == b'/').collect();
                let mut found = Vec::new();
                assert!(for_each_slash(&bytes, |i| {
                    found.push(i);
                    true
                }));
                assert_eq!(found, expected, "{bytes:?}");
                // Stopping at the first stops there.
                let mut first = None;
                let all = for_each_slash(&bytes, |i| {
                    first = Some(i);
                    false
                });
                assert_eq!(all, expected.is_empty());
                assert_eq!(first, expected.first().copied());
            }
        }
    }

    /// `Segments` reads as `str::split` does, for every path of up to eleven characters over
    /// `/` and `a` (past the head of ten segments): each segment in the head, and the path
    /// from each of them on.
    #[test]
    fn segments_agree_with_split() {
        let mut paths = vec![String::new()];
        let mut frontier = paths.clone();
        for _ in 0..11 {
            let mut next = Vec::new();
            for p in &frontier {
                for c in ['/', 'a'] {
                    next.push(format!("{p}{c}"));
                }
            }
            paths.extend(next.iter().cloned());
            frontier = next;
        }
        for p in &paths {
            let split: Vec<&str> = if p.is_empty() {
                Vec::new()
            } else {
                p.split('/').collect()
            };
            let mut segments = Segments::new(p);
            assert_eq!(segments.len, split.len().min(Segments::HEAD), "{p:?}");
            for (at, expected) in split.iter().enumerate().take(Segments::HEAD) {
                assert_eq!(segments.first(), Some(*expected), "{p:?} at {at}");
                assert_eq!(segments.rest(), split[at..].join("/"), "{p:?} at {at}");
                segments.skip(1);
            }
            assert_eq!(segments.first(), None, "{p:?}");
        }
    }
}
