//! The objects a control plane creates, compared with what the real `kubectl create ...
//! --dry-run=client -o json` produces for the same object (where kubectl can produce it
//! without a cluster: RoleBinding, ClusterRoleBinding, ConfigMap).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::process::Command;

use serde_json::Value;

fn kubectl(args: &[&str]) -> Value {
    let out = Command::new("kubectl")
        .args(args)
        .args(["--dry-run=client", "-o", "json"])
        .output()
        .expect("kubectl must be installed: the interop test runs the real client");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Client-side dry runs carry `creationTimestamp: null`; the API server fills it in.
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("creationTimestamp");
    }
    v
}

fn ours(json: &str) -> Value {
    serde_json::from_str(json).unwrap()
}

#[test]
fn cluster_info_role_binding_matches_kubectl() {
    let expected = kubectl(&[
        "create",
        "rolebinding",
        "kubeadm:bootstrap-signer-clusterinfo",
        "-n",
        "kube-public",
        "--role=kubeadm:bootstrap-signer-clusterinfo",
        "--user=system:anonymous",
    ]);
    assert_eq!(
        ours(&clusterinfo::cluster_info_role_binding().to_json()),
        expected
    );
}

#[test]
fn node_bootstrap_cluster_role_bindings_match_kubectl() {
    let (_, bindings) = clusterinfo::node_bootstrap_objects(clusterinfo::DEFAULT_NODE_TOKEN_GROUP);
    let expected = [
        (
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            "--group=system:bootstrappers:kubeadm:default-node-token",
        ),
        (
            "kubeadm:get-nodes",
            "kubeadm:get-nodes",
            "--group=system:bootstrappers:kubeadm:default-node-token",
        ),
        (
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            "--group=system:bootstrappers:kubeadm:default-node-token",
        ),
        (
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "--group=system:nodes",
        ),
    ];
    assert_eq!(bindings.len(), expected.len());
    for (binding, (name, role, subject)) in bindings.iter().zip(expected) {
        let want = kubectl(&[
            "create",
            "clusterrolebinding",
            name,
            &format!("--clusterrole={role}"),
            subject,
        ]);
        assert_eq!(ours(&binding.to_json()), want, "{name}");
    }
}

#[test]
fn cluster_info_configmap_matches_kubectl() {
    let kubeconfig = "apiVersion: v1\nclusters: []\n";
    let expected = kubectl(&[
        "create",
        "configmap",
        "cluster-info",
        "-n",
        "kube-public",
        &format!("--from-literal=kubeconfig={kubeconfig}"),
    ]);
    assert_eq!(
        ours(&clusterinfo::ClusterInfoConfigMap::new(kubeconfig).to_json()),
        expected
    );
}

#[test]
fn roles_have_kubeadms_rules() {
    // `kubectl create role` needs a server for resource discovery, so the rules are pinned here.
    let role = ours(&clusterinfo::cluster_info_role().to_json());
    assert_eq!(
        role,
        serde_json::json!({
            "kind": "Role",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"]}]
        })
    );
    let (roles, _) = clusterinfo::node_bootstrap_objects(clusterinfo::DEFAULT_NODE_TOKEN_GROUP);
    assert_eq!(
        ours(&roles[0].to_json()),
        serde_json::json!({
            "kind": "ClusterRole",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "kubeadm:get-nodes"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]
        })
    );
    let yaml = clusterinfo::cluster_info_role().to_yaml();
    assert!(yaml.starts_with("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: kubeadm:bootstrap-signer-clusterinfo\n"), "{yaml}");
}
