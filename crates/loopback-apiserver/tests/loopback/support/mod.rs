//! What several test modules share: kubectl against the double, and an upstream for the
//! service proxy.

pub(crate) mod kubectl;
pub(crate) mod upstream;

/// A `kube::Client` with the double's administrator credentials, from its kubeconfig (what
/// `LoopbackApiServer::admin_client` gives with the `kube` feature, which these tests do not
/// need).
pub(crate) async fn admin_client(server: &loopback_apiserver::LoopbackApiServer) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}
