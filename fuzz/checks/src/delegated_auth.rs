//! Checks for the `delegated-auth` entry points.

use delegated_auth::{
    ApiPrefixes, Attributes, Error, KubeletAuthz, Policy, RbacObjects, RbacProxyConfig,
    RequestInfo, RequestPath, ResourceAttributes, UserInfo, kubelet_attributes,
};

use crate::input::split_at_first;
use crate::outcome::Outcome;

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
    if info.is_resource_request {
        assert!(matches!(
            info.verb.as_str(),
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
    let _ = info.to_attributes(UserInfo::new("u"));
    let node = kubelet_attributes(
        &UserInfo::new("u"),
        method,
        &path,
        "n",
        KubeletAuthz::FineGrained,
    );
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
    let user = UserInfo::new("u").with_groups(["g"]);
    let attrs = config.attributes(&user, "GET", &path, query, &["h"]);
    for a in &attrs {
        assert_eq!(a.verb, "get");
        let _ = config.static_allows(a);
    }
    let _ = config.path_rule(&path);
    Outcome::Accepted
}
