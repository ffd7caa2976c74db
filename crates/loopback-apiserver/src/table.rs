//! `meta.k8s.io/v1` `Table` output, as kubectl asks for it through `Accept`.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::ids;
use super::store::Resource;

/// Whether the `Accept` header asks for a `meta.k8s.io/v1` Table.
pub(crate) fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"as=Table")
            && params.contains(&"v=v1")
            && params.contains(&"g=meta.k8s.io")
    })
}

/// kubectl's CONDITION cell: `Denied`, else `Approved`, else `Pending`; then `,Failed` and
/// `,Issued` (kube-apiserver's `extractCSRStatus`).
fn csr_condition(csr: &Value) -> String {
    let conditions = csr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has = |t: &str| {
        conditions
            .iter()
            .any(|c| c.get("type").and_then(Value::as_str) == Some(t))
    };
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    let issued = csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    if issued {
        status.push_str(",Issued");
    }
    status
}

/// kubectl's PORTS cell of an EndpointSlice: the port numbers, comma-separated, `<unset>` when
/// there are none.
fn slice_ports(slice: &Value) -> String {
    let ports: Vec<String> = slice
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.get("port").and_then(Value::as_u64))
        .map(|p| p.to_string())
        .collect();
    if ports.is_empty() {
        "<unset>".to_owned()
    } else {
        ports.join(",")
    }
}

/// kubectl's ENDPOINTS cell of an EndpointSlice: the first three addresses, then `+ N more...`;
/// `<unset>` when there are none.
fn slice_endpoints(slice: &Value) -> String {
    const SHOWN: usize = 3;
    let addresses: Vec<&str> = slice
        .get("endpoints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.get("addresses").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if addresses.is_empty() {
        return "<unset>".to_owned();
    }
    let mut cell = addresses
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(",");
    if addresses.len() > SHOWN {
        cell.push_str(&format!(
            " + {} more...",
            addresses.len().saturating_sub(SHOWN)
        ));
    }
    cell
}

/// A Node's STATUS column, as kubectl prints it: its `Ready` condition (`Ready`, `NotReady`,
/// `Unknown` when it has none), then `SchedulingDisabled` when it is cordoned.
fn node_status(node: &Value) -> String {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .and_then(|c| c.get("status").and_then(Value::as_str));
    let mut status = match ready {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
    .to_owned();
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// A Node's ROLES column: the `node-role.kubernetes.io/<role>` labels' roles, sorted and
/// comma-separated, or `<none>`.
fn node_roles(node: &Value) -> String {
    let mut roles: Vec<&str> = node
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.join(",")
    }
}

fn column(name: &str, kind: &str, format: &str, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": 0})
}

/// The Table for `objects` (`rv` for lists).
pub(crate) fn table(
    resource: Resource,
    objects: &[Value],
    rv: Option<u64>,
    now: SystemTime,
) -> Value {
    let name_col = column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
    );
    let age_col = column(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    let columns = match resource {
        Resource::Secrets => vec![
            name_col,
            column("Type", "string", "", "The type of the secret"),
            column("Data", "string", "", "The number of entries in the data"),
            age_col,
        ],
        Resource::ConfigMaps => vec![
            name_col,
            column("Data", "string", "", "The number of entries in the data"),
            age_col,
        ],
        Resource::Namespaces => vec![
            name_col,
            column("Status", "string", "", "The status of the namespace"),
            age_col,
        ],
        Resource::Nodes => vec![
            name_col,
            column("Status", "string", "", "The status of the node"),
            column("Roles", "string", "", "The roles of the node"),
            age_col,
            column(
                "Version",
                "string",
                "",
                "Kubelet Version reported by the node.",
            ),
        ],
        Resource::Services => vec![
            name_col,
            column("Type", "string", "", "The type of the service"),
            age_col,
        ],
        Resource::Leases => vec![
            name_col,
            column("Holder", "string", "", "The holder of the lease"),
            age_col,
        ],
        Resource::EndpointSlices => vec![
            name_col,
            column(
                "AddressType",
                "string",
                "",
                "addressType specifies the type of address carried by this EndpointSlice.",
            ),
            column(
                "Ports",
                "string",
                "",
                "ports specifies the list of network ports exposed by each endpoint in this slice.",
            ),
            column(
                "Endpoints",
                "string",
                "",
                "endpoints is a list of unique endpoints in this slice.",
            ),
            age_col,
        ],
        Resource::ServiceAccounts => vec![
            name_col,
            column(
                "Secrets",
                "string",
                "",
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            age_col,
        ],
        Resource::Roles | Resource::ClusterRoles => vec![
            name_col,
            column(
                "Created At",
                "string",
                "date",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
            ),
        ],
        Resource::RoleBindings | Resource::ClusterRoleBindings => vec![
            name_col,
            column(
                "Role",
                "string",
                "",
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
            ),
            age_col,
        ],
        Resource::CertificateSigningRequests => vec![
            name_col,
            age_col,
            column(
                "SignerName",
                "string",
                "",
                "signerName indicates the requested signer, and is a qualified name.",
            ),
            column(
                "Requestor",
                "string",
                "",
                "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block.",
            ),
            column(
                "RequestedDuration",
                "string",
                "",
                "expirationSeconds is the requested duration of validity of the issued certificate.",
            ),
            column(
                "Condition",
                "string",
                "",
                "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".",
            ),
        ],
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let s = |p: &str| {
                o.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let count = |p: &str| {
                o.pointer(p)
                    .and_then(Value::as_object)
                    .map_or(0, serde_json::Map::len)
            };
            let age = ids::age(&s("/metadata/creationTimestamp"), now).map_or_else(
                || "<unknown>".to_owned(),
                bootstrap_token::short_human_duration,
            );
            let name = s("/metadata/name");
            let cells = match resource {
                Resource::Secrets => json!([name, s("/type"), count("/data"), age]),
                Resource::ConfigMaps => json!([
                    name,
                    count("/data").saturating_add(count("/binaryData")),
                    age
                ]),
                Resource::Namespaces => json!([name, s("/status/phase"), age]),
                Resource::Nodes => json!([
                    name,
                    node_status(o),
                    node_roles(o),
                    age,
                    Some(s("/status/nodeInfo/kubeletVersion"))
                        .filter(|v| !v.is_empty())
                        .unwrap_or_else(|| "<none>".to_owned())
                ]),
                Resource::Services => json!([name, s("/spec/type"), age]),
                Resource::Leases => json!([name, s("/spec/holderIdentity"), age]),
                Resource::EndpointSlices => json!([
                    name,
                    s("/addressType"),
                    slice_ports(o),
                    slice_endpoints(o),
                    age
                ]),
                Resource::ServiceAccounts => json!([
                    name,
                    o.get("secrets")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len),
                    age
                ]),
                Resource::Roles | Resource::ClusterRoles => {
                    json!([name, s("/metadata/creationTimestamp")])
                }
                Resource::RoleBindings | Resource::ClusterRoleBindings => json!([
                    name,
                    format!("{}/{}", s("/roleRef/kind"), s("/roleRef/name")),
                    age
                ]),
                Resource::CertificateSigningRequests => {
                    let signer = Some(s("/spec/signerName"))
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| "<none>".to_owned());
                    let duration = o
                        .pointer("/spec/expirationSeconds")
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<none>".to_owned(), ids::human_duration);
                    json!([
                        name,
                        age,
                        signer,
                        s("/spec/username"),
                        duration,
                        csr_condition(o)
                    ])
                }
            };
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.get("metadata").cloned().unwrap_or(Value::Null),
                },
            })
        })
        .collect();
    let mut meta = json!({});
    if let (Some(rv), Some(m)) = (rv, meta.as_object_mut()) {
        m.insert("resourceVersion".to_owned(), Value::String(rv.to_string()));
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}
