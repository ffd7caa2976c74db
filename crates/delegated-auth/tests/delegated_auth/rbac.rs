//! RBAC against Kubernetes' own tables, then the hostile rows.
//!
//! Sources of the rows (kubernetes/kubernetes): `plugin/pkg/auth/authorizer/rbac/rbac_test.go`
//! (`TestAuthorizer`, `TestRuleMatches`), `pkg/registry/rbac/validation/rule_test.go`
//! (`TestDefaultRuleResolver`, `TestAppliesTo`) and
//! `staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator_test.go`
//! (`TestCovers*`, `TestNonResourceURLCovers`). The values are theirs; the format is ours.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::type_complexity,
    reason = "tests"
)]

use delegated_auth::{
    AggregationRule, Attributes, ClusterRole, ClusterRoleBinding, Error, LabelSelector,
    LabelSelectorRequirement, Policy, PolicyRule, RbacObjects, ResourceAttributes, Role,
    RoleBinding, RoleRef, Subject, UserInfo, aggregate_cluster_roles, covers, uncovered_rules,
};

fn split(s: &str) -> Vec<&str> {
    s.split(',').collect()
}

/// Kubernetes' test helper `newRule(verbs, apiGroups, resources, nonResourceURLs)`: each a
/// comma-separated list (an empty string is one empty entry, as Go's `strings.Split`).
fn rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> PolicyRule {
    PolicyRule::new(split(verbs))
        .groups(split(groups))
        .resources(split(resources))
        .urls(split(urls))
}

/// `Kind:name` subjects, as the Go helpers write them.
fn subjects(list: &[&str]) -> Vec<Subject> {
    list.iter()
        .map(|s| match s.split_once(':').unwrap() {
            ("User", n) => Subject::user(n),
            ("Group", n) => Subject::group(n),
            ("ServiceAccount", n) => Subject::service_account("", n),
            (k, _) => panic!("kind {k}"),
        })
        .collect()
}

fn user(name: &str, groups: &str) -> UserInfo {
    UserInfo::new(name).with_groups(split(groups))
}

/// `defaultAttributes{user, groups, verb, resource, subresource, namespace, apiGroup}`.
fn res(
    name: &str,
    groups: &str,
    verb: &str,
    resource: &str,
    sub: &str,
    ns: &str,
    group: &str,
) -> Attributes {
    Attributes::resource(
        user(name, groups),
        verb,
        ResourceAttributes::new(group, "", resource)
            .with_subresource(sub)
            .in_namespace(ns),
    )
}

fn non_res(user: UserInfo, verb: &str, path: &str) -> Attributes {
    Attributes::non_resource(user, verb, path)
}

struct Case {
    objects: RbacObjects,
    pass: Vec<Attributes>,
    fail: Vec<Attributes>,
}

fn check(cases: Vec<Case>) {
    for (i, case) in cases.into_iter().enumerate() {
        let policy = Policy::new(&case.objects);
        for a in &case.pass {
            assert!(
                policy.authorize(a).is_allowed(),
                "case {i}: restricted {a:?}"
            );
        }
        for a in &case.fail {
            assert!(!policy.authorize(a).is_allowed(), "case {i}: passed {a:?}");
        }
    }
}

fn objects(
    cluster_roles: Vec<ClusterRole>,
    role_bindings: Vec<RoleBinding>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
) -> RbacObjects {
    let mut o = RbacObjects::new();
    o.cluster_roles = cluster_roles;
    o.role_bindings = role_bindings;
    o.cluster_role_bindings = cluster_role_bindings;
    o
}

fn rb_to_cluster_role(ns: &str, role: &str, who: &[&str]) -> RoleBinding {
    RoleBinding::new("", ns, RoleRef::cluster_role(role), subjects(who))
}

fn crb(role: &str, who: &[&str]) -> ClusterRoleBinding {
    ClusterRoleBinding::new("", role, subjects(who))
}

#[test]
fn authorizer_table() {
    let admin_ns1 = || {
        vec![rb_to_cluster_role(
            "ns1",
            "admin",
            &["User:admin", "Group:admins"],
        )]
    };
    check(vec![
        Case {
            objects: objects(
                vec![ClusterRole::new("admin", vec![rule("*", "*", "*", "*")])],
                admin_ns1(),
                vec![],
            ),
            pass: vec![
                res("admin", "", "get", "Pods", "", "ns1", ""),
                res("admin", "", "watch", "Pods", "", "ns1", ""),
                res("admin", "group1", "watch", "Foobar", "", "ns1", ""),
                res("joe", "admins", "watch", "Foobar", "", "ns1", ""),
                res("joe", "group1,admins", "watch", "Foobar", "", "ns1", ""),
            ],
            fail: vec![
                res("admin", "", "GET", "Pods", "", "ns2", ""),
                res("admin", "", "GET", "Nodes", "", "", ""),
                res("admin", "admins", "GET", "Pods", "", "ns2", ""),
                res("admin", "admins", "GET", "Nodes", "", "", ""),
            ],
        },
        // Non-resource URLs.
        Case {
            objects: objects(
                vec![
                    ClusterRole::new(
                        "non-resource-url-getter",
                        vec![rule("get", "", "", "/apis")],
                    ),
                    ClusterRole::new("non-resource-url", vec![rule("*", "", "", "/apis")]),
                    ClusterRole::new(
                        "non-resource-url-prefix",
                        vec![rule("get", "", "", "/apis/*")],
                    ),
                ],
                vec![],
                vec![
                    crb("non-resource-url-getter", &["User:foo", "Group:bar"]),
                    crb("non-resource-url", &["User:admin", "Group:admin"]),
                    crb(
                        "non-resource-url-prefix",
                        &["User:prefixed", "Group:prefixed"],
                    ),
                ],
            ),
            pass: vec![
                non_res(UserInfo::new("foo"), "get", "/apis"),
                non_res(UserInfo::new("").with_groups(["bar"]), "get", "/apis"),
                non_res(UserInfo::new("admin"), "get", "/apis"),
                non_res(UserInfo::new("").with_groups(["admin"]), "get", "/apis"),
                non_res(UserInfo::new("admin"), "watch", "/apis"),
                non_res(UserInfo::new("").with_groups(["admin"]), "watch", "/apis"),
                non_res(UserInfo::new("prefixed"), "get", "/apis/v1"),
                non_res(
                    UserInfo::new("").with_groups(["prefixed"]),
                    "get",
                    "/apis/v1",
                ),
                non_res(UserInfo::new("prefixed"), "get", "/apis/v1/foobar"),
                non_res(
                    UserInfo::new("").with_groups(["prefixed"]),
                    "get",
                    "/apis/v1/foorbar",
                ),
            ],
            fail: vec![
                // wrong verb
                non_res(UserInfo::new("foo"), "watch", "/apis"),
                non_res(UserInfo::new("").with_groups(["bar"]), "watch", "/apis"),
                // wrong path
                non_res(UserInfo::new("foo"), "get", "/api/v1"),
                non_res(UserInfo::new("").with_groups(["bar"]), "get", "/api/v1"),
                non_res(UserInfo::new("admin"), "get", "/api/v1"),
                non_res(UserInfo::new("").with_groups(["admin"]), "get", "/api/v1"),
                // not covered by the prefix
                non_res(UserInfo::new("prefixed"), "get", "/api/v1"),
                non_res(
                    UserInfo::new("").with_groups(["prefixed"]),
                    "get",
                    "/api/v1",
                ),
            ],
        },
        // Subresource resolution.
        Case {
            objects: objects(
                vec![ClusterRole::new("admin", vec![rule("*", "*", "pods", "*")])],
                admin_ns1(),
                vec![],
            ),
            pass: vec![res("admin", "", "get", "pods", "", "ns1", "")],
            fail: vec![res("admin", "", "get", "pods", "status", "ns1", "")],
        },
        Case {
            objects: objects(
                vec![ClusterRole::new(
                    "admin",
                    vec![
                        rule("*", "*", "pods/status", "*"),
                        rule("*", "*", "*/scale", "*"),
                    ],
                )],
                admin_ns1(),
                vec![],
            ),
            pass: vec![
                res("admin", "", "get", "pods", "status", "ns1", ""),
                res("admin", "", "get", "pods", "scale", "ns1", ""),
                res("admin", "", "get", "deployments", "scale", "ns1", ""),
                res("admin", "", "get", "anything", "scale", "ns1", ""),
            ],
            fail: vec![res("admin", "", "get", "pods", "", "ns1", "")],
        },
    ]);
}

enum Req<'a> {
    /// verb, group, resource, subresource
    Res(&'a str, &'a str, &'a str, &'a str),
    /// verb, url
    Url(&'a str, &'a str),
}

fn rule_matches(rule: &PolicyRule, rows: &[(Req<'_>, bool)], name: &str) {
    for (req, expected) in rows {
        let attrs = match *req {
            Req::Res(verb, group, resource, sub) => Attributes::resource(
                UserInfo::default(),
                verb,
                ResourceAttributes::new(group, "", resource).with_subresource(sub),
            ),
            Req::Url(verb, url) => Attributes::non_resource(UserInfo::default(), verb, url),
        };
        assert_eq!(rule.allows(&attrs), *expected, "{name}: {attrs:?}");
    }
}

#[test]
fn rule_matches_table() {
    use Req::{Res, Url};
    let eight = |verbs_ok: [bool; 8]| {
        let reqs = [
            ("verb1", "group1", "resource1"),
            ("verb1", "group2", "resource1"),
            ("verb1", "group1", "resource2"),
            ("verb1", "group2", "resource2"),
            ("verb2", "group1", "resource1"),
            ("verb2", "group2", "resource1"),
            ("verb2", "group1", "resource2"),
            ("verb2", "group2", "resource2"),
        ];
        reqs.into_iter()
            .zip(verbs_ok)
            .map(|((v, g, r), ok)| (Res(v, g, r, ""), ok))
            .collect::<Vec<_>>()
    };
    rule_matches(
        &PolicyRule::new(["*"])
            .groups(["group1"])
            .resources(["resource1"]),
        &eight([true, false, false, false, true, false, false, false]),
        "star verb, exact match other",
    );
    rule_matches(
        &PolicyRule::new(["verb1"])
            .groups(["*"])
            .resources(["resource1"]),
        &eight([true, true, false, false, false, false, false, false]),
        "star group, exact match other",
    );
    rule_matches(
        &PolicyRule::new(["verb1"])
            .groups(["group1"])
            .resources(["*"]),
        &eight([true, false, true, false, false, false, false, false]),
        "star resource, exact match other",
    );
    rule_matches(
        &PolicyRule::new(["verb1", "verb2"])
            .groups(["group1", "group2"])
            .resources(["resource1", "resource2"]),
        &eight([true; 8]),
        "tuple expansion",
    );
    rule_matches(
        &PolicyRule::new(["*"])
            .groups(["*"])
            .resources(["resource1/subresource1"]),
        &[
            (Res("verb1", "group1", "resource1", "subresource1"), true),
            (Res("verb1", "group2", "resource1", "subresource2"), false),
            (Res("verb1", "group1", "resource2", "subresource1"), false),
            (Res("verb1", "group2", "resource2", "subresource1"), false),
            (Res("verb2", "group1", "resource1", "subresource1"), true),
            (Res("verb2", "group2", "resource1", "subresource2"), false),
            (Res("verb2", "group1", "resource2", "subresource1"), false),
            (Res("verb2", "group2", "resource2", "subresource1"), false),
        ],
        "subresource expansion",
    );
    let urls = [
        "/foo",
        "/foo/bar",
        "/foo/baz",
        "/foo/bar/one",
        "/foo/baz/one",
    ];
    let mut rows: Vec<(Req<'_>, bool)> = urls.iter().map(|u| (Url("verb1", u), true)).collect();
    rows.extend(urls.iter().map(|u| (Url("verb2", u), false)));
    rule_matches(
        &PolicyRule::new(["verb1"]).urls(["*"]),
        &rows,
        "star nonresource, exact match other",
    );
    rule_matches(
        &PolicyRule::new(["verb1"]).urls(["/foo/*"]),
        &[
            (Url("verb1", "/foo"), false),
            (Url("verb1", "/foo/bar"), true),
            (Url("verb1", "/foo/baz"), true),
            (Url("verb1", "/foo/bar/one"), true),
            (Url("verb1", "/foo/baz/one"), true),
            (Url("verb1", "/notfoo"), false),
            (Url("verb1", "/notfoo/bar"), false),
            (Url("verb1", "/notfoo/baz"), false),
            (Url("verb1", "/notfoo/bar/one"), false),
            (Url("verb1", "/notfoo/baz/one"), false),
        ],
        "star nonresource subpath",
    );
    let exact = [true, false, false, true, false];
    let mut rows: Vec<(Req<'_>, bool)> = Vec::new();
    for verb in ["verb1", "verb2"] {
        rows.extend(urls.iter().zip(exact).map(|(u, ok)| (Url(verb, u), ok)));
    }
    rule_matches(
        &PolicyRule::new(["*"]).urls(["/foo", "/foo/bar/one"]),
        &rows,
        "star verb, exact nonresource",
    );
}

/// `TestAppliesTo`: subjects | user | groups | namespace | applies.
#[test]
fn applies_to_table() {
    let sa = |ns: &str, name: &str| Subject::service_account(ns, name);
    let rows: Vec<(Vec<Subject>, &str, &[&str], &str, bool)> = vec![
        (vec![Subject::user("foobar")], "foobar", &[], "", true),
        (
            vec![Subject::user("barfoo"), Subject::user("foobar")],
            "foobar",
            &[],
            "",
            true,
        ),
        (
            vec![Subject::user("barfoo"), Subject::user("foobar")],
            "zimzam",
            &[],
            "",
            false,
        ),
        (
            vec![Subject::user("barfoo"), Subject::group("foobar")],
            "zimzam",
            &["foobar"],
            "",
            true,
        ),
        (
            vec![Subject::user("barfoo"), Subject::group("foobar")],
            "zimzam",
            &["foobar"],
            "namespace1",
            true,
        ),
        (
            vec![
                Subject::user("barfoo"),
                Subject::group("foobar"),
                sa("kube-system", "default"),
            ],
            "system:serviceaccount:kube-system:default",
            &[],
            "default",
            true,
        ),
        (vec![Subject::user("*")], "foobar", &[], "default", false),
        (
            vec![
                Subject::group("system:authenticated"),
                Subject::group("system:unauthenticated"),
            ],
            "foobar",
            &["system:authenticated"],
            "default",
            true,
        ),
        (
            vec![
                Subject::group("system:authenticated"),
                Subject::group("system:unauthenticated"),
            ],
            "system:anonymous",
            &["system:unauthenticated"],
            "default",
            true,
        ),
    ];
    for (subjects, name, groups, ns, applies) in rows {
        let mut o = RbacObjects::new();
        o.cluster_roles
            .push(ClusterRole::new("all", vec![rule("*", "*", "*", "*")]));
        if ns.is_empty() {
            o.cluster_role_bindings
                .push(ClusterRoleBinding::new("b", "all", subjects.clone()));
        } else {
            o.role_bindings.push(RoleBinding::new(
                "b",
                ns,
                RoleRef::cluster_role("all"),
                subjects.clone(),
            ));
        }
        let user = UserInfo::new(name).with_groups(groups.iter().copied());
        let attrs = Attributes::resource(
            user,
            "get",
            ResourceAttributes::new("", "v1", "pods").in_namespace(ns),
        );
        assert_eq!(
            Policy::new(&o).authorize(&attrs).is_allowed(),
            applies,
            "{subjects:?} {name}"
        );
    }
}

/// `TestDefaultRuleResolver`: the rules that apply to a user in a namespace.
#[test]
fn rules_for_table() {
    let read_pods = PolicyRule::new(["GET", "WATCH"])
        .groups(["v1"])
        .resources(["pods"]);
    let read_services = PolicyRule::new(["GET", "WATCH"])
        .groups(["v1"])
        .resources(["services"]);
    let write_nodes = PolicyRule::new(["PUT", "CREATE", "UPDATE"])
        .groups(["v1"])
        .resources(["nodes"]);
    let admin = PolicyRule::new(["*"]).groups(["*"]).resources(["*"]);
    let mut o = RbacObjects::new();
    o.roles.push(Role::new(
        "readthings",
        "namespace1",
        vec![read_pods.clone(), read_services.clone()],
    ));
    o.cluster_roles
        .push(ClusterRole::new("cluster-admin", vec![admin.clone()]));
    o.cluster_roles
        .push(ClusterRole::new("write-nodes", vec![write_nodes]));
    o.role_bindings.push(RoleBinding::new(
        "",
        "namespace1",
        RoleRef::role("readthings"),
        vec![Subject::user("foobar"), Subject::group("group1")],
    ));
    o.cluster_role_bindings.push(ClusterRoleBinding::new(
        "",
        "cluster-admin",
        vec![Subject::user("admin"), Subject::group("admin")],
    ));
    let p = Policy::new(&o);
    let r = |u: UserInfo, ns: &str| p.rules_for(&u, ns);
    assert_eq!(
        r(UserInfo::new("foobar"), "namespace1").rules,
        [read_pods, read_services]
    );
    assert!(r(UserInfo::new("foobar"), "namespace2").rules.is_empty());
    assert_eq!(
        r(UserInfo::new("foobar").with_groups(["admin"]), "").rules,
        [admin]
    );
    let none = r(UserInfo::default(), "");
    assert!(none.rules.is_empty());
    assert_eq!(none.evaluation_error, None);
}

/// `policy_comparator_test.go`: owner rules | requested rules | uncovered.
#[test]
fn covers_table() {
    let r = |groups: &[&str], verbs: &[&str], resources: &[&str]| {
        PolicyRule::new(verbs.iter().copied())
            .groups(groups.iter().copied())
            .resources(resources.iter().copied())
    };
    let url = |urls: &[&str], verbs: &[&str]| {
        PolicyRule::new(verbs.iter().copied()).urls(urls.iter().copied())
    };
    let rows: Vec<(&str, Vec<PolicyRule>, Vec<PolicyRule>, Vec<PolicyRule>)> = vec![
        (
            "exact match",
            vec![r(&["v1"], &["get"], &["builds"])],
            vec![r(&["v1"], &["get"], &["builds"])],
            vec![],
        ),
        (
            "subresource wildcard",
            vec![r(&["v1"], &["get"], &["*/scale"])],
            vec![r(&["v1"], &["get"], &["foo/scale"])],
            vec![],
        ),
        (
            "multiple rules covering a single rule",
            vec![
                r(&["v1"], &["delete"], &["deployments"]),
                r(&["v1"], &["delete"], &["builds"]),
                r(&["v1"], &["update"], &["builds", "deployments"]),
            ],
            vec![r(
                &["v1"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            vec![],
        ),
        (
            "multiple API groups covering a single rule",
            vec![
                r(&["group1"], &["delete"], &["deployments"]),
                r(&["group1"], &["delete"], &["builds"]),
                r(&["group1"], &["update"], &["builds", "deployments"]),
                r(&["group2"], &["delete"], &["deployments"]),
                r(&["group2"], &["delete"], &["builds"]),
                r(&["group2"], &["update"], &["builds", "deployments"]),
            ],
            vec![r(
                &["group1", "group2"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            vec![],
        ),
        (
            "single API group rule covering multiple",
            vec![r(
                &["group1", "group2"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            vec![
                r(&["group1"], &["delete"], &["deployments"]),
                r(&["group1"], &["delete"], &["builds"]),
                r(&["group1"], &["update"], &["builds", "deployments"]),
                r(&["group2"], &["delete"], &["deployments"]),
                r(&["group2"], &["delete"], &["builds"]),
                r(&["group2"], &["update"], &["builds", "deployments"]),
            ],
            vec![],
        ),
        (
            "missing a single verb/resource combination",
            vec![
                r(&["v1"], &["delete", "update"], &["builds", "deployments"]),
                r(&["v1"], &["delete"], &["pods"]),
            ],
            vec![r(
                &["v1"],
                &["delete", "update"],
                &["builds", "deployments", "pods"],
            )],
            vec![r(&["v1"], &["update"], &["pods"])],
        ),
        (
            "API group star covering multiple",
            vec![r(&["*"], &["get"], &["roles"])],
            vec![r(&["group1", "group2"], &["get"], &["roles"])],
            vec![],
        ),
        (
            "enumeration not covering API group star",
            vec![r(&["dummy-group"], &["get"], &["roles"])],
            vec![r(&["*"], &["get"], &["roles"])],
            vec![r(&["*"], &["get"], &["roles"])],
        ),
        (
            "API group star covering star",
            vec![r(&["*"], &["get"], &["roles"])],
            vec![r(&["*"], &["get"], &["roles"])],
            vec![],
        ),
        (
            "verb star covering multiple",
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![r(&["v1"], &["watch", "list"], &["roles"])],
            vec![],
        ),
        (
            "enumeration not covering verb star",
            vec![r(
                &["v1"],
                &["get", "list", "watch", "create", "update", "delete", "exec"],
                &["roles"],
            )],
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![r(&["v1"], &["*"], &["roles"])],
        ),
        (
            "verb star covering star",
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![],
        ),
        (
            "resource star covering multiple",
            vec![r(&["v1"], &["get"], &["*"])],
            vec![r(&["v1"], &["get"], &["resourcegroup:deployments"])],
            vec![],
        ),
        (
            "enumeration not covering resource star",
            vec![r(
                &["v1"],
                &["get"],
                &["roles", "resourcegroup:deployments"],
            )],
            vec![r(&["v1"], &["get"], &["*"])],
            vec![r(&["v1"], &["get"], &["*"])],
        ),
        (
            "resource star covering star",
            vec![r(&["v1"], &["get"], &["*"])],
            vec![r(&["v1"], &["get"], &["*"])],
            vec![],
        ),
        (
            "resource name empty covering multiple",
            vec![r(&["v1"], &["get"], &["pods"])],
            vec![r(&["v1"], &["get"], &["pods"]).names(["foo", "bar"])],
            vec![],
        ),
        (
            "enumeration not covering resource name empty",
            vec![r(&["v1"], &["get"], &["pods"]).names(["foo", "bar"])],
            vec![r(&["v1"], &["get"], &["pods"])],
            vec![r(&["v1"], &["get"], &["pods"])],
        ),
        (
            "non-resource URLs",
            vec![url(&["/apis"], &["*"])],
            vec![url(&["/apis"], &["*"])],
            vec![],
        ),
        (
            "non-resource URLs star",
            vec![url(&["*"], &["*"])],
            vec![url(&["/apis", "/apis/v1", "/"], &["*"])],
            vec![],
        ),
        (
            "non-resource URLs star after prefix does not cover",
            vec![url(&["/apis/*"], &["*"])],
            vec![url(&["/apis", "/apis/v1"], &["get"])],
            vec![url(&["/apis"], &["get"])],
        ),
        (
            "non-resource URLs star after prefix",
            vec![url(&["/apis/*"], &["*"])],
            vec![url(&["/apis/v1/foo", "/apis/v1"], &["get"])],
            vec![],
        ),
        (
            "non-resource URLs with other fields",
            vec![r(&["v1"], &["get"], &["builds"]).urls(["/apis"])],
            vec![r(&["v1"], &["get"], &["builds"]).urls(["/apis"])],
            vec![],
        ),
        (
            "non-resource URLs with other fields, failure",
            vec![r(&["v1"], &["get"], &["builds"])],
            vec![r(&["v1"], &["get"], &["builds"]).urls(["/apis"])],
            vec![url(&["/apis"], &["get"])],
        ),
    ];
    for (name, owner, requested, expected) in rows {
        let uncovered = uncovered_rules(&owner, &requested).unwrap();
        assert_eq!(uncovered.len(), expected.len(), "{name}: {uncovered:?}");
        for e in &expected {
            assert!(uncovered.contains(e), "{name}: {e:?} not in {uncovered:?}");
        }
        assert_eq!(
            covers(&owner, &requested).unwrap(),
            expected.is_empty(),
            "{name}"
        );
    }
}

/// `TestNonResourceURLCovers`: owner | requested | covers.
#[test]
fn non_resource_url_covers_table() {
    let rows = [
        ("*", "", true),
        ("*", "/", true),
        ("*", "/api", true),
        ("/*", "", false),
        ("/*", "/", true),
        ("/*", "/foo", true),
        ("/api", "/api", true),
        ("/apis", "/api", false),
        ("/api/v1", "/api", false),
        ("/api/v1", "/api/v1", true),
        ("/api/*", "/api/v1", true),
        ("/api/*", "/api", false),
        ("/api/*/*", "/api/v1", false),
        ("/*/v1/*", "/api/v1", false),
    ];
    for (owner, requested, want) in rows {
        let o = [PolicyRule::new(["get"]).urls([owner])];
        let r = [PolicyRule::new(["get"]).urls([requested])];
        assert_eq!(covers(&o, &r).unwrap(), want, "{owner} covers {requested}");
    }
}

// ---- reasons, as Kubernetes words them ----

#[test]
fn reasons_name_the_binding_role_and_subject() {
    let mut o = RbacObjects::new();
    o.cluster_roles
        .push(ClusterRole::new("view", vec![rule("get", "", "pods", "")]));
    o.roles
        .push(Role::new("r", "ns", vec![rule("list", "", "pods", "")]));
    o.cluster_role_bindings.push(ClusterRoleBinding::new(
        "viewers",
        "view",
        vec![Subject::user("nobody"), Subject::group("devs")],
    ));
    o.role_bindings.push(RoleBinding::new(
        "listers",
        "ns",
        RoleRef::role("r"),
        vec![Subject::service_account("", "bot")],
    ));
    o.role_bindings.push(RoleBinding::new(
        "broken",
        "ns",
        RoleRef::cluster_role("missing"),
        vec![Subject::group("devs")],
    ));
    let p = Policy::new(&o);
    let pods = |verb| {
        ResourceAttributes::new("", "v1", "pods")
            .in_namespace("ns")
            .with_name(verb)
    };
    let dev = UserInfo::new("alice").with_groups(["devs"]);
    let d = p.authorize(&Attributes::resource(dev.clone(), "get", pods("x")));
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "devs""#
    );
    let bot = UserInfo::new("system:serviceaccount:ns:bot");
    let d = p.authorize(&Attributes::resource(bot, "list", pods("")));
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by RoleBinding "listers/ns" of Role "r" to ServiceAccount "bot/ns""#
    );
    // Not allowed; the binding that applies has a role that does not exist.
    let d = p.authorize(&Attributes::resource(dev, "delete", pods("x")));
    assert!(!d.is_allowed());
    assert_eq!(
        d.reason(),
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#
    );
    // Nothing applies: no reason.
    let d = p.authorize(&Attributes::resource(
        UserInfo::new("eve"),
        "get",
        pods("x"),
    ));
    assert_eq!(d.reason(), "");
}

// ---- hostile rows (hostile-inputs §5.9, last row, and the issue's list) ----

fn one_rule_policy(rules: Vec<PolicyRule>, ns_binding: Option<&str>) -> Policy {
    let mut o = RbacObjects::new();
    o.cluster_roles.push(ClusterRole::new("r", rules));
    match ns_binding {
        Some(ns) => o.role_bindings.push(RoleBinding::new(
            "b",
            ns,
            RoleRef::cluster_role("r"),
            vec![Subject::user("u")],
        )),
        None => o.cluster_role_bindings.push(ClusterRoleBinding::new(
            "b",
            "r",
            vec![Subject::user("u")],
        )),
    }
    Policy::new(&o)
}

fn can(p: &Policy, verb: &str, r: ResourceAttributes) -> bool {
    p.authorize(&Attributes::resource(UserInfo::new("u"), verb, r))
        .is_allowed()
}

fn can_url(p: &Policy, verb: &str, path: &str) -> bool {
    p.authorize(&Attributes::non_resource(UserInfo::new("u"), verb, path))
        .is_allowed()
}

#[test]
fn role_binding_to_cluster_role_grants_only_in_its_namespace() {
    let p = one_rule_policy(vec![rule("*", "*", "*", "*")], Some("team-a"));
    let pods = ResourceAttributes::new("", "v1", "pods");
    assert!(can(&p, "get", pods.clone().in_namespace("team-a")));
    assert!(!can(&p, "get", pods.clone().in_namespace("team-b")));
    assert!(!can(&p, "get", pods.clone()), "cluster-wide");
    assert!(!can(&p, "list", ResourceAttributes::new("", "v1", "nodes")));
    // Non-resource requests are never namespaced: a RoleBinding never grants a URL.
    assert!(!can_url(&p, "get", "/metrics"));
}

#[test]
fn resource_names_never_allow_a_request_without_a_name() {
    let p = one_rule_policy(
        vec![
            PolicyRule::new([
                "get",
                "list",
                "watch",
                "delete",
                "deletecollection",
                "create",
            ])
            .groups([""])
            .resources(["secrets"])
            .names(["mine"]),
        ],
        None,
    );
    let secrets = ResourceAttributes::new("", "v1", "secrets").in_namespace("ns");
    assert!(can(&p, "get", secrets.clone().with_name("mine")));
    assert!(!can(&p, "get", secrets.clone().with_name("other")));
    for verb in ["list", "watch", "deletecollection", "create"] {
        assert!(!can(&p, verb, secrets.clone()), "{verb} without a name");
    }
    // A list narrowed to the name by `fieldSelector=metadata.name=mine` carries the name.
    assert!(can(&p, "list", secrets.with_name("mine")));
}

#[test]
fn star_slash_subresource_and_resource_slash_star() {
    let p = one_rule_policy(vec![rule("get", "*", "*/scale", "")], None);
    let scale = |res: &str| ResourceAttributes::new("apps", "v1", res).with_subresource("scale");
    assert!(can(&p, "get", scale("deployments")));
    assert!(can(&p, "get", scale("statefulsets")));
    assert!(!can(
        &p,
        "get",
        ResourceAttributes::new("apps", "v1", "deployments")
    ));
    assert!(!can(
        &p,
        "get",
        scale("deployments").with_subresource("status")
    ));
    // `pods/*` is no wildcard in Kubernetes: it matches only a subresource named `*`.
    let p = one_rule_policy(vec![rule("get", "", "pods/*", "")], None);
    let pods = ResourceAttributes::new("", "v1", "pods");
    assert!(!can(&p, "get", pods.clone().with_subresource("log")));
    assert!(!can(&p, "get", pods.clone()));
    assert!(can(&p, "get", pods.with_subresource("*")));
}

#[test]
fn non_resource_star_suffix_is_a_prefix_not_a_segment() {
    let p = one_rule_policy(vec![rule("get", "", "", "/healthz/*")], None);
    assert!(!can_url(&p, "get", "/healthz"));
    assert!(can_url(&p, "get", "/healthz/"));
    assert!(can_url(&p, "get", "/healthz/etcd"));
    assert!(!can_url(&p, "get", "/healthzz"));
    let p = one_rule_policy(vec![rule("get", "", "", "/healthz*")], None);
    assert!(can_url(&p, "get", "/healthz"));
    assert!(
        can_url(&p, "get", "/healthzz"),
        "a prefix, as Kubernetes matches it"
    );
    // Case and trailing slashes are compared exactly.
    let p = one_rule_policy(vec![rule("get", "", "", "/metrics")], None);
    assert!(can_url(&p, "get", "/metrics"));
    for path in ["/METRICS", "/metrics/", "//metrics", "/metrics/../secret"] {
        assert!(!can_url(&p, "get", path), "{path}");
    }
    assert!(!can_url(&p, "post", "/metrics"));
}

#[test]
fn empty_and_wildcard_rules() {
    // Empty rules, a rule with no verbs, groups or resources: nothing is allowed.
    for rules in [
        vec![],
        vec![PolicyRule::default()],
        vec![PolicyRule::new(["*"])],
        vec![PolicyRule::new(["*"]).groups(["*"])],
        vec![PolicyRule::new(["*"]).resources(["*"])],
        vec![
            PolicyRule::new(Vec::<String>::new())
                .groups(["*"])
                .resources(["*"])
                .urls(["*"]),
        ],
    ] {
        let p = one_rule_policy(rules.clone(), None);
        assert!(
            !can(&p, "get", ResourceAttributes::new("", "v1", "pods")),
            "{rules:?}"
        );
        assert!(!can_url(&p, "get", "/healthz"), "{rules:?}");
    }
    // A resource rule never allows a URL and a URL rule never a resource.
    let p = one_rule_policy(vec![rule("*", "*", "*", "")], None);
    assert!(!can_url(&p, "get", "/healthz"));
    let p = one_rule_policy(vec![PolicyRule::new(["*"]).urls(["*"])], None);
    assert!(!can(&p, "get", ResourceAttributes::new("", "v1", "pods")));
    // The full wildcard allows everything, including unusual verbs.
    let p = one_rule_policy(vec![rule("*", "*", "*", "*")], None);
    assert!(can(
        &p,
        "escalate",
        ResourceAttributes::new("rbac.authorization.k8s.io", "v1", "clusterroles")
    ));
    assert!(can_url(&p, "delete", "/anything"));
}

#[test]
fn subjects_of_unknown_kinds_or_without_namespace_apply_to_no_one() {
    let mut o = RbacObjects::new();
    o.cluster_roles
        .push(ClusterRole::new("all", vec![rule("*", "*", "*", "*")]));
    let mut odd = Subject::user("u");
    odd.kind = "user".into();
    o.cluster_role_bindings.push(ClusterRoleBinding::new(
        "b",
        "all",
        vec![odd, Subject::service_account("", "sa")],
    ));
    let p = Policy::new(&o);
    let pods = ResourceAttributes::new("", "v1", "pods").in_namespace("ns");
    for name in [
        "u",
        "system:serviceaccount:ns:sa",
        "system:serviceaccount::sa",
    ] {
        assert!(
            !p.authorize(&Attributes::resource(
                UserInfo::new(name),
                "get",
                pods.clone()
            ))
            .is_allowed(),
            "{name}"
        );
    }
    // A ClusterRoleBinding to a Role is resolved as Kubernetes resolves it: not found.
    let mut o = RbacObjects::new();
    o.roles
        .push(Role::new("r", "ns", vec![rule("*", "*", "*", "*")]));
    let mut b = ClusterRoleBinding::new("b", "r", vec![Subject::user("u")]);
    b.role_ref = RoleRef::role("r");
    o.cluster_role_bindings.push(b);
    let d = Policy::new(&o).authorize(&Attributes::resource(UserInfo::new("u"), "get", pods));
    assert!(!d.is_allowed());
    assert_eq!(
        d.reason(),
        r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#
    );
}

#[test]
fn aggregation_unions_matching_cluster_roles_by_name() {
    let labelled = |name: &str, label: &str, rules| {
        let mut r = ClusterRole::new(name, rules);
        r.metadata.labels.insert(label.into(), "true".into());
        r
    };
    let view_rule = rule("get", "", "pods", "");
    let edit_rule = rule("create", "", "pods", "");
    let mut view = labelled("view", "aggregate-to-edit", vec![]);
    view.aggregation_rule = Some(AggregationRule::new(vec![LabelSelector::matching(
        "aggregate-to-view",
        "true",
    )]));
    let mut edit = ClusterRole::new("edit", vec![]);
    edit.aggregation_rule = Some(AggregationRule::new(vec![LabelSelector::matching(
        "aggregate-to-edit",
        "true",
    )]));
    let mut roles = vec![
        edit,
        view,
        labelled(
            "z-extra-view",
            "aggregate-to-view",
            vec![view_rule.clone(), view_rule.clone()],
        ),
        labelled("a-extra-edit", "aggregate-to-edit", vec![edit_rule.clone()]),
        labelled("unrelated", "other", vec![rule("*", "*", "*", "*")]),
    ];
    aggregate_cluster_roles(&mut roles).unwrap();
    assert_eq!(roles[1].rules, std::slice::from_ref(&view_rule), "view");
    // edit: a-extra-edit then view (by name), each rule once.
    assert_eq!(
        roles[0].rules,
        [edit_rule, view_rule],
        "edit aggregates view's aggregate"
    );

    // An empty selector selects every ClusterRole, as in Kubernetes.
    let mut all = ClusterRole::new("all", vec![]);
    all.aggregation_rule = Some(AggregationRule::new(vec![LabelSelector::default()]));
    let mut roles = vec![all, ClusterRole::new("x", vec![rule("get", "", "a", "")])];
    aggregate_cluster_roles(&mut roles).unwrap();
    assert_eq!(roles[0].rules.len(), 1);

    // Expressions, and an invalid operator refused.
    let mut sel = LabelSelector::default();
    sel.match_expressions.push(LabelSelectorRequirement::new(
        "tier",
        "In",
        vec!["a".into()],
    ));
    let mut agg = ClusterRole::new("agg", vec![]);
    agg.aggregation_rule = Some(AggregationRule::new(vec![sel]));
    let mut tier_a = ClusterRole::new("ta", vec![rule("get", "", "a", "")]);
    tier_a.metadata.labels.insert("tier".into(), "a".into());
    let mut roles = vec![
        agg.clone(),
        tier_a,
        ClusterRole::new("tb", vec![rule("get", "", "b", "")]),
    ];
    aggregate_cluster_roles(&mut roles).unwrap();
    assert_eq!(roles[0].rules, [rule("get", "", "a", "")]);
    let mut bad = agg;
    bad.aggregation_rule
        .as_mut()
        .unwrap()
        .cluster_role_selectors[0]
        .match_expressions[0]
        .operator = "in".into();
    let mut roles = vec![bad];
    assert!(matches!(
        aggregate_cluster_roles(&mut roles),
        Err(Error::InvalidLabelSelector { .. })
    ));
}

#[test]
fn reading_objects_json_and_yaml() {
    let mut o = RbacObjects::new();
    o.add_json(br#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
         "metadata":{"name":"reader","uid":"x","labels":{"a":"b"}},
         "rules":[{"verbs":["get"],"nonResourceURLs":["/metrics"]}]},
        {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",
         "metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"},
         "subjects":[{"kind":"ServiceAccount","name":"prom","namespace":"mon"}]}
    ]}"#)
    .unwrap();
    o.add_yaml(
        b"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: ns}
rules:
- apiGroups: ['']
  resources: [pods]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: null
",
    )
    .unwrap();
    assert_eq!(o.cluster_roles.len(), 1);
    assert_eq!(o.cluster_role_bindings.len(), 1);
    assert_eq!(o.roles.len(), 1);
    assert_eq!(o.role_bindings.len(), 1);
    let p = Policy::new(&o);
    let u = UserInfo::new("system:serviceaccount:mon:prom");
    assert!(
        p.authorize(&Attributes::non_resource(u, "get", "/metrics"))
            .is_allowed()
    );
}

#[test]
fn malformed_and_enormous_objects_are_typed_errors() {
    let mut o = RbacObjects::new();
    for (input, what) in [
        (&br#"{"kind":"Role","apiVersion":"v1","metadata":{"name":"x"}}"#[..], "apiVersion"),
        (br#"{"kind":"Pod","apiVersion":"rbac.authorization.k8s.io/v1"}"#, "kind"),
        (br#"{"apiVersion":"rbac.authorization.k8s.io/v1"}"#, "no kind"),
        (br#"{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"x"}}"#, "roleRef"),
        (br#"{"kind":"List","apiVersion":"v1","items":[{"kind":"List","items":[]}]}"#, "nested"),
    ] {
        assert!(
            matches!(o.add_json(input), Err(Error::InvalidRbacObject { .. })),
            "{what}"
        );
    }
    for input in [
        &b"{"[..],
        b"[]",
        br#"{"kind":"Role","kind":"Role"}"#,
        br#"{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","rules":[{"verbs":"get"}]}"#,
    ] {
        assert!(
            matches!(o.add_json(input), Err(Error::Json { .. })),
            "{input:?}"
        );
    }
    let huge = vec![b' '; delegated_auth::MAX_RBAC_DOCUMENT_BYTES + 1];
    assert!(matches!(o.add_json(&huge), Err(Error::TooLarge { .. })));
    assert!(matches!(o.add_yaml(&huge), Err(Error::TooLarge { .. })));
    // Alias bombs, duplicate keys and deep nesting stay within the YAML budget.
    let bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n";
    assert!(o.add_yaml(bomb).is_err());
    let mut deep_bomb = String::from(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: n}\nx0: &a0 [v, v, v, v, v, v, v, v]\n",
    );
    for i in 1..8 {
        deep_bomb.push_str(&format!(
            "x{i}: &a{i} [{}]\n",
            vec![format!("*a{}", i - 1); 8].join(", ")
        ));
    }
    deep_bomb.push_str("rules: [{verbs: *a7}]\n");
    assert!(matches!(
        o.add_yaml(deep_bomb.as_bytes()),
        Err(Error::Yaml { .. })
    ));
    assert!(matches!(
        o.add_yaml(b"kind: Role\nkind: Role\n"),
        Err(Error::Yaml { .. })
    ));
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    assert!(matches!(
        o.add_yaml(deep.as_bytes()),
        Err(Error::Yaml { .. })
    ));
    // Nothing was added by the failures.
    assert_eq!(o, RbacObjects::new());
}

#[test]
fn escalation_check_bounds_its_expansion() {
    let many: Vec<String> = (0..200).map(|i| format!("x{i}")).collect();
    let huge = PolicyRule::new(many.clone())
        .groups(many.clone())
        .resources(many.clone())
        .names(many);
    assert!(matches!(
        uncovered_rules(&[], &[huge]),
        Err(Error::TooManyRules { .. })
    ));
    // An owner holding everything covers anything small.
    assert!(
        covers(
            &[rule("*", "*", "*", "*")],
            &[rule("get", "", "pods", "/x")]
        )
        .unwrap()
    );
}
