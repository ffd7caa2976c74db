//! The installed `kubectl` against the policy and ServiceAccounts the loopback API server
//! creates as a cluster's control plane does: the aggregated ClusterRoles `admin`, `edit` and
//! `view` (their rules written by the aggregation controller, kept up to date when a role
//! labelled for them changes), and the ServiceAccount `default` in every namespace.
//! `kubectl auth can-i` for service accounts bound to `view`, `edit` and `admin` answers as
//! `delegated-auth`'s evaluator decides over the objects kubectl reads back.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::path::Path;

use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};

use crate::support::admin_client;
use crate::support::kubectl::{kubectl, stderr, stdout, write};

/// A TokenReview of `token` for the API server's audience, as the admin.
async fn review(client: &kube::Client, token: &str) -> Value {
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    });
    let req = http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    client.request::<Value>(req).await.unwrap()["status"].clone()
}

/// `kubectl get <what> -o json`, parsed.
async fn get_json(kc: &Path, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend(["-o", "json"]);
    let out = kubectl(kc, &all).await;
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The RBAC objects the double holds, read back with kubectl, as `delegated-auth`'s evaluator.
/// The aggregation is not run here: the aggregated roles' rules must be the ones the double's
/// controller wrote.
async fn policy_from_kubectl(kc: &Path) -> delegated_auth::Policy {
    let out = kubectl(
        kc,
        &[
            "get",
            "roles,rolebindings,clusterroles,clusterrolebindings",
            "-A",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success());
    let mut objects = delegated_auth::RbacObjects::new();
    objects.add_json(&out.stdout).unwrap();
    delegated_auth::Policy::new(&objects)
}

/// The API group of a resource the table names.
fn group(resource: &str) -> &'static str {
    match resource {
        "leases" => "coordination.k8s.io",
        "roles" | "rolebindings" => "rbac.authorization.k8s.io",
        "endpointslices" => "discovery.k8s.io",
        _ => "",
    }
}

/// `kubectl auth can-i <verb> <resource> -n <ns> --as <sa>` and the core's decision on the same
/// request over `policy` both equal `expected`.
async fn can_i(
    kc: &Path,
    policy: &delegated_auth::Policy,
    (sa, verb, resource, ns, expected): (&str, &str, &str, &str, bool),
) {
    let user = format!("system:serviceaccount:team:{sa}");
    let info = delegated_auth::UserInfo::new(user.as_str()).with_groups([
        "system:serviceaccounts",
        "system:serviceaccounts:team",
        "system:authenticated",
    ]);
    let attrs = delegated_auth::Attributes::resource(
        info,
        verb,
        delegated_auth::ResourceAttributes::new(group(resource), "v1", resource).in_namespace(ns),
    );
    assert_eq!(
        policy.authorize(&attrs).is_allowed(),
        expected,
        "delegated-auth: {user} {verb} {resource} -n {ns}"
    );
    let out = kubectl(
        kc,
        &["auth", "can-i", verb, resource, "-n", ns, "--as", &user],
    )
    .await;
    let answer = stdout(&out).trim().to_owned();
    assert_eq!(
        answer.starts_with("yes"),
        expected,
        "kubectl: {user} {verb} {resource} -n {ns}: {answer} {}",
        stderr(&out)
    );
    assert_eq!(out.status.success(), expected);
}

/// `(service account in team, verb, resource, namespace, allowed)`: `view` reads but not
/// Secrets, `edit` also writes and reads Secrets but does not grant, `admin` also grants in
/// its namespace; none of them outside the namespace of the RoleBinding.
const CAN_I: &[(&str, &str, &str, &str, bool)] = &[
    ("viewer", "get", "serviceaccounts", "team", true),
    ("viewer", "list", "configmaps", "team", true),
    ("viewer", "watch", "endpointslices", "team", true),
    ("viewer", "get", "secrets", "team", false),
    ("viewer", "create", "configmaps", "team", false),
    ("viewer", "get", "leases", "team", false),
    ("viewer", "get", "rolebindings", "team", false),
    ("viewer", "get", "configmaps", "default", false),
    ("editor", "get", "secrets", "team", true),
    ("editor", "create", "configmaps", "team", true),
    ("editor", "delete", "serviceaccounts", "team", true),
    ("editor", "update", "leases", "team", true),
    ("editor", "impersonate", "serviceaccounts", "team", true),
    ("editor", "create", "rolebindings", "team", false),
    ("editor", "get", "roles", "team", false),
    ("editor", "get", "secrets", "default", false),
    ("boss", "create", "rolebindings", "team", true),
    ("boss", "delete", "roles", "team", true),
    ("boss", "get", "secrets", "team", true),
    ("boss", "list", "configmaps", "team", true),
    ("boss", "create", "rolebindings", "default", false),
    ("boss", "escalate", "roles", "team", false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_roles_and_default_service_accounts() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());

    // The aggregated roles, as kube-apiserver creates them and the controller fills them.
    let out = kubectl(
        &kc,
        &["get", "clusterrole", "view", "-o", "jsonpath={.rules}"],
    )
    .await;
    assert!(out.status.success());
    assert!(!stdout(&out).trim().is_empty(), "view has no rules");
    let rules: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!rules.as_array().unwrap().is_empty(), "{rules}");
    let view = get_json(&kc, &["clusterrole", "view"]).await;
    assert_eq!(
        view["aggregationRule"],
        json!({"clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
        ]})
    );
    assert_eq!(
        view["metadata"]["labels"],
        json!({
            "kubernetes.io/bootstrapping": "rbac-defaults",
            "rbac.authorization.k8s.io/aggregate-to-edit": "true",
        })
    );
    assert_eq!(
        view["metadata"]["annotations"],
        json!({"rbac.authorization.kubernetes.io/autoupdate": "true"})
    );
    // view's rules are system:aggregate-to-view's; edit holds view's, admin holds edit's.
    let to_view = get_json(&kc, &["clusterrole", "system:aggregate-to-view"]).await;
    assert_eq!(view["rules"], to_view["rules"]);
    let edit = get_json(&kc, &["clusterrole", "edit"]).await;
    let admin = get_json(&kc, &["clusterrole", "admin"]).await;
    let edit_rules = edit["rules"].as_array().unwrap();
    let admin_rules = admin["rules"].as_array().unwrap();
    for rule in view["rules"].as_array().unwrap() {
        assert!(edit_rules.contains(rule), "{rule}");
    }
    for rule in edit_rules {
        assert!(admin_rules.contains(rule), "{rule}");
    }
    assert!(admin_rules.len() > edit_rules.len());
    for name in [
        "admin",
        "edit",
        "view",
        "cluster-admin",
        "system:aggregate-to-admin",
        "system:aggregate-to-edit",
        "system:aggregate-to-view",
        "system:auth-delegator",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
    ] {
        let role = get_json(&kc, &["clusterrole", name]).await;
        assert_eq!(
            role["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults",
            "{name}"
        );
    }
    let delegator = get_json(&kc, &["clusterrole", "system:auth-delegator"]).await;
    assert_eq!(
        delegator["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        ])
    );

    // The ServiceAccount default in every namespace, and in a namespace created later.
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let account = get_json(&kc, &["serviceaccount", "default", "-n", ns]).await;
        assert_eq!(account["metadata"]["namespace"], ns);
    }
    let out = kubectl(&kc, &["create", "namespace", "team"]).await;
    assert!(out.status.success());
    let out = kubectl(&kc, &["get", "serviceaccounts", "-n", "team"]).await;
    assert!(out.status.success());
    assert!(stdout(&out).contains("default"), "{}", stdout(&out));

    // kubectl create token default: a TokenReview authenticates the account.
    let client = admin_client(&server).await;
    let out = kubectl(&kc, &["create", "token", "default", "-n", "default"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out).trim().to_owned();
    let status = review(&client, &token).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:default"
    );
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    // Deleted, the account comes back (a new UID): the old token is refused.
    let team_token = {
        let out = kubectl(&kc, &["create", "token", "default", "-n", "team"]).await;
        assert!(out.status.success());
        stdout(&out).trim().to_owned()
    };
    let uid = get_json(&kc, &["serviceaccount", "default", "-n", "team"]).await["metadata"]["uid"]
        .clone();
    let out = kubectl(&kc, &["delete", "serviceaccount", "default", "-n", "team"]).await;
    assert!(out.status.success());
    let again = get_json(&kc, &["serviceaccount", "default", "-n", "team"]).await;
    assert_ne!(again["metadata"]["uid"], uid);
    let status = review(&client, &team_token).await;
    assert!(status["authenticated"].is_null(), "{status}");

    // Service accounts bound in team to view, edit and admin.
    for (sa, role) in [("viewer", "view"), ("editor", "edit"), ("boss", "admin")] {
        let out = kubectl(&kc, &["create", "serviceaccount", sa, "-n", "team"]).await;
        assert!(out.status.success());
        let out = kubectl(
            &kc,
            &[
                "create",
                "rolebinding",
                &format!("{sa}-is-{role}"),
                "-n",
                "team",
                &format!("--clusterrole={role}"),
                &format!("--serviceaccount=team:{sa}"),
            ],
        )
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let policy = policy_from_kubectl(&kc).await;
    for row in CAN_I {
        can_i(&kc, &policy, *row).await;
    }

    // A ClusterRole labelled for view is aggregated into view, edit and admin when the label
    // is set, and out of them when the role is deleted.
    let out = kubectl(
        &kc,
        &[
            "create",
            "clusterrole",
            "lease-reader",
            "--verb=get",
            "--resource=leases",
        ],
    )
    .await;
    assert!(out.status.success());
    let out = kubectl(
        &kc,
        &[
            "label",
            "clusterrole",
            "lease-reader",
            "rbac.authorization.k8s.io/aggregate-to-view=true",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let lease_rule =
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]});
    for name in ["view", "edit", "admin"] {
        let role = get_json(&kc, &["clusterrole", name]).await;
        assert!(
            role["rules"].as_array().unwrap().contains(&lease_rule),
            "{name}: {}",
            role["rules"]
        );
    }
    let policy = policy_from_kubectl(&kc).await;
    can_i(&kc, &policy, ("viewer", "get", "leases", "team", true)).await;
    let out = kubectl(&kc, &["delete", "clusterrole", "lease-reader"]).await;
    assert!(out.status.success());
    let view = get_json(&kc, &["clusterrole", "view"]).await;
    assert!(!view["rules"].as_array().unwrap().contains(&lease_rule));
    let policy = policy_from_kubectl(&kc).await;
    can_i(&kc, &policy, ("viewer", "get", "leases", "team", false)).await;
}
