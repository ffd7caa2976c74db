//! Laws: the parsers never panic on arbitrary input; a clean path parses to itself and a
//! redirect target is clean; RBAC never panics and never allows without a rule that allows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::sync::Arc;

use delegated_auth::{
    AccessCache, AccessReviewKind, ApiPrefixes, Attributes, CacheConfig, ClusterRole,
    ClusterRoleBinding, Error, KubeletAuthz, Policy, PolicyRule, RbacObjects, RbacProxyConfig,
    RequestInfo, RequestPath, ResourceAttributes, RoleBinding, RoleRef, Subject, UserInfo,
    kubelet_attributes, read_access_review, uncovered_rules,
};
use proptest::prelude::*;

fn path_chars() -> impl Strategy<Value = String> {
    proptest::string::string_regex("/[a-z./%0-9A-F*?\\[\\]^-]{0,40}").unwrap()
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("*".to_owned()),
        Just("get".to_owned()),
        Just("pods".to_owned()),
        Just("pods/log".to_owned()),
        Just("*/scale".to_owned()),
        Just("/healthz/*".to_owned()),
        Just("ns".to_owned()),
        "[a-z/*]{0,6}",
    ]
}

fn rule() -> impl Strategy<Value = PolicyRule> {
    (
        prop::collection::vec(word(), 0..3),
        prop::collection::vec(word(), 0..3),
        prop::collection::vec(word(), 0..3),
        prop::collection::vec(word(), 0..2),
        prop::collection::vec(word(), 0..3),
    )
        .prop_map(|(v, g, r, n, u)| PolicyRule::new(v).groups(g).resources(r).names(n).urls(u))
}

proptest! {
    #[test]
    fn request_path_never_panics(raw in "\\PC*") {
        let _ = RequestPath::parse(&raw);
    }

    #[test]
    fn clean_paths_are_fixed_points(raw in path_chars()) {
        match RequestPath::parse(&raw) {
            Ok(p) => {
                // Parsing the decoded path again gives it back (when it has no '%', space or
                // control character, which stay valid only percent-encoded).
                if !p.as_str().contains('%') && !p.as_str().bytes().any(|b| b <= b' ' || b == 0x7f) {
                    prop_assert_eq!(&RequestPath::parse(p.as_str()).unwrap(), &p);
                }
            }
            Err(Error::PathNotClean { clean }) => {
                if !clean.contains('%') && !clean.bytes().any(|b| b <= b' ' || b == 0x7f) {
                    let again = RequestPath::parse(&clean).unwrap();
                    prop_assert_eq!(again.as_str(), clean.as_str());
                }
                prop_assert!(!clean.contains("/../") && !clean.contains("/./") && !clean.contains("//"));
            }
            Err(_) => {}
        }
    }

    #[test]
    fn request_info_never_panics(
        method in "[A-Za-z]{0,8}|GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS",
        raw in "/\\PC{0,60}",
        query in "\\PC{0,80}",
    ) {
        if let Ok(path) = RequestPath::parse(&raw) {
            for prefixes in [ApiPrefixes::Kubernetes, ApiPrefixes::None] {
                let info = RequestInfo::resolve(&method, &path, Some(&query), &prefixes).unwrap();
                if !info.is_resource_request {
                    // Go's strings.ToLower of the method (the common ones take a shortcut).
                    prop_assert_eq!(&info.verb, &method.to_lowercase());
                }
                let copied = info.to_attributes(UserInfo::new("u"));
                prop_assert_eq!(info.into_attributes(UserInfo::new("u")), copied);
            }
            let _ = kubelet_attributes(&Arc::new(UserInfo::new("u")), &method, &path, "n", KubeletAuthz::FineGrained);
        }
    }

    /// A request looked up in the access cache straight from its `RequestInfo` finds exactly
    /// what a lookup with its attributes finds: the same entry for the same request, nothing
    /// for another request, another method or another user.
    #[test]
    fn proptest_access_cache_lookup_from_a_request_agrees_with_its_attributes(
        method in "GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|LIST",
        other_method in "GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|LIST",
        raw in "/(api|apis|metrics|healthz)(/[a-z0-9.%=-]{0,12}){0,7}",
        query in "(watch=[01]&)?(fieldSelector=[a-z.=!%0-9D]{0,16}&)?(labelSelector=[a-z=!%0-9D]{0,16})?",
        other_raw in "/(api|apis|metrics)(/[a-z0-9.=-]{0,12}){0,7}",
        name in "[a-z]{1,6}",
    ) {
        let Ok(path) = RequestPath::parse(&raw) else { return Ok(()) };
        let Ok(other_path) = RequestPath::parse(&other_raw) else { return Ok(()) };
        let user = Arc::new(UserInfo::new(name.clone()).with_groups(["system:authenticated"]));
        let twin = Arc::new(UserInfo::new(name.clone()).with_groups(["system:authenticated"]));
        let stranger = Arc::new(UserInfo::new(format!("{name}x")));
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let allowed = read_access_review(AccessReviewKind::Subject, 201, br#"{"status":{"allowed":true}}"#).unwrap();
        for prefixes in [ApiPrefixes::Kubernetes, ApiPrefixes::None] {
            let info = RequestInfo::resolve(&method, &path, Some(&query), &prefixes).unwrap();
            let mut cache = AccessCache::new(CacheConfig::default());
            prop_assert!(cache.insert(&info.to_attributes(Arc::clone(&user)), allowed.clone(), now));
            prop_assert!(cache.get_request(&user, &info, now).is_some());
            // An equal user in another allocation is the same user.
            prop_assert!(cache.get_request(&twin, &info, now).is_some());
            prop_assert!(cache.get_request(&stranger, &info, now).is_none());
            for (m, p) in [(&other_method, &path), (&method, &other_path)] {
                let other = RequestInfo::resolve(m, p, Some(&query), &prefixes).unwrap();
                prop_assert_eq!(
                    cache.get_request(&user, &other, now).is_some(),
                    cache.get(&other.to_attributes(Arc::clone(&user)), now).is_some()
                );
            }
        }
    }

    #[test]
    fn request_info_selectors_never_panic(
        field in "[a-z.=!,\\\\]{0,30}",
        label in "[a-z.=!,()<> /in]{0,30}",
        watch in "\\PC{0,6}",
    ) {
        let path = RequestPath::parse("/api/v1/pods").unwrap();
        let q = format!("fieldSelector={field}&labelSelector={label}&watch={watch}");
        let info = RequestInfo::resolve("GET", &path, Some(&q), &ApiPrefixes::Kubernetes).unwrap();
        prop_assert!(info.verb == "list" || info.verb == "watch");
    }

    #[test]
    fn proxy_config_never_panics(text in "\\PC{0,200}", patterns in prop::collection::vec("[a-z/*?\\[\\]^\\\\-]{0,10}", 0..4)) {
        let _ = RbacProxyConfig::from_yaml(text.as_bytes());
        let _ = RbacProxyConfig::from_json(text.as_bytes());
        if let Ok(c) = RbacProxyConfig::new().with_allow_paths(&patterns) {
            let _ = c.path_rule(&RequestPath::parse("/a/b").unwrap());
        }
    }

    #[test]
    fn rbac_never_panics_and_allows_only_by_a_rule(
        rules in prop::collection::vec(rule(), 0..4),
        verb in word(),
        resource in word(),
        sub in word(),
        name in word(),
        ns in word(),
        url in word(),
    ) {
        let mut o = RbacObjects::new();
        o.cluster_roles.push(ClusterRole::new("r", rules.clone()));
        o.cluster_role_bindings.push(ClusterRoleBinding::new("b", "r", vec![Subject::user("u")]));
        o.role_bindings.push(RoleBinding::new("rb", "ns", RoleRef::cluster_role("r"), vec![Subject::group("g")]));
        let policy = Policy::new(&o);
        let attrs = [
            Attributes::resource(
                UserInfo::new("u"),
                verb.clone(),
                ResourceAttributes::new("", "v1", resource).with_subresource(sub).with_name(name).in_namespace(ns),
            ),
            Attributes::non_resource(UserInfo::new("u"), verb, url),
        ];
        for a in &attrs {
            let allowed = policy.authorize(a).is_allowed();
            prop_assert_eq!(allowed, rules.iter().any(|r| r.allows(a)));
            // Nobody else is allowed cluster-wide.
            let mut other = a.clone();
            other.user = Arc::new(UserInfo::new("v"));
            prop_assert!(!policy.authorize(&other).is_allowed());
        }
        let _ = policy.rules_for(&UserInfo::new("u").with_groups(["g"]), "ns");
        // Rules cover themselves, except (as in Kubernetes' Covers) a rule with both
        // resourceNames and nonResourceURLs: its URL parts need an owner without names.
        let plain: Vec<PolicyRule> = rules
            .iter()
            .filter(|r| r.resource_names.is_empty() || r.non_resource_urls.is_empty())
            .cloned()
            .collect();
        prop_assert!(uncovered_rules(&plain, &plain).unwrap().is_empty());
    }

    #[test]
    fn rbac_objects_never_panic(text in "\\PC{0,300}") {
        let mut o = RbacObjects::new();
        let _ = o.add_json(text.as_bytes());
        let _ = o.add_yaml(text.as_bytes());
        let _ = Policy::new(&o);
    }
}
