//! kube-rbac-proxy's configuration against its own tables, then the hostile rows.
//!
//! Sources of the rows (brancz/kube-rbac-proxy): `pkg/authorization/static/static_test.go`
//! (`TestStaticAuthorizer`), `pkg/authorization/rewrite/attributes_test.go`
//! (`TestBoundAttributesGenerator`, `TestRewritingAttributesGenerator`) and
//! `pkg/authorization/path/path_test.go` (`TestAllowPath`). The values are theirs; the format
//! is ours.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::sync::Arc;

use delegated_auth::{
    Attributes, Error, PathRule, RbacProxyConfig, RequestPath, ResourceAttributes, Target, UserInfo,
};

fn path(p: &str) -> RequestPath<'_> {
    RequestPath::parse(p).unwrap()
}

fn yaml(text: &str) -> RbacProxyConfig {
    RbacProxyConfig::from_yaml(text.as_bytes()).unwrap()
}

fn user() -> Arc<UserInfo> {
    Arc::new(UserInfo::new("bound test user"))
}

fn resource(a: &Attributes) -> &ResourceAttributes {
    match &a.target {
        Target::Resource(r) => r,
        _ => panic!("not a resource request: {a:?}"),
    }
}

#[test]
fn without_resource_attributes_requests_are_non_resource_with_the_lowercase_method() {
    let c = RbacProxyConfig::new();
    for (method, verb) in [
        ("GET", "get"),
        ("POST", "post"),
        ("PUT", "put"),
        ("DELETE", "delete"),
    ] {
        let a = c.attributes(&user(), method, &path("/metrics"), None, &[]);
        assert_eq!(a, [Attributes::non_resource(user(), verb, "/metrics")]);
    }
}

/// `TestBoundAttributesGenerator`: whatever the request, the bound resource with its verb.
#[test]
fn bound_resource_attributes() {
    let c = yaml(
        "authorization:
  resourceAttributes:
    namespace: kube-system
    apiGroup: core
    apiVersion: v1
    resource: pods
    name: kube-apiserver
",
    );
    for (method, p) in [
        ("GET", "/api/v1/namespaces/default/pods"),
        ("PUT", "/api/v1/namespaces/default/pods/pod1/status"),
    ] {
        let a = c.attributes(&user(), method, &path(p), None, &[]);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].verb, method.to_lowercase());
        let r = resource(&a[0]);
        assert_eq!(
            (
                r.namespace.as_str(),
                r.api_group.as_str(),
                r.api_version.as_str(),
                r.resource.as_str(),
                r.subresource.as_str(),
                r.name.as_str()
            ),
            ("kube-system", "core", "v1", "pods", "", "kube-apiserver")
        );
    }
    // Without rewrites, `{{ .Value }}` is literal text, as kube-rbac-proxy leaves it.
    let c =
        yaml("authorization: {resourceAttributes: {namespace: '{{ .Value }}', resource: pods}}");
    let a = c.attributes(&user(), "GET", &path("/"), Some("namespace=x"), &[]);
    assert_eq!(resource(&a[0]).namespace, "{{ .Value }}");
}

/// `TestRewritingAttributesGenerator`: one attribute set per value; none without a value.
#[test]
fn rewriting_resource_attributes() {
    let c = yaml(
        "authorization:
  rewrites:
    byQueryParameter:
      name: namespace
    byHttpHeader:
      name: x-namespace
  resourceAttributes:
    namespace: '{{ .Value }}'
    apiGroup: core
    apiVersion: v1
    resource: namespace
",
    );
    assert_eq!(c.rewrite_header(), Some("x-namespace"));
    let one = c.attributes(
        &user(),
        "POST",
        &path("/api/v1/namespaces/admin/pods/hack-pod"),
        Some("namespace=kube-system"),
        &[],
    );
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].verb, "post");
    assert_eq!(resource(&one[0]).namespace, "kube-system");
    assert_eq!(resource(&one[0]).resource, "namespace");
    assert!(
        c.attributes(
            &user(),
            "POST",
            &path("/api/v1/namespaces/admin/pods"),
            None,
            &[]
        )
        .is_empty(),
        "no value: refused as malformed"
    );
    let many = c.attributes(
        &user(),
        "GET",
        &path("/api/v1/namespaces/templated/pods/some-pod/metrics"),
        Some("namespace=kube-system&other=1"),
        &["default"],
    );
    let namespaces: Vec<&str> = many
        .iter()
        .map(|a| resource(a).namespace.as_str())
        .collect();
    assert_eq!(
        namespaces,
        ["kube-system", "default"],
        "query values first, then headers"
    );
    // Templates around the value, and a value with template syntax is data.
    let c = yaml(
        "authorization:
  rewrites: {byQueryParameter: {name: app}}
  resourceAttributes: {resource: services, name: 'svc-{{.Value}}-x', namespace: '{{ .Value }}'}
",
    );
    let a = c.attributes(
        &user(),
        "GET",
        &path("/"),
        Some("app={{.Value}}&app=b%20c"),
        &[],
    );
    assert_eq!(resource(&a[0]).name, "svc-{{.Value}}-x");
    assert_eq!(resource(&a[1]).name, "svc-b c-x");
    assert_eq!(resource(&a[1]).namespace, "b c");
}

/// `TestStaticAuthorizer`: config | should pass | should have no opinion.
#[test]
fn static_authorizations() {
    let res = |name: &str, verb: &str, resource: &str| {
        Attributes::resource(
            UserInfo::new(name),
            verb,
            ResourceAttributes::new("", "", resource),
        )
    };
    let url = |verb: &str, p: &str| Attributes::non_resource(UserInfo::new("system:foo"), verb, p);
    let config = |entries: &str| {
        RbacProxyConfig::from_yaml(format!("authorization:\n  static:\n{entries}").as_bytes())
    };
    let cases: Vec<(&str, Vec<Attributes>, Vec<Attributes>)> = vec![
        (
            "  - path: /metrics\n    resourceRequest: false\n",
            vec![url("get", "/metrics"), url("update", "/metrics")],
            vec![url("get", "/api")],
        ),
        (
            "  - {path: /metrics, verb: get}\n",
            vec![url("get", "/metrics")],
            vec![
                url("get", "/api"),
                url("update", "/metrics"),
                res("system:foo", "get", "metrics"),
            ],
        ),
        (
            "  - {resource: namespaces, verb: get, resourceRequest: true}\n",
            vec![
                res("system:foo", "get", "namespaces"),
                res("", "get", "namespaces"),
            ],
            vec![res("", "get", "services"), url("get", "/namespaces")],
        ),
        (
            "  - {user: {name: 'system:foo'}, resource: namespaces, verb: get, resourceRequest: true}\n",
            vec![res("system:foo", "get", "namespaces")],
            vec![
                res("system:bar", "get", "namespaces"),
                res("", "get", "namespaces"),
                res("", "get", "services"),
            ],
        ),
        (
            "  - {user: {groups: [a, b]}, path: /x}\n",
            vec![Attributes::non_resource(
                UserInfo::new("u").with_groups(["c", "b"]),
                "get",
                "/x",
            )],
            vec![Attributes::non_resource(
                UserInfo::new("u").with_groups(["c"]),
                "get",
                "/x",
            )],
        ),
    ];
    for (entries, pass, no_opinion) in cases {
        let c = config(entries).unwrap();
        for a in &pass {
            assert!(c.static_allows(a), "{entries}: restricted {a:?}");
        }
        for a in &no_opinion {
            assert!(!c.static_allows(a), "{entries}: passed {a:?}");
        }
    }
    for bad in [
        "  - {path: /metrics, verb: get, resourceRequest: true}\n",
        "  - {resource: namespaces, verb: get, resourceRequest: false}\n",
    ] {
        assert!(
            matches!(config(bad), Err(Error::InvalidProxyConfig { .. })),
            "{bad}"
        );
    }
}

/// `TestAllowPath` and the ignore paths: path.Match patterns without the leading `/`.
#[test]
fn allow_and_ignore_paths() {
    let valid = path("/allowed/path/withsuffix");
    let allow = |p: &[&str]| RbacProxyConfig::new().with_allow_paths(p.iter().copied());
    assert_eq!(
        allow(&["/allowed/path/withsuffix"])
            .unwrap()
            .path_rule(&valid),
        PathRule::Authorize
    );
    assert_eq!(
        allow(&["/allowed/*/withsuffix"]).unwrap().path_rule(&valid),
        PathRule::Authorize
    );
    assert_eq!(
        allow(&["/denied"]).unwrap().path_rule(&valid),
        PathRule::Deny
    );
    assert_eq!(allow(&[]).unwrap().path_rule(&valid), PathRule::Authorize);
    assert!(matches!(
        allow(&["[]a]/*"]),
        Err(Error::InvalidProxyConfig { .. })
    ));

    let ignore = RbacProxyConfig::new()
        .with_ignore_paths(["/healthz", "/metrics/*"])
        .unwrap();
    assert_eq!(ignore.path_rule(&path("/healthz")), PathRule::Ignore);
    assert_eq!(ignore.path_rule(&path("/metrics/x")), PathRule::Ignore);
    assert_eq!(
        ignore.path_rule(&path("/metrics/x/y")),
        PathRule::Authorize,
        "* stops at /"
    );
    assert_eq!(ignore.path_rule(&path("/healthz/")), PathRule::Authorize);
    assert_eq!(ignore.path_rule(&path("/HEALTHZ")), PathRule::Authorize);
    assert!(matches!(
        ignore.with_allow_paths(["/x"]),
        Err(Error::InvalidProxyConfig { .. })
    ));
}

#[test]
fn hostile_configuration_files() {
    for (bad, what) in [
        (
            "authorization: {rewrites: {byQueryParameter: {name: a}}, resourceAttributes: {namespace: '{{ .Value | printf \"%s\" }}'}}",
            "pipeline",
        ),
        (
            "authorization: {rewrites: {byQueryParameter: {name: a}}, resourceAttributes: {namespace: '{{ .Value '}}",
            "unclosed",
        ),
        (
            "authorization: {rewrites: {byQueryParameter: {name: a}}, resourceAttributes: {namespace: '{{ .Other }}'}}",
            "other field",
        ),
    ] {
        assert!(
            matches!(
                RbacProxyConfig::from_yaml(bad.as_bytes()),
                Err(Error::InvalidProxyConfig { .. })
            ),
            "{what}"
        );
    }
    for bad in [
        "authorization: [1]",
        "authorization: {static: {path: /x}}",
        "authorization: {resourceAttributes: {namespace: [a]}}",
        "a: 1\na: 2\n",
        "---\nauthorization: {}\n---\nauthorization: {}\n",
        "authorization: {resourceAttributes: &a {namespace: x}, static: *a",
    ] {
        assert!(
            matches!(
                RbacProxyConfig::from_yaml(bad.as_bytes()),
                Err(Error::Yaml { .. })
            ),
            "{bad}"
        );
    }
    let huge = vec![b'#'; delegated_auth::MAX_PROXY_CONFIG_BYTES + 1];
    assert!(matches!(
        RbacProxyConfig::from_yaml(&huge),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        RbacProxyConfig::from_json(&huge),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        RbacProxyConfig::from_json(b"{"),
        Err(Error::Json { .. })
    ));
    // An empty file and unknown keys: the defaults.
    assert_eq!(
        RbacProxyConfig::from_yaml(b"").unwrap(),
        RbacProxyConfig::new()
    );
    assert_eq!(
        RbacProxyConfig::from_yaml(b"other: 1").unwrap(),
        RbacProxyConfig::new()
    );
    assert_eq!(
        RbacProxyConfig::from_json(br#"{"authorization":{"static":null}}"#).unwrap(),
        RbacProxyConfig::new()
    );
}
