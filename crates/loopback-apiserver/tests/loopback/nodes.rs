//! Nodes: cluster-scoped objects with a `status` subresource (the Node registry's strategies:
//! an update of the Node keeps its status, an update of `nodes/status` keeps the rest), read
//! with `kube::Api<Node>`, watched, and printed by kubectl.

use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;

use crate::support::kubectl::{kubectl, stdout, write};

fn node(name: &str, ip: &str) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {
                "kubeletVersion": "v1.32.0", "architecture": "amd64", "bootID": "",
                "containerRuntimeVersion": "", "kernelVersion": "", "kubeProxyVersion": "",
                "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": "",
            },
        },
    }))
    .unwrap()
}

fn addresses(node: &Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .map(|a| a.iter().map(|a| a.address.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn nodes_are_stored_with_their_status_subresource() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let nodes: Api<Node> = Api::all(crate::support::admin_client(&server).await);
    let listed = nodes.list(&Default::default()).await.unwrap();
    assert!(listed.items.is_empty());
    let mut watch = nodes
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &listed.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();

    // Created with its status, as a kubelet registers.
    let created = nodes
        .create(&PostParams::default(), &node("worker-1", "10.0.0.5"))
        .await
        .unwrap();
    assert_eq!(addresses(&created), ["10.0.0.5"]);
    let event = watch.next().await;
    assert!(
        matches!(&event, Some(Ok(WatchEvent::Added(n))) if n.metadata.name.as_deref() == Some("worker-1")),
        "{event:?}"
    );

    // An update of the Node changes its spec, not its status.
    let mut changed = created.clone();
    changed.spec.as_mut().unwrap().unschedulable = Some(true);
    changed.status = Some(node("worker-1", "10.9.9.9").status.unwrap());
    let updated = nodes
        .replace("worker-1", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.spec.as_ref().unwrap().unschedulable, Some(true));
    assert_eq!(addresses(&updated), ["10.0.0.5"]);

    // An update of nodes/status changes its status, not its spec.
    let patch = json!({
        "spec": {"unschedulable": false},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.6"}]},
    });
    let patched = nodes
        .patch_status("worker-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(addresses(&patched), ["10.0.0.6"]);
    assert_eq!(patched.spec.as_ref().unwrap().unschedulable, Some(true));
    assert_eq!(
        nodes
            .get("worker-1")
            .await
            .unwrap()
            .metadata
            .resource_version,
        patched.metadata.resource_version
    );

    // Names are DNS subdomains.
    let err = nodes
        .create(&PostParams::default(), &node("Worker_1", "10.0.0.7"))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 422));

    // kubectl's table: NAME STATUS ROLES AGE VERSION.
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let out = kubectl(&kc, &["get", "nodes"]).await;
    let lines: Vec<Vec<String>> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert_eq!(lines[1][0], "worker-1");
    assert_eq!(lines[1][1], "Ready,SchedulingDisabled");
    assert_eq!(lines[1][2], "worker");
    assert_eq!(lines[1][4], "v1.32.0");

    nodes
        .delete("worker-1", &DeleteParams::default())
        .await
        .unwrap();
    assert!(nodes.get_opt("worker-1").await.unwrap().is_none());
}
