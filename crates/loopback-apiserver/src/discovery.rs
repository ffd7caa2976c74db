//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>/<version>`, and
//! the OpenAPI v3 documents kubectl reads.

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

/// `/apis`: the API groups the double serves, `authentication.k8s.io` (TokenReviews,
/// SelfSubjectReviews), `authorization.k8s.io` (the access reviews), `certificates.k8s.io`
/// (CertificateSigningRequests), `rbac.authorization.k8s.io` (the policy objects),
/// `coordination.k8s.io` (Leases) and `discovery.k8s.io` (EndpointSlices), in kube-apiserver's
/// order.
pub(crate) fn api_groups() -> Value {
    let groups: Vec<Value> = [
        "authentication.k8s.io",
        "authorization.k8s.io",
        "certificates.k8s.io",
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
    ]
    .iter()
    .map(|group| {
        let version = json!({"groupVersion": format!("{group}/v1"), "version": "v1"});
        json!({"name": group, "versions": [version], "preferredVersion": version})
    })
    .collect();
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": groups,
    })
}

/// A resource that is only created (a review), in `group_version`.
fn create_only(name: &str, kind: &str, namespaced: bool) -> Value {
    json!({
        "name": name,
        "singularName": name.strip_suffix('s').unwrap_or(name),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": ["create"],
    })
}

/// `/apis/authentication.k8s.io/v1`.
pub(crate) fn authentication_v1() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "authentication.k8s.io/v1",
        "resources": [
            create_only("selfsubjectreviews", "SelfSubjectReview", false),
            create_only("tokenreviews", "TokenReview", false),
        ],
    })
}

/// `/apis/authorization.k8s.io/v1`.
pub(crate) fn authorization_v1() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "authorization.k8s.io/v1",
        "resources": [
            create_only("localsubjectaccessreviews", "LocalSubjectAccessReview", true),
            create_only("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
            create_only("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
            create_only("subjectaccessreviews", "SubjectAccessReview", false),
        ],
    })
}

/// `/apis/rbac.authorization.k8s.io/v1`.
pub(crate) fn rbac_v1() -> Value {
    let rw = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let resource = |name: &str, kind: &str, namespaced: bool| {
        json!({
            "name": name,
            "singularName": name.strip_suffix('s').unwrap_or(name),
            "namespaced": namespaced,
            "kind": kind,
            "verbs": rw,
        })
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "rbac.authorization.k8s.io/v1",
        "resources": [
            resource("clusterrolebindings", "ClusterRoleBinding", false),
            resource("clusterroles", "ClusterRole", false),
            resource("rolebindings", "RoleBinding", true),
            resource("roles", "Role", true),
        ],
    })
}

/// `/apis/certificates.k8s.io/v1`: CertificateSigningRequests and their `approval` and `status`
/// subresources.
pub(crate) fn certificates_v1() -> Value {
    let sub = |name: &str| {
        json!({
            "name": format!("certificatesigningrequests/{name}"),
            "singularName": "",
            "namespaced": false,
            "kind": "CertificateSigningRequest",
            "verbs": ["get", "patch", "update"],
        })
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "certificates.k8s.io/v1",
        "resources": [
            {
                "name": "certificatesigningrequests",
                "singularName": "certificatesigningrequest",
                "namespaced": false,
                "kind": "CertificateSigningRequest",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                "shortNames": ["csr"],
            },
            sub("approval"),
            sub("status"),
        ],
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

/// `/apis/discovery.k8s.io/v1`.
pub(crate) fn discovery_v1() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "discovery.k8s.io/v1",
        "resources": [{
            "name": "endpointslices",
            "singularName": "endpointslice",
            "namespaced": true,
            "kind": "EndpointSlice",
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
                "name": "nodes",
                "singularName": "node",
                "namespaced": false,
                "kind": "Node",
                "verbs": rw,
                "shortNames": ["no"],
            },
            {
                "name": "nodes/status",
                "singularName": "",
                "namespaced": false,
                "kind": "Node",
                "verbs": ["get", "patch", "update"],
            },
            {
                "name": "secrets",
                "singularName": "secret",
                "namespaced": true,
                "kind": "Secret",
                "verbs": rw,
            },
            {
                "name": "serviceaccounts",
                "singularName": "serviceaccount",
                "namespaced": true,
                "kind": "ServiceAccount",
                "verbs": rw,
                "shortNames": ["sa"],
            },
            {
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
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

/// The hash the OpenAPI v3 root names for each group-version (the documents never change).
const OPENAPI_HASH: &str = "loopback0000000000000000000000000000000000000000000000000000000000";

/// `/openapi/v3`: the root naming the group-version documents.
pub(crate) fn openapi_v3_root() -> Value {
    let url =
        |gv: &str| json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={OPENAPI_HASH}")});
    json!({
        "paths": {
            "api/v1": url("api/v1"),
            "apis/certificates.k8s.io/v1": url("apis/certificates.k8s.io/v1"),
            "apis/discovery.k8s.io/v1": url("apis/discovery.k8s.io/v1"),
            "apis/rbac.authorization.k8s.io/v1": url("apis/rbac.authorization.k8s.io/v1"),
        },
    })
}

/// `/openapi/v3/api/v1`: a minimal OpenAPI v3 document, enough for kubectl to see that the
/// server validates fields itself (`fieldValidation` on each kind's PATCH), so it sends
/// `fieldValidation=Strict` instead of validating against a schema it would download.
pub(crate) fn openapi_v3_core() -> Value {
    openapi_v3_document(&[
        (
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            "patchCoreV1NamespacedConfigMap",
            "",
            "ConfigMap",
        ),
        (
            "/api/v1/namespaces/{namespace}/secrets/{name}",
            "patchCoreV1NamespacedSecret",
            "",
            "Secret",
        ),
        (
            "/api/v1/namespaces/{name}",
            "patchCoreV1Namespace",
            "",
            "Namespace",
        ),
        ("/api/v1/nodes/{name}", "patchCoreV1Node", "", "Node"),
        (
            "/api/v1/namespaces/{namespace}/services/{name}",
            "patchCoreV1NamespacedService",
            "",
            "Service",
        ),
        (
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}",
            "patchCoreV1NamespacedServiceAccount",
            "",
            "ServiceAccount",
        ),
    ])
}

/// `/openapi/v3/apis/rbac.authorization.k8s.io/v1`, as [`openapi_v3_core`] for the policy
/// objects.
pub(crate) fn openapi_v3_rbac() -> Value {
    const GROUP: &str = "rbac.authorization.k8s.io";
    openapi_v3_document(&[
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}",
            "patchRbacAuthorizationV1ClusterRoleBinding",
            GROUP,
            "ClusterRoleBinding",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}",
            "patchRbacAuthorizationV1ClusterRole",
            GROUP,
            "ClusterRole",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}",
            "patchRbacAuthorizationV1NamespacedRoleBinding",
            GROUP,
            "RoleBinding",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}",
            "patchRbacAuthorizationV1NamespacedRole",
            GROUP,
            "Role",
        ),
    ])
}

/// `/openapi/v3/apis/discovery.k8s.io/v1`, as [`openapi_v3_core`] for EndpointSlices.
pub(crate) fn openapi_v3_discovery() -> Value {
    openapi_v3_document(&[(
        "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices/{name}",
        "patchDiscoveryV1NamespacedEndpointSlice",
        "discovery.k8s.io",
        "EndpointSlice",
    )])
}

/// `/openapi/v3/apis/certificates.k8s.io/v1`, as [`openapi_v3_core`] for
/// CertificateSigningRequests.
pub(crate) fn openapi_v3_certificates() -> Value {
    openapi_v3_document(&[(
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}",
        "patchCertificatesV1CertificateSigningRequest",
        "certificates.k8s.io",
        "CertificateSigningRequest",
    )])
}

/// A document with a PATCH operation (and its `fieldValidation` parameter) per
/// `(path, operationId, group, kind)`.
fn openapi_v3_document(operations: &[(&str, &str, &str, &str)]) -> Value {
    let mut paths = serde_json::Map::new();
    for (path, operation, group, kind) in operations {
        paths.insert(
            (*path).to_owned(),
            json!({
                "patch": {
                    "operationId": operation,
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": group, "version": "v1", "kind": kind},
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
