//! `delegated-auth`: request attributes from a request (path, request info, attributes) and an
//! RBAC decision over a policy shaped like a cluster's defaults (~60 ClusterRoles with typical
//! rules, their ClusterRoleBindings, and a few hundred bindings of users, groups and service
//! accounts), each beside its floor (`baseline/...`).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use delegated_auth::{
    ApiPrefixes, Attributes, ClusterRole, ClusterRoleBinding, Policy, PolicyRule, RbacObjects,
    RequestInfo, RequestPath, ResourceAttributes, RoleBinding, RoleRef, Subject, UserInfo,
};

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule::new(verbs.iter().copied())
        .groups(groups.iter().copied())
        .resources(resources.iter().copied())
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// A policy shaped like kube-apiserver's bootstrap policy plus a cluster's own bindings.
fn realistic_policy() -> RbacObjects {
    let mut o = RbacObjects::new();
    let mut view = Vec::new();
    for (group, resources) in [
        (
            "",
            &[
                "pods",
                "pods/log",
                "pods/status",
                "services",
                "endpoints",
                "configmaps",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "events",
                "limitranges",
                "resourcequotas",
                "serviceaccounts",
                "namespaces",
            ][..],
        ),
        (
            "apps",
            &[
                "deployments",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "controllerrevisions",
            ],
        ),
        ("batch", &["jobs", "cronjobs"]),
        ("autoscaling", &["horizontalpodautoscalers"]),
        ("networking.k8s.io", &["ingresses", "networkpolicies"]),
        ("policy", &["poddisruptionbudgets"]),
        ("discovery.k8s.io", &["endpointslices"]),
    ] {
        view.push(rule(READ, &[group], resources));
    }
    let mut edit = view.clone();
    for (group, resources) in [
        (
            "",
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "services",
                "endpoints",
                "configmaps",
                "secrets",
                "persistentvolumeclaims",
                "serviceaccounts",
                "replicationcontrollers",
            ][..],
        ),
        (
            "apps",
            &[
                "deployments",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
            ],
        ),
        ("batch", &["jobs", "cronjobs"]),
        ("networking.k8s.io", &["ingresses", "networkpolicies"]),
    ] {
        edit.push(rule(WRITE, &[group], resources));
    }
    edit.push(rule(&["impersonate"], &[""], &["serviceaccounts"]));
    let mut admin = edit.clone();
    admin.push(rule(
        READ,
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
    ));
    admin.push(rule(
        WRITE,
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
    ));
    admin.push(rule(
        &["create"],
        &["authorization.k8s.io"],
        &["localsubjectaccessreviews"],
    ));
    o.cluster_roles.push(ClusterRole::new(
        "cluster-admin",
        vec![
            rule(&["*"], &["*"], &["*"]),
            PolicyRule::new(["*"]).urls(["*"]),
        ],
    ));
    o.cluster_roles.push(ClusterRole::new("admin", admin));
    o.cluster_roles.push(ClusterRole::new("edit", edit));
    o.cluster_roles.push(ClusterRole::new("view", view));
    o.cluster_roles.push(ClusterRole::new(
        "system:discovery",
        vec![PolicyRule::new(["get"]).urls([
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/openapi",
            "/openapi/*",
            "/readyz",
            "/version",
            "/version/",
        ])],
    ));
    o.cluster_roles.push(ClusterRole::new(
        "system:public-info-viewer",
        vec![PolicyRule::new(["get"]).urls([
            "/healthz",
            "/livez",
            "/readyz",
            "/version",
            "/version/",
        ])],
    ));
    o.cluster_roles.push(ClusterRole::new(
        "system:basic-user",
        vec![
            rule(
                &["create"],
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            ),
            rule(
                &["create"],
                &["authentication.k8s.io"],
                &["selfsubjectreviews"],
            ),
        ],
    ));
    o.cluster_roles.push(ClusterRole::new(
        "system:monitoring",
        vec![PolicyRule::new(["get"]).urls([
            "/metrics",
            "/metrics/slis",
            "/livez",
            "/readyz",
            "/healthz",
            "/livez/*",
            "/readyz/*",
            "/healthz/*",
        ])],
    ));
    o.cluster_roles.push(ClusterRole::new(
        "system:node",
        vec![
            rule(READ, &[""], &["nodes", "services", "endpoints", "pods"]),
            rule(
                &["create", "update", "patch"],
                &[""],
                &["nodes", "nodes/status", "pods/status", "events"],
            ),
            rule(
                &["get"],
                &[""],
                &[
                    "secrets",
                    "configmaps",
                    "persistentvolumeclaims",
                    "persistentvolumes",
                ],
            ),
            rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
            rule(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews", "localsubjectaccessreviews"],
            ),
            rule(
                &["get", "create", "update", "patch", "delete"],
                &["coordination.k8s.io"],
                &["leases"],
            ),
            rule(
                &["create", "get", "list", "watch"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
            ),
        ],
    ));
    // The controller manager's roles, one per controller, bound to its service account.
    let controllers = [
        (
            "attachdetach-controller",
            "storage.k8s.io",
            "volumeattachments",
        ),
        (
            "certificate-controller",
            "certificates.k8s.io",
            "certificatesigningrequests",
        ),
        (
            "clusterrole-aggregation-controller",
            "rbac.authorization.k8s.io",
            "clusterroles",
        ),
        ("cronjob-controller", "batch", "cronjobs"),
        ("daemon-set-controller", "apps", "daemonsets"),
        ("deployment-controller", "apps", "deployments"),
        ("disruption-controller", "policy", "poddisruptionbudgets"),
        ("endpoint-controller", "", "endpoints"),
        (
            "endpointslice-controller",
            "discovery.k8s.io",
            "endpointslices",
        ),
        (
            "endpointslicemirroring-controller",
            "discovery.k8s.io",
            "endpointslices",
        ),
        ("ephemeral-volume-controller", "", "persistentvolumeclaims"),
        ("expand-controller", "", "persistentvolumes"),
        ("generic-garbage-collector", "*", "*"),
        (
            "horizontal-pod-autoscaler",
            "autoscaling",
            "horizontalpodautoscalers",
        ),
        ("job-controller", "batch", "jobs"),
        ("namespace-controller", "", "namespaces"),
        ("node-controller", "", "nodes"),
        ("persistent-volume-binder", "", "persistentvolumes"),
        ("pod-garbage-collector", "", "pods"),
        ("pv-protection-controller", "", "persistentvolumes"),
        ("pvc-protection-controller", "", "persistentvolumeclaims"),
        ("replicaset-controller", "apps", "replicasets"),
        ("replication-controller", "", "replicationcontrollers"),
        ("resourcequota-controller", "", "resourcequotas"),
        ("root-ca-cert-publisher", "", "configmaps"),
        ("route-controller", "", "nodes"),
        ("service-account-controller", "", "serviceaccounts"),
        ("service-controller", "", "services"),
        ("statefulset-controller", "apps", "statefulsets"),
        ("ttl-after-finished-controller", "batch", "jobs"),
        ("ttl-controller", "", "nodes"),
        ("legacy-service-account-token-cleaner", "", "secrets"),
        (
            "validatingadmissionpolicy-status-controller",
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
        ),
        (
            "resource-claim-controller",
            "resource.k8s.io",
            "resourceclaims",
        ),
        ("selinux-warning-controller", "", "pods"),
        (
            "service-cidrs-controller",
            "networking.k8s.io",
            "servicecidrs",
        ),
        ("bootstrap-signer", "", "configmaps"),
        ("token-cleaner", "", "secrets"),
        ("persistent-volume-attacher", "storage.k8s.io", "csinodes"),
        ("node-ipam-controller", "", "nodes"),
        ("taint-eviction-controller", "", "pods"),
        ("legacy-service-account-token-tracker", "", "configmaps"),
        (
            "volume-attributes-class-protection",
            "storage.k8s.io",
            "volumeattributesclasses",
        ),
        (
            "device-taint-eviction-controller",
            "resource.k8s.io",
            "devicetaintrules",
        ),
    ];
    for (name, group, resource) in controllers {
        let full = format!("system:controller:{name}");
        o.cluster_roles.push(ClusterRole::new(
            full.clone(),
            vec![
                rule(READ, &[group], &[resource]),
                rule(
                    &["update", "patch"],
                    &[group],
                    &[
                        &format!("{resource}/status"),
                        &format!("{resource}/finalizers"),
                    ],
                ),
                rule(
                    &["create", "delete", "update", "patch"],
                    &[group],
                    &[resource],
                ),
                rule(READ, &[""], &["pods", "nodes"]),
                rule(
                    &["create", "patch", "update"],
                    &["", "events.k8s.io"],
                    &["events"],
                ),
            ],
        ));
        o.cluster_role_bindings.push(ClusterRoleBinding::new(
            full.clone(),
            full,
            vec![Subject::service_account("kube-system", name)],
        ));
    }
    for (name, role, group) in [
        ("cluster-admin", "cluster-admin", "system:masters"),
        (
            "system:discovery",
            "system:discovery",
            "system:authenticated",
        ),
        (
            "system:basic-user",
            "system:basic-user",
            "system:authenticated",
        ),
        (
            "system:public-info-viewer",
            "system:public-info-viewer",
            "system:authenticated",
        ),
        (
            "system:public-info-viewer-anonymous",
            "system:public-info-viewer",
            "system:unauthenticated",
        ),
        (
            "system:monitoring",
            "system:monitoring",
            "system:monitoring",
        ),
        ("system:node", "system:node", "system:nodes"),
    ] {
        o.cluster_role_bindings.push(ClusterRoleBinding::new(
            name,
            role,
            vec![Subject::group(group)],
        ));
    }
    // A cluster's own: 100 users with cluster roles, 300 RoleBindings in 50 namespaces.
    for i in 0..100 {
        let role = ["view", "edit", "admin"][i % 3];
        o.cluster_role_bindings.push(ClusterRoleBinding::new(
            format!("user-{i}-{role}"),
            role,
            vec![Subject::user(format!("user-{i}@example.com"))],
        ));
    }
    for i in 0..300 {
        let ns = format!("team-{}", i % 50);
        let role = ["view", "edit", "admin"][i % 3];
        let subjects = match i % 3 {
            0 => vec![Subject::group(format!("team-{}-devs", i % 50))],
            1 => vec![Subject::user(format!("dev-{i}@example.com"))],
            _ => vec![Subject::service_account("", format!("app-{i}"))],
        };
        o.role_bindings.push(RoleBinding::new(
            format!("rb-{i}"),
            ns,
            RoleRef::cluster_role(role),
            subjects,
        ));
    }
    o
}

fn request_attributes(c: &mut Criterion) {
    let mut g = c.benchmark_group("delegated_auth/request_attributes");
    // Shared, as the tower layer holds an authenticated user (from its token cache).
    let user = Arc::new(
        UserInfo::new("system:serviceaccount:monitoring:prometheus").with_groups([
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated",
        ]),
    );
    g.bench_function("ours/resource_get", |b| {
        b.iter(|| {
            let path = RequestPath::parse(black_box(
                "/apis/apps/v1/namespaces/default/deployments/web",
            ))
            .unwrap();
            let info =
                RequestInfo::resolve(black_box("GET"), &path, None, &ApiPrefixes::Kubernetes)
                    .unwrap();
            info.into_attributes(Arc::clone(&user))
        })
    });
    g.bench_function("ours/list_field_selector", |b| {
        b.iter(|| {
            let path = RequestPath::parse(black_box("/api/v1/namespaces/default/pods")).unwrap();
            let info = RequestInfo::resolve(
                black_box("GET"),
                &path,
                Some(black_box(
                    "watch=1&fieldSelector=metadata.name%3Dweb-0&labelSelector=app%3Dweb",
                )),
                &ApiPrefixes::Kubernetes,
            )
            .unwrap();
            info.into_attributes(Arc::clone(&user))
        })
    });
    g.bench_function("ours/non_resource", |b| {
        b.iter(|| {
            let path = RequestPath::parse(black_box("/metrics")).unwrap();
            let info =
                RequestInfo::resolve(black_box("GET"), &path, None, &ApiPrefixes::Kubernetes)
                    .unwrap();
            info.into_attributes(Arc::clone(&user))
        })
    });
    // The floors: a map lookup keyed by the path plus a clone of the user (a deep one, as the
    // attributes took before they shared it), and splitting the path.
    let map: HashMap<String, u32> = (0..64)
        .map(|i| (format!("/apis/apps/v1/namespaces/ns{i}/deployments/web"), i))
        .chain([(
            "/apis/apps/v1/namespaces/default/deployments/web".to_owned(),
            99,
        )])
        .collect();
    g.bench_function("baseline/hashmap_lookup_and_user_clone", |b| {
        b.iter(|| {
            (
                map.get(black_box(
                    "/apis/apps/v1/namespaces/default/deployments/web",
                )),
                UserInfo::clone(&user),
            )
        })
    });
    g.bench_function("baseline/path_split_collect", |b| {
        b.iter(|| {
            black_box("/apis/apps/v1/namespaces/default/deployments/web")
                .trim_matches('/')
                .split('/')
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

fn rbac_decision(c: &mut Criterion) {
    let mut g = c.benchmark_group("delegated_auth/rbac_decision");
    let objects = realistic_policy();
    let policy = Policy::new(&objects);
    eprintln!(
        "policy: {} ClusterRoles, {} ClusterRoleBindings, {} RoleBindings",
        objects.cluster_roles.len(),
        objects.cluster_role_bindings.len(),
        objects.role_bindings.len()
    );
    let sa = |ns: &str, name: &str| {
        UserInfo::new(format!("system:serviceaccount:{ns}:{name}")).with_groups([
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated".to_owned(),
        ])
    };
    let cases = [
        (
            "ours/controller_allowed",
            Attributes::resource(
                sa("kube-system", "deployment-controller"),
                "update",
                ResourceAttributes::new("apps", "v1", "deployments")
                    .in_namespace("team-3")
                    .with_subresource("status")
                    .with_name("web"),
            ),
            true,
        ),
        (
            "ours/rolebinding_edit_allowed",
            Attributes::resource(
                UserInfo::new("someone@example.com")
                    .with_groups(["team-7-devs", "system:authenticated"]),
                "get",
                ResourceAttributes::new("", "v1", "pods")
                    .in_namespace("team-7")
                    .with_name("web-0"),
            ),
            true,
        ),
        (
            "ours/serviceaccount_rolebinding_allowed",
            Attributes::resource(
                sa("team-2", "app-2"),
                "patch",
                ResourceAttributes::new("apps", "v1", "deployments")
                    .in_namespace("team-2")
                    .with_subresource("scale")
                    .with_name("web"),
            ),
            true,
        ),
        (
            "ours/denied",
            Attributes::resource(
                sa("team-9", "nobody"),
                "delete",
                ResourceAttributes::new("", "v1", "secrets")
                    .in_namespace("team-9")
                    .with_name("s"),
            ),
            false,
        ),
        (
            "ours/non_resource_metrics",
            Attributes::non_resource(
                UserInfo::new("prometheus")
                    .with_groups(["system:monitoring", "system:authenticated"]),
                "get",
                "/metrics",
            ),
            true,
        ),
    ];
    for (name, attrs, allowed) in &cases {
        assert_eq!(policy.authorize(attrs).is_allowed(), *allowed, "{name}");
        g.bench_function(*name, |b| b.iter(|| policy.authorize(black_box(attrs))));
    }
    // The floor: one hash-map lookup of a precomputed decision key.
    let decisions: HashMap<(String, String, String), bool> = (0..500)
        .map(|i| {
            (
                (format!("user-{i}"), "get".to_owned(), format!("pods-{i}")),
                i % 2 == 0,
            )
        })
        .collect();
    let key = ("user-77".to_owned(), "get".to_owned(), "pods-77".to_owned());
    g.bench_function("baseline/hashmap_decision_lookup", |b| {
        b.iter(|| decisions.get(black_box(&key)).copied())
    });
    g.finish();
}

criterion_group!(benches, request_attributes, rbac_decision);
criterion_main!(benches);
