//! Request info against Kubernetes' own tables.
//!
//! Source of the rows: kubernetes/kubernetes,
//! `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo_test.go`
//! (`TestGetAPIRequestInfo`, `TestGetNonAPIRequestInfo`, `TestSelectorParsing`). The values are
//! theirs; the format is ours. One difference, noted where it applies: upstream's table lists
//! the prefix `api` for `/apis/...` rows but never compares that column; the prefix really is
//! `apis`, and these tables check it. (Older revisions of that file had a `PATCH
//! /api/v1/namespaces/new-namespace` row expecting no namespace, which the code never gave;
//! the current table has no such row, and neither has this one.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::borrow::Cow;

use delegated_auth::{ApiPrefixes, Error, RequestInfo, RequestPath, UserInfo};

/// Resolves `url` (path and query) and hands the request info (which borrows the parsed path)
/// to `check`.
fn resolve<R>(method: &str, url: &str, check: impl FnOnce(RequestInfo<'_>) -> R) -> R {
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (url, None),
    };
    let path = RequestPath::parse(path).unwrap_or_else(|e| panic!("{url}: {e}"));
    check(RequestInfo::resolve(method, &path, query, &ApiPrefixes::Kubernetes).unwrap())
}

/// method | url | verb | prefix | group | version | namespace | resource | subresource | name |
/// parts (space-separated)
const API_REQUESTS: &[[&str; 11]] = &[
    // resource paths
    [
        "GET",
        "/api/v1/namespaces",
        "list",
        "api",
        "",
        "v1",
        "",
        "namespaces",
        "",
        "",
        "namespaces",
    ],
    [
        "GET",
        "/api/v1/namespaces/other",
        "get",
        "api",
        "",
        "v1",
        "other",
        "namespaces",
        "",
        "other",
        "namespaces other",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods",
        "list",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "HEAD",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "GET",
        "/api/v1/pods",
        "list",
        "api",
        "",
        "v1",
        "",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "HEAD",
        "/api/v1/pods",
        "list",
        "api",
        "",
        "v1",
        "",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods/foo",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods",
        "list",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // special verbs
    [
        "GET",
        "/api/v1/proxy/namespaces/other/pods/foo",
        "proxy",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "GET",
        "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
        "proxy",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo subpath not a subresource",
    ],
    [
        "GET",
        "/api/v1/watch/pods",
        "watch",
        "api",
        "",
        "v1",
        "",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/pods?watch=true",
        "watch",
        "api",
        "",
        "v1",
        "",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/pods?watch=false",
        "list",
        "api",
        "",
        "v1",
        "",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/watch/namespaces/other/pods",
        "watch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods?watch=1",
        "watch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods?watch=0",
        "list",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // subresource identification
    [
        "GET",
        "/api/v1/namespaces/other/pods/foo/status",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "status",
        "foo",
        "pods foo status",
    ],
    [
        "GET",
        "/api/v1/namespaces/other/pods/foo/proxy/subpath",
        "get",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "proxy",
        "foo",
        "pods foo proxy subpath",
    ],
    [
        "PUT",
        "/api/v1/namespaces/other/finalize",
        "update",
        "api",
        "",
        "v1",
        "other",
        "namespaces",
        "finalize",
        "other",
        "namespaces other finalize",
    ],
    [
        "PUT",
        "/api/v1/namespaces/other/status",
        "update",
        "api",
        "",
        "v1",
        "other",
        "namespaces",
        "status",
        "other",
        "namespaces other status",
    ],
    // verb identification
    [
        "PATCH",
        "/api/v1/namespaces/other/pods/foo",
        "patch",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "DELETE",
        "/api/v1/namespaces/other/pods/foo",
        "delete",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "foo",
        "pods foo",
    ],
    [
        "POST",
        "/api/v1/namespaces/other/pods",
        "create",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // deletecollection verb identification
    [
        "DELETE",
        "/api/v1/nodes",
        "deletecollection",
        "api",
        "",
        "v1",
        "",
        "nodes",
        "",
        "",
        "nodes",
    ],
    [
        "DELETE",
        "/api/v1/namespaces",
        "deletecollection",
        "api",
        "",
        "v1",
        "",
        "namespaces",
        "",
        "",
        "namespaces",
    ],
    [
        "DELETE",
        "/api/v1/namespaces/other/pods",
        "deletecollection",
        "api",
        "",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // upstream lists the prefix `api` here (unchecked there)
    [
        "DELETE",
        "/apis/extensions/v1/namespaces/other/pods",
        "deletecollection",
        "apis",
        "extensions",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // api group identification
    [
        "POST",
        "/apis/extensions/v1/namespaces/other/pods",
        "create",
        "apis",
        "extensions",
        "v1",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
    // api version identification
    [
        "POST",
        "/apis/extensions/v1beta3/namespaces/other/pods",
        "create",
        "apis",
        "extensions",
        "v1beta3",
        "other",
        "pods",
        "",
        "",
        "pods",
    ],
];

#[test]
fn api_request_info_table() {
    for row in API_REQUESTS {
        let [
            method,
            url,
            verb,
            prefix,
            group,
            version,
            ns,
            resource,
            sub,
            name,
            parts,
        ] = *row;
        let ctx = format!("{method} {url}");
        resolve(method, url, |info| {
            assert!(info.is_resource_request, "{ctx}");
            assert_eq!(info.verb, verb, "{ctx}");
            assert_eq!(info.api_prefix, prefix, "{ctx}");
            assert_eq!(info.api_group, group, "{ctx}");
            assert_eq!(info.api_version, version, "{ctx}");
            assert_eq!(info.namespace, ns, "{ctx}");
            assert_eq!(info.resource, resource, "{ctx}");
            assert_eq!(info.subresource, sub, "{ctx}");
            assert_eq!(info.name, name, "{ctx}");
            let parts: Vec<&str> = parts.split(' ').collect();
            assert_eq!(info.parts().collect::<Vec<_>>(), parts, "{ctx}");
        });
    }
}

/// Upstream's error cases of `TestGetAPIRequestInfo`: none is an error, all are non-resource.
#[test]
fn api_request_info_non_resource_cases() {
    for url in [
        "/",
        "/api/version/",
        "/apis/group/version/",
        "/badprefix/version/resource",
        "/apis/version/resource",
    ] {
        resolve("GET", url, |info| {
            assert!(!info.is_resource_request, "{url}");
            assert_eq!(info.verb, "get", "{url}");
            assert_eq!(info.path, url);
            assert_eq!(info.parts().count(), 0, "{url}");
        });
    }
}

/// `TestGetNonAPIRequestInfo`: url | is a resource request.
const RESOURCE_OR_NOT: &[(&str, bool)] = &[
    ("/api/version/resource", true),
    ("/apis/group/version/resource/name/subresource", true),
    ("/api/version/resource/name/subresource", true),
    ("/apis/batch/v1/job", true),
    ("/apis/batch/v1/job/foo", true),
    ("/apis/batch/v1/job/foo/scale", true),
    ("/not-api/version/resource", false),
    ("/apis/extensions/v1beta1", false),
    ("/apis/extensions/v1beta1/", false),
    ("/api/version", false),
    ("/api", false),
    ("/", false),
];

#[test]
fn non_api_request_info_table() {
    for (url, expected) in RESOURCE_OR_NOT {
        let resource = resolve("GET", url, |info| info.is_resource_request);
        assert_eq!(resource, *expected, "{url}");
    }
    // Upstream's "empty" row: a request line cannot carry an empty path; where one reaches
    // us (an authority-form target) it is redirected to `/`, which is a non-resource request.
    assert!(matches!(
        RequestPath::parse(""),
        Err(Error::PathNotClean { clean }) if clean == "/"
    ));
}

/// `TestSelectorParsing`: name | method | url | expected name | verb | fieldSelector |
/// labelSelector. (Upstream's rows expecting an "invalid selector" error also expect the verb
/// and no name; Kubernetes logs that error and carries on, as do we.)
const SELECTORS: &[[&str; 7]] = &[
    [
        "no selector",
        "GET",
        "/apis/group/version/resource",
        "",
        "list",
        "",
        "",
    ],
    [
        "metadata.name selector",
        "GET",
        "/apis/group/version/resource?fieldSelector=metadata.name=name1",
        "name1",
        "list",
        "metadata.name=name1",
        "",
    ],
    [
        "metadata.name selector with watch",
        "GET",
        "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1",
        "name1",
        "watch",
        "metadata.name=name1",
        "",
    ],
    [
        "random selector",
        "GET",
        "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux",
        "",
        "list",
        "foo=bar",
        "baz=qux",
    ],
    [
        "invalid selector with metadata.name",
        "GET",
        "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo",
        "",
        "list",
        "metadata.name=name1,foo",
        "",
    ],
    [
        "invalid selector with metadata.name with watch",
        "GET",
        "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true",
        "",
        "watch",
        "metadata.name=name1,foo",
        "",
    ],
    [
        "invalid selector with metadata.name with watch false",
        "GET",
        "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false",
        "",
        "list",
        "metadata.name=name1,foo",
        "",
    ],
    [
        "selector on deletecollection is honored",
        "DELETE",
        "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux",
        "",
        "deletecollection",
        "foo=bar",
        "baz=qux",
    ],
    [
        "selector on repeated param matches parsed param",
        "GET",
        "/apis/group/version/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz",
        "foo",
        "list",
        "metadata.name=foo",
        "foo=bar",
    ],
    [
        "selector on other verb is ignored",
        "GET",
        "/apis/group/version/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar",
        "name",
        "get",
        "",
        "",
    ],
    [
        "selector on deprecated root type watch is not parsed",
        "GET",
        "/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
        "",
        "watch",
        "",
        "",
    ],
    [
        "selector on deprecated root item watch is not parsed",
        "GET",
        "/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
        "name",
        "watch",
        "",
        "",
    ],
];

#[test]
fn selector_parsing_table() {
    for row in SELECTORS {
        let [case, method, url, name, verb, field, label] = *row;
        resolve(method, url, |info| {
            assert_eq!(info.name, name, "{case}");
            assert_eq!(info.verb, verb, "{case}");
            assert_eq!(info.field_selector, field, "{case}");
            assert_eq!(info.label_selector, label, "{case}");
        });
    }
}

#[test]
fn attributes_from_request_info() {
    let attrs = resolve(
        "GET",
        "/apis/apps/v1/namespaces/ns/deployments/web/scale",
        |info| info.to_attributes(UserInfo::new("alice")),
    );
    assert_eq!(attrs.verb, "get");
    let delegated_auth::Target::Resource(r) = attrs.target else {
        panic!("resource")
    };
    assert_eq!(
        (
            r.api_group.as_str(),
            r.resource.as_str(),
            r.subresource.as_str(),
            r.name.as_str()
        ),
        ("apps", "deployments", "scale", "web")
    );
    assert_eq!(r.namespace, "ns");

    let attrs = resolve("POST", "/healthz", |info| {
        info.to_attributes(UserInfo::new("alice"))
    });
    assert_eq!(attrs.verb, "post");
    assert_eq!(
        attrs.target,
        delegated_auth::Target::NonResource {
            path: "/healthz".into()
        }
    );
}

/// Segments are read from the decoded path; selectors are unescaped from the query (and
/// borrowed from it when there was nothing to unescape).
#[test]
fn decoded_segments_and_selectors() {
    resolve("GET", "/api/v1/namespaces/k%C3%A9/pods/a%2Bb%20c", |info| {
        assert_eq!(info.namespace, "k\u{e9}");
        assert_eq!(info.name, "a+b c");
        assert_eq!(info.parts().collect::<Vec<_>>(), ["pods", "a+b c"]);
        assert_eq!(info.path, "/api/v1/namespaces/k\u{e9}/pods/a+b c");
    });
    resolve(
        "GET",
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&labelSelector=app=web",
        |info| {
            assert_eq!(info.verb, "list");
            assert_eq!(info.field_selector, "spec.nodeName=n1");
            assert!(matches!(info.field_selector, Cow::Owned(_)));
            assert_eq!(info.label_selector, "app=web");
            assert!(matches!(info.label_selector, Cow::Borrowed(_)));
        },
    );
    // A name from a field selector with an escaped comma is unescaped, so owned.
    resolve(
        "GET",
        "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dx%5C%2Cy",
        |info| assert_eq!(info.name, "x,y"),
    );
}

#[test]
fn kube_rbac_proxy_prefixes_make_everything_non_resource() {
    let path = RequestPath::parse("/api/v1/pods").unwrap();
    let info = RequestInfo::resolve("GET", &path, None, &ApiPrefixes::None).unwrap();
    assert!(!info.is_resource_request);
    assert_eq!(info.verb, "get");
}

/// hostile-inputs §5.9, first row: path tricks never authorize a path other than the one served.
#[test]
fn hostile_non_resource_paths() {
    let redirects = [
        ("/metrics/../secret", "/secret"),
        ("/metrics/%2e%2e/secret", "/secret"),
        ("/%2e%2e/", "/"),
        ("/metrics/%2E%2E/%2e%2E/secret", "/secret"),
        ("//metrics", "/metrics"),
        ("/metrics/./", "/metrics/"),
    ];
    for (raw, clean) in redirects {
        match RequestPath::parse(raw) {
            Err(Error::PathNotClean { clean: c }) => assert_eq!(c, clean, "{raw}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
    // Case and a trailing slash are kept, and compared exactly.
    assert_eq!(RequestPath::parse("/METRICS").unwrap().as_str(), "/METRICS");
    assert_eq!(
        RequestPath::parse("/metrics/").unwrap().as_str(),
        "/metrics/"
    );
    // Resource paths with dot segments are not resolved either: they redirect first.
    assert!(matches!(
        RequestPath::parse("/api/v1/namespaces/a/pods/../secrets"),
        Err(Error::PathNotClean { clean }) if clean == "/api/v1/namespaces/a/secrets"
    ));
}
