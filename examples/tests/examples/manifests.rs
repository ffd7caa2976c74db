//! The Kubernetes manifests in `deploy/controllers/` that run the bootstrap signer and the
//! token cleaner: every object round-trips through its typed k8s-openapi object (no field
//! misspelt or misplaced), `kubectl kustomize` renders exactly the files' objects, the
//! Deployment passes the documented flags, its two replicas prefer different nodes and a
//! PodDisruptionBudget evicts one at a time, and the RBAC grants exactly the listed rules (plus,
//! cluster-wide, `system:auth-delegator` and the scrapers' `/metrics` ClusterRole).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use serde_json::Value;

/// The name of every object but the cluster-info Role and its RoleBinding.
const NAME: &str = "k8s-bootstrap-controllers";

/// (kind, namespace, name) of an object.
type Key = (String, String, String);

/// Every object the manifests must contain, and nothing else.
const EXPECTED_OBJECTS: &[(&str, &str, &str)] = &[
    ("ServiceAccount", "kube-system", NAME),
    ("Deployment", "kube-system", NAME),
    ("Service", "kube-system", NAME),
    ("PodDisruptionBudget", "kube-system", NAME),
    ("Role", "kube-system", NAME),
    ("RoleBinding", "kube-system", NAME),
    (
        "Role",
        "kube-public",
        "k8s-bootstrap-controllers:cluster-info",
    ),
    (
        "RoleBinding",
        "kube-public",
        "k8s-bootstrap-controllers:cluster-info",
    ),
    // --metrics-secure: system:auth-delegator for the controllers, and the scrapers' example
    // ClusterRole (cluster-scoped: no namespace).
    (
        "ClusterRoleBinding",
        "",
        "k8s-bootstrap-controllers:auth-delegator",
    ),
    (
        "ClusterRole",
        "",
        "k8s-bootstrap-controllers:metrics-reader",
    ),
];

/// The container's args, as documented in deploy/controllers/README.md.
const EXPECTED_ARGS: &[&str] = &[
    "controllers",
    "--controllers=bootstrapsigner,tokencleaner",
    "--leader-elect=true",
    "--leader-elect-resource-namespace=kube-system",
    "--leader-elect-resource-name=k8s-bootstrap-controllers",
    "--http-address=0.0.0.0:10266",
    "--metrics-secure=true",
];

/// One granted rule: (namespace, apiGroup, resource, resourceNames, verbs).
type Rule = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// A granted rule, owned: (namespace, apiGroup, resource, sorted resourceNames, sorted verbs).
type GrantedRule = (String, String, String, Vec<String>, Vec<String>);

/// Exactly what the Roles may grant. An empty resourceNames means "every object of the
/// resource in the namespace" (Kubernetes cannot restrict list, watch or create by name).
const EXPECTED_RULES: &[Rule] = &[
    // Token Secrets: both controllers list and watch them, the cleaner deletes expired ones.
    (
        "kube-system",
        "",
        "secrets",
        &[],
        &["list", "watch", "delete"],
    ),
    // Leader election: GET and UPDATE (with the resourceVersion read) of its Lease...
    (
        "kube-system",
        "coordination.k8s.io",
        "leases",
        &[NAME],
        &["get", "update"],
    ),
    // ... and CREATE when it is missing, which resourceNames cannot restrict.
    (
        "kube-system",
        "coordination.k8s.io",
        "leases",
        &[],
        &["create"],
    ),
    // The signer lists and watches kube-public/cluster-info (list and watch cannot be
    // restricted by name)...
    ("kube-public", "", "configmaps", &[], &["list", "watch"]),
    // ... and replaces it, and nothing else (as kube-controller-manager's bootstrap-signer
    // Role).
    (
        "kube-public",
        "",
        "configmaps",
        &["cluster-info"],
        &["update"],
    ),
];

fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/controllers")
}

/// The manifest files (every `.yaml` but kustomization.yaml), sorted.
fn manifest_files() -> Vec<PathBuf> {
    let dir = manifests_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
                && path
                    .file_name()
                    .is_some_and(|name| name != "kustomization.yaml")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    files
}

/// The documents of a multi-document YAML stream (empty documents skipped).
fn parse_documents(yaml: &str, origin: &str) -> Vec<Value> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(yaml)
        .unwrap_or_else(|e| panic!("{origin}: not valid YAML: {e}"));
    documents.into_iter().filter(|doc| !doc.is_null()).collect()
}

/// Every document of one file.
fn file_documents(path: &Path) -> Vec<Value> {
    let yaml =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    parse_documents(&yaml, &path.display().to_string())
}

/// Every object of every manifest file.
fn all_objects() -> Vec<Value> {
    manifest_files()
        .iter()
        .flat_map(|path| file_documents(path))
        .collect()
}

fn key(object: &Value) -> Key {
    let field = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("object without {pointer}: {object}"))
            .to_owned()
    };
    (
        field("/kind"),
        object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        field("/metadata/name"),
    )
}

fn sorted_by_key(mut objects: Vec<Value>) -> Vec<Value> {
    objects.sort_by_key(key);
    objects
}

/// `object` through `T` and back.
fn round_trip<T: DeserializeOwned + Serialize>(object: &Value) -> Value {
    let typed: T = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("{:?}: does not parse as its type: {e}", key(object)));
    serde_json::to_value(&typed).unwrap()
}

/// `object` through the k8s-openapi type its kind names, and back.
fn typed_round_trip(object: &Value) -> Value {
    match key(object).0.as_str() {
        "Deployment" => round_trip::<Deployment>(object),
        "ServiceAccount" => round_trip::<ServiceAccount>(object),
        "Service" => round_trip::<Service>(object),
        "PodDisruptionBudget" => round_trip::<PodDisruptionBudget>(object),
        "Role" => round_trip::<Role>(object),
        "RoleBinding" => round_trip::<RoleBinding>(object),
        "ClusterRole" => round_trip::<ClusterRole>(object),
        "ClusterRoleBinding" => round_trip::<ClusterRoleBinding>(object),
        other => panic!("unexpected kind {other}: {object}"),
    }
}

/// The objects of kind `T`, typed.
fn typed_objects<T: DeserializeOwned + k8s_openapi::Resource>() -> Vec<T> {
    all_objects()
        .into_iter()
        .filter(|object| key(object).0 == T::KIND)
        .map(|object| serde_json::from_value(object).unwrap())
        .collect()
}

/// Whether any string (key or value) anywhere in `value` is the wildcard `*`.
fn has_wildcard(value: &Value) -> bool {
    match value {
        Value::String(s) => s == "*",
        Value::Array(items) => items.iter().any(has_wildcard),
        Value::Object(map) => map
            .iter()
            .any(|(name, item)| name == "*" || has_wildcard(item)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[test]
fn every_manifest_round_trips_through_its_typed_k8s_openapi_object() {
    let mut found = Vec::new();
    for path in manifest_files() {
        for object in file_documents(&path) {
            assert_eq!(
                typed_round_trip(&object),
                object,
                "{}: {:?} changes through its k8s-openapi type",
                path.display(),
                key(&object)
            );
            let labels = &object["metadata"]["labels"];
            assert_eq!(labels["app.kubernetes.io/name"], NAME, "{:?}", key(&object));
            assert_eq!(
                labels["app.kubernetes.io/component"],
                "controllers",
                "{:?}",
                key(&object)
            );
            found.push(key(&object));
        }
    }
    let unique: BTreeSet<Key> = found.iter().cloned().collect();
    assert_eq!(unique.len(), found.len(), "duplicate objects: {found:?}");
    let expected: BTreeSet<Key> = EXPECTED_OBJECTS
        .iter()
        .map(|&(kind, namespace, name)| (kind.to_owned(), namespace.to_owned(), name.to_owned()))
        .collect();
    assert_eq!(unique, expected);
}

/// The image kustomization.yaml's `images:` entry gives the container named `k8s-bootstrap` in
/// the files.
const KUSTOMIZED_IMAGE: &str = "ghcr.io/k8s-bootstrap-rs/k8s-bootstrap:0.1.0";

/// The objects as kustomize renders them: the files' `image: k8s-bootstrap` replaced by the
/// kustomization's image; no other change.
fn with_kustomized_image(mut objects: Vec<Value>) -> Vec<Value> {
    let ours: Vec<&mut Value> = objects
        .iter_mut()
        .filter_map(|o| o.pointer_mut("/spec/template/spec/containers"))
        .filter_map(Value::as_array_mut)
        .flatten()
        .map(|container| &mut container["image"])
        .filter(|image| **image == "k8s-bootstrap")
        .collect();
    assert_eq!(ours.len(), 1, "one container names the image k8s-bootstrap");
    for image in ours {
        *image = Value::from(KUSTOMIZED_IMAGE);
    }
    objects
}

#[test]
fn kustomize_renders_every_manifest() {
    let dir = manifests_dir();
    let output = match Command::new("kubectl").arg("kustomize").arg(&dir).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped: kubectl is not on PATH");
            return;
        }
        Err(e) => panic!("running kubectl: {e}"),
    };
    assert!(
        output.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let rendered = String::from_utf8(output.stdout).unwrap();
    let rendered = sorted_by_key(parse_documents(&rendered, "kubectl kustomize output"));
    let files = sorted_by_key(with_kustomized_image(all_objects()));
    assert_eq!(
        rendered.iter().map(key).collect::<Vec<_>>(),
        files.iter().map(key).collect::<Vec<_>>()
    );
    assert_eq!(rendered, files);
}

#[test]
fn deployment_args_are_the_documented_flags() {
    let deployments: Vec<Deployment> = typed_objects();
    let [deployment] = deployments.as_slice() else {
        panic!("expected one Deployment, found {}", deployments.len());
    };
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some(NAME));
    let [container] = pod.containers.as_slice() else {
        panic!("expected one container, found {}", pod.containers.len());
    };
    assert_eq!(container.name, "controllers");
    assert_eq!(container.args.as_deref().unwrap(), EXPECTED_ARGS);

    let env = container.env.as_deref().unwrap();
    let pod_name: Vec<_> = env.iter().filter(|var| var.name == "POD_NAME").collect();
    let [pod_name] = pod_name.as_slice() else {
        panic!("expected one POD_NAME, found {pod_name:?}");
    };
    assert_eq!(pod_name.value, None);
    let source = pod_name.value_from.as_ref().unwrap();
    assert_eq!(
        source.field_ref.as_ref().unwrap().field_path,
        "metadata.name"
    );

    // The `https` port is the one --http-address listens on (TLS with --metrics-secure).
    let ports = container.ports.as_deref().unwrap();
    let [port] = ports else {
        panic!("expected one container port, found {ports:?}");
    };
    assert_eq!(port.name.as_deref(), Some("https"));
    assert_eq!(port.container_port, 10266);

    let http = IntOrString::String("https".to_owned());
    for (probe, path) in [
        (&container.liveness_probe, "/healthz"),
        (&container.readiness_probe, "/readyz"),
    ] {
        let get = probe.as_ref().unwrap().http_get.as_ref().unwrap();
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.port, http);
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"));
    }

    // The Service forwards to the same named port.
    let services: Vec<Service> = typed_objects();
    let [service] = services.as_slice() else {
        panic!("expected one Service, found {}", services.len());
    };
    let service_ports = service.spec.as_ref().unwrap().ports.as_deref().unwrap();
    let [service_port] = service_ports else {
        panic!("expected one Service port, found {service_ports:?}");
    };
    assert_eq!(service_port.port, 10266);
    assert_eq!(service_port.target_port.as_ref(), Some(&http));
}

/// The two replicas prefer different nodes (a node lost takes one replica, not both), and a
/// voluntary disruption evicts one at a time, so the standby keeps or takes over the Lease.
#[test]
fn two_replicas_prefer_different_nodes_and_a_drain_evicts_one_at_a_time() {
    let deployments: Vec<Deployment> = typed_objects();
    let [deployment] = deployments.as_slice() else {
        panic!("expected one Deployment, found {}", deployments.len());
    };
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    let selector = spec.selector.match_labels.clone().unwrap();
    let pod = spec.template.spec.as_ref().unwrap();
    let anti = pod
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .expect("a pod anti-affinity");
    // Preferred, not required: a one-node cluster still runs both replicas.
    assert_eq!(
        anti.required_during_scheduling_ignored_during_execution,
        None
    );
    let preferred = anti
        .preferred_during_scheduling_ignored_during_execution
        .as_deref()
        .unwrap();
    let [term] = preferred else {
        panic!("expected one preferred term, found {preferred:?}");
    };
    assert_eq!(term.weight, 100);
    assert_eq!(
        term.pod_affinity_term.topology_key,
        "kubernetes.io/hostname"
    );
    let terms_selector = term.pod_affinity_term.label_selector.as_ref().unwrap();
    assert_eq!(terms_selector.match_labels.as_ref(), Some(&selector));

    let budgets: Vec<PodDisruptionBudget> = typed_objects();
    let [budget] = budgets.as_slice() else {
        panic!("expected one PodDisruptionBudget, found {}", budgets.len());
    };
    let budget = budget.spec.as_ref().unwrap();
    assert_eq!(budget.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(budget.min_available, None);
    assert_eq!(
        budget.selector.as_ref().unwrap().match_labels.as_ref(),
        Some(&selector)
    );
}

#[test]
fn rbac_rules_are_least_privilege() {
    let objects = all_objects();
    for object in &objects {
        assert!(!has_wildcard(object), "wildcard in {:?}", key(object));
    }
    // Cluster-wide: only system:auth-delegator for the controllers (create TokenReviews and
    // SubjectAccessReviews, for --metrics-secure), and the scrapers' ClusterRole, which grants
    // get on /metrics and nothing else and is bound to nobody here.
    let cluster_bindings: Vec<ClusterRoleBinding> = typed_objects();
    let [delegator] = cluster_bindings.as_slice() else {
        panic!("expected one ClusterRoleBinding, found {cluster_bindings:?}");
    };
    assert_eq!(delegator.role_ref.kind, "ClusterRole");
    assert_eq!(delegator.role_ref.name, "system:auth-delegator");
    let subjects = delegator.subjects.as_deref().unwrap();
    let [subject] = subjects else {
        panic!("expected one subject, found {subjects:?}");
    };
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", NAME)
    );
    assert_eq!(subject.namespace.as_deref(), Some("kube-system"));
    let cluster_roles: Vec<ClusterRole> = typed_objects();
    let [reader] = cluster_roles.as_slice() else {
        panic!("expected one ClusterRole, found {cluster_roles:?}");
    };
    let rules = reader.rules.as_deref().unwrap();
    let [rule] = rules else {
        panic!("expected one rule, found {rules:?}");
    };
    assert_eq!(
        rule.non_resource_urls.as_deref(),
        Some(&["/metrics".to_owned()][..])
    );
    assert_eq!(rule.verbs, ["get"]);
    assert_eq!(rule.resources, None);
    assert_eq!(rule.api_groups, None);

    // Flatten every Role's rules to one (namespace, apiGroup, resource, names, verbs) each.
    let mut granted: Vec<GrantedRule> = Vec::new();
    let roles: Vec<Role> = typed_objects();
    for role in &roles {
        let namespace = role.metadata.namespace.clone().unwrap();
        for rule in role.rules.as_deref().unwrap_or_default() {
            assert_eq!(rule.non_resource_urls, None, "{namespace}: {rule:?}");
            let mut names = rule.resource_names.clone().unwrap_or_default();
            names.sort();
            let mut verbs = rule.verbs.clone();
            verbs.sort();
            for group in rule.api_groups.as_deref().unwrap_or_default() {
                for resource in rule.resources.as_deref().unwrap_or_default() {
                    granted.push((
                        namespace.clone(),
                        group.clone(),
                        resource.clone(),
                        names.clone(),
                        verbs.clone(),
                    ));
                }
            }
        }
    }
    granted.sort();
    let mut expected: Vec<GrantedRule> = EXPECTED_RULES
        .iter()
        .map(|&(namespace, group, resource, names, verbs)| {
            let mut names: Vec<String> = names.iter().map(|&n| n.to_owned()).collect();
            names.sort();
            let mut verbs: Vec<String> = verbs.iter().map(|&v| v.to_owned()).collect();
            verbs.sort();
            (
                namespace.to_owned(),
                group.to_owned(),
                resource.to_owned(),
                names,
                verbs,
            )
        })
        .collect();
    expected.sort();
    assert_eq!(granted, expected);

    // Each Role is bound once, in its own namespace, to the controllers' ServiceAccount only.
    let bindings: Vec<RoleBinding> = typed_objects();
    assert_eq!(bindings.len(), roles.len());
    for role in &roles {
        let (namespace, name) = (&role.metadata.namespace, &role.metadata.name);
        let bound: Vec<_> = bindings
            .iter()
            .filter(|b| b.role_ref.kind == "Role" && Some(&b.role_ref.name) == name.as_ref())
            .collect();
        let [binding] = bound.as_slice() else {
            panic!("{name:?}: expected one RoleBinding, found {}", bound.len());
        };
        assert_eq!(&binding.metadata.namespace, namespace);
        assert_eq!(
            binding.role_ref.api_group.as_deref(),
            Some("rbac.authorization.k8s.io")
        );
        let subjects = binding.subjects.as_deref().unwrap();
        let [subject] = subjects else {
            panic!("{name:?}: expected one subject, found {subjects:?}");
        };
        assert_eq!(subject.kind, "ServiceAccount");
        assert_eq!(subject.name, NAME);
        assert_eq!(subject.namespace.as_deref(), Some("kube-system"));
        assert_eq!(subject.api_group, None);
    }
}

/// One API request as RBAC sees it: (namespace, apiGroup, resource, name, verb).
type Access = (String, String, String, Option<String>, String);

/// The RBAC attributes of a request the loopback API server recorded.
fn access(method: &str, path: &str, query: &str) -> Option<Access> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (namespace, resource, name) = match rest {
        ["namespaces", ns, resource] => (*ns, *resource, None),
        ["namespaces", ns, resource, name] => (*ns, *resource, Some((*name).to_owned())),
        _ => return None,
    };
    let watching = query
        .split('&')
        .any(|p| p == "watch=true" || p == "watch=1");
    let verb = match (method, name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        _ => return None,
    };
    Some((
        namespace.to_owned(),
        group.to_owned(),
        resource.to_owned(),
        name,
        verb.to_owned(),
    ))
}

/// Whether the manifests' Roles allow `access`.
fn allowed(roles: &[Role], access: &Access) -> bool {
    let (namespace, group, resource, name, verb) = access;
    roles
        .iter()
        .filter(|r| r.metadata.namespace.as_ref() == Some(namespace))
        .flat_map(|r| r.rules.as_deref().unwrap_or_default())
        .any(|rule| {
            let has = |list: &Option<Vec<String>>, v: &str| {
                list.as_deref().unwrap_or_default().iter().any(|x| x == v)
            };
            has(&rule.api_groups, group)
                && has(&rule.resources, resource)
                && rule.verbs.iter().any(|v| v == verb)
                && match rule.resource_names.as_deref() {
                    None | Some([]) => true,
                    Some(names) => name.as_ref().is_some_and(|n| names.contains(n)),
                }
        })
}

/// Runs both controllers behind leader election against the loopback API server through a
/// scenario that takes every code path that talks to the API (a first leader creating the
/// Lease, signing, a concurrent cluster-info edit, deleting an expired token, releasing the
/// Lease on shutdown), records every request, and checks that the Roles allow each one and
/// that every verb they grant was used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_grants_exactly_what_the_controllers_use() {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_bootstrap::controllers::{self, Enabled, LeaderElection, Metrics, Options};
    use loopback_apiserver::LoopbackApiServer;
    use serde_json::json;

    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .start()
        .await
        .unwrap();
    let kubeconfig =
        k8s_bootstrap::kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml())
            .unwrap();
    let config =
        k8s_bootstrap::kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
    let client = k8s_bootstrap::kube::Client::try_from(config).unwrap();
    let before = server.requests().len();
    let metrics = Arc::new(Metrics::new());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut election = LeaderElection::new("replica-a");
    election.lease_duration = Duration::from_secs(4);
    election.renew_deadline = Duration::from_secs(3);
    election.retry_period = Duration::from_millis(200);
    let run = tokio::spawn(controllers::run(
        client,
        Enabled::all(),
        Some(election),
        Options::default(),
        metrics.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let wait = |what: &'static str, check: Box<dyn Fn() -> bool>| async move {
        for _ in 0..500 {
            if check() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("timed out: {what}");
    };
    let m = metrics.clone();
    wait(
        "leading and synced",
        Box::new(move || m.is_leader() && m.is_ready()),
    )
    .await;
    let token = |id: &str, extra: Value| {
        let mut data = json!({"token-id": id, "token-secret": "0123456789abcdef",
            "usage-bootstrap-signing": "true"});
        if let (Some(d), Value::Object(e)) = (data.as_object_mut(), extra) {
            d.extend(e);
        }
        json!({"metadata": {"name": format!("bootstrap-token-{id}")},
            "type": "bootstrap.kubernetes.io/token", "stringData": data})
    };
    server
        .insert("kube-system", "secrets", token("abcdef", json!({})))
        .unwrap();
    server
        .insert(
            "kube-system",
            "secrets",
            token("oldold", json!({"expiration": "2020-01-01T00:00:00Z"})),
        )
        .unwrap();
    let m = metrics.clone();
    wait(
        "signed and cleaned",
        Box::new(move || m.cluster_info_writes() >= 1 && m.deleted_tokens() == 1),
    )
    .await;
    // Let the lease be renewed at least once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();

    let roles: Vec<Role> = typed_objects();
    let used: BTreeSet<Access> = server.requests()[before..]
        .iter()
        .filter_map(|r| access(&r.method, &r.path, &r.query))
        .collect();
    assert!(!used.is_empty());
    for a in &used {
        assert!(allowed(&roles, a), "the Roles do not allow {a:?}");
    }
    // Every granted (namespace, group, resource, verb) was used.
    let used_verbs: BTreeSet<(String, String, String, String)> = used
        .iter()
        .map(|(ns, g, r, _, v)| (ns.clone(), g.clone(), r.clone(), v.clone()))
        .collect();
    for role in &roles {
        let namespace = role.metadata.namespace.clone().unwrap();
        for rule in role.rules.as_deref().unwrap_or_default() {
            for group in rule.api_groups.as_deref().unwrap_or_default() {
                for resource in rule.resources.as_deref().unwrap_or_default() {
                    for verb in &rule.verbs {
                        let key = (
                            namespace.clone(),
                            group.clone(),
                            resource.clone(),
                            verb.clone(),
                        );
                        assert!(
                            used_verbs.contains(&key),
                            "{key:?} is granted but never used; used: {used_verbs:#?}"
                        );
                    }
                }
            }
        }
    }
}
