//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`.

use serde_json::{Value, json};

/// The Kubernetes version the double reports (the kubectl it is tested with).
pub(crate) const MAJOR: &str = "1";
/// See [`MAJOR`].
pub(crate) const MINOR: &str = "32";

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": MAJOR,
        "minor": MINOR,
        "gitVersion": format!("v{MAJOR}.{MINOR}.0-loopback"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none (loopback API server: a test double)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub(crate) fn api_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    })
}

/// `/apis`: the one API group the double serves, `coordination.k8s.io` (Leases).
pub(crate) fn api_groups() -> Value {
    let version = json!({"groupVersion": "coordination.k8s.io/v1", "version": "v1"});
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [{
            "name": "coordination.k8s.io",
            "versions": [version],
            "preferredVersion": version,
        }],
    })
}

/// `/apis/coordination.k8s.io/v1`.
pub(crate) fn coordination_v1() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "coordination.k8s.io/v1",
        "resources": [{
            "name": "leases",
            "singularName": "lease",
            "namespaced": true,
            "kind": "Lease",
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }],
    })
}

/// `/api/v1`.
pub(crate) fn core_v1() -> Value {
    let rw = [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "configmaps",
                "singularName": "configmap",
                "namespaced": true,
                "kind": "ConfigMap",
                "verbs": rw,
                "shortNames": ["cm"],
            },
            {
                "name": "namespaces",
                "singularName": "namespace",
                "namespaced": false,
                "kind": "Namespace",
                "verbs": ["create", "get", "list", "patch", "update", "watch"],
                "shortNames": ["ns"],
            },
            {
                "name": "secrets",
                "singularName": "secret",
                "namespaced": true,
                "kind": "Secret",
                "verbs": rw,
            },
            {
                "name": "services",
                "singularName": "service",
                "namespaced": true,
                "kind": "Service",
                "verbs": rw,
                "shortNames": ["svc"],
            },
        ],
    })
}

/// The hash the OpenAPI v3 root names for `api/v1` (the document never changes).
const OPENAPI_V1_HASH: &str = "loopback0000000000000000000000000000000000000000000000000000000000";

/// `/openapi/v3`: the root naming the one group-version document.
pub(crate) fn openapi_v3_root() -> Value {
    json!({
        "paths": {
            "api/v1": {"serverRelativeURL": format!("/openapi/v3/api/v1?hash={OPENAPI_V1_HASH}")},
        },
    })
}

/// `/openapi/v3/api/v1`: a minimal OpenAPI v3 document, enough for kubectl to see that the
/// server validates fields itself (`fieldValidation` on each kind's PATCH), so it sends
/// `fieldValidation=Strict` instead of validating against a schema it would download.
pub(crate) fn openapi_v3_core() -> Value {
    let mut paths = serde_json::Map::new();
    for (plural, kind, namespaced) in [
        ("configmaps", "ConfigMap", true),
        ("secrets", "Secret", true),
        ("namespaces", "Namespace", false),
    ] {
        let path = if namespaced {
            format!("/api/v1/namespaces/{{namespace}}/{plural}/{{name}}")
        } else {
            format!("/api/v1/{plural}/{{name}}")
        };
        paths.insert(
            path,
            json!({
                "patch": {
                    "operationId": format!("patchCoreV1{kind}"),
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": kind},
                    "parameters": [
                        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    ],
                    "responses": {},
                },
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (loopback API server: a test double)", "version": format!("v{MAJOR}.{MINOR}.0")},
        "paths": paths,
        "components": {"schemas": {}},
    })
}
