//! A kube-rs program as a user writes it: the five crates next to kube (client and runtime),
//! k8s-openapi, hyper, tokio and rand at their newest releases. CI builds this crate with a
//! fresh resolution every run and runs it; every check below must hold.

use std::collections::BTreeMap;
use std::error::Error;
use std::time::SystemTime;

use addon_jwt::{Algorithm, Audience, Issuer, KeySet, Minter, Sidecar, SigningKey, Validation};
use bootstrap_token::{AuthOutcome, BootstrapToken, KubeadmToken, SecretObject, authenticate};
use clusterinfo::{CaBundle, ClusterInfo, ClusterInfoConfigMap};
use exec_credential::{ApiVersion, Cluster, CredentialState, ExecAuthenticator, ExecConfig};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::runtime::watcher;
use rand::{Rng, SeedableRng};

type BoxError = Box<dyn Error + Send + Sync>;

/// A CA certificate (EC P-256), as kubeadm's `ca.crt`.
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBgTCCASegAwIBAgIUFZsgJIU2194Esmjw+CUZfKyTxgAwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKa3ViZXJuZXRlczAgFw0yNjExMjMxODA4MjJaGA8yMTI2MTAz
MDE4MDgyMlowFTETMBEGA1UEAwwKa3ViZXJuZXRlczBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABAcU0x+VvsTLTSlRz3egKhlWyKRAV+biz4NZ6SvV5o6jDZMgQ8wv
pmrROuIY0YnknK2XImZA2LWECHyZa53yk76jUzBRMB0GA1UdDgQWBBQ+1vr0qlIZ
l2xMYqlxss+ZFkSL2DAfBgNVHSMEGDAWgBQ+1vr0qlIZl2xMYqlxss+ZFkSL2DAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIFZV51ObY9V9mTF9CTs9
dnp8d56+qYsjKXW5BUM/eYjiAiEA6lM2OSRYv6GXN935w8552aFF++ZQ2QWn4XZp
9Q72uvQ=
-----END CERTIFICATE-----
";

/// The cluster-info kubeconfig exactly as kubeadm publishes it (CA placeholder filled in).
const KUBEADM_CLUSTER_INFO: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: CA
    server: https://10.0.0.1:6443
  name: \"\"
contexts: null
current-context: \"\"
kind: Config
preferences: {}
users: null
";

/// A kubeconfig user as `kubectl config view -o json` writes it: Go's nil slices are `null`.
const KUBECTL_EXEC_USER: &str = r#"{
    "name": "eks",
    "user": {
        "exec": {
            "command": "aws",
            "args": null,
            "env": null,
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "provideClusterInfo": false,
            "interactiveMode": "IfAvailable"
        }
    }
}"#;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    #[allow(clippy::disallowed_methods)]
    let now = SystemTime::now();
    bootstrap_token_with_k8s_openapi(now)?;
    clusterinfo_with_k8s_openapi(now)?;
    exec_credential_from_kubectl(now)?;
    addon_jwt_with_hyper_types(now)?;
    kube_types_fit()?;
    println!("downstream: 5 passed, 0 failed");
    Ok(())
}

/// A `k8s_openapi` Secret, authenticated by the bootstrap-token authenticator.
fn bootstrap_token_with_k8s_openapi(now: SystemTime) -> Result<(), BoxError> {
    // OS randomness, and a seeded generator of the newest rand through the byte closure.
    let token = BootstrapToken::generate()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let seeded = BootstrapToken::generate_with(|buf| rng.fill_bytes(buf))?;
    assert_ne!(token, seeded);

    let ours = KubeadmToken::new(Some(token.clone()))
        .with_defaults()
        .to_secret_object(now)?;
    let secret: Secret = Secret::from(&ours);
    assert_eq!(secret.type_.as_deref(), Some("bootstrap.kubernetes.io/token"));
    let back = SecretObject::try_from(&secret)?;
    let outcome = authenticate(&token.to_string(), now, |id| {
        Ok::<_, std::convert::Infallible>((back.name() == id.secret_name()).then_some(&back))
    })?;
    let AuthOutcome::Authenticated(user) = outcome else {
        return Err("token not authenticated".into());
    };
    assert_eq!(user.user_name(), format!("system:bootstrap:{}", token.id()));
    Ok(())
}

/// kubeadm's cluster-info kubeconfig, signed into a `k8s_openapi` ConfigMap; RBAC as typed
/// objects.
fn clusterinfo_with_k8s_openapi(now: SystemTime) -> Result<(), BoxError> {
    use base64::Engine as _;
    let ca_b64 = base64::engine::general_purpose::STANDARD.encode(CA_PEM);
    let kubeconfig = KUBEADM_CLUSTER_INFO.replace("CA", &ca_b64);
    let info = ClusterInfo::parse(kubeconfig.as_bytes())?;
    assert_eq!(info.server(), "https://10.0.0.1:6443");
    assert_eq!(
        info,
        ClusterInfo::new("https://10.0.0.1:6443", CaBundle::from_pem(CA_PEM.as_bytes())?)?
    );

    let token = BootstrapToken::generate()?;
    let secret = KubeadmToken::new(Some(token.clone()))
        .with_defaults()
        .to_secret_object(now)?;
    let mut cm = ClusterInfoConfigMap::new(kubeconfig);
    let signed = clusterinfo::reconcile(cm.data(), [&secret], now);
    cm.set_data(signed.into_data());
    let typed = ConfigMap::from(&cm);
    let read = ClusterInfoConfigMap::try_from(&typed)?;
    assert_eq!(read.verify(&token)?, cm.kubeconfig().unwrap_or_default());

    let role = Role::try_from(&clusterinfo::cluster_info_role())?;
    let binding = RoleBinding::try_from(&clusterinfo::cluster_info_role_binding())?;
    assert_eq!(role.metadata.namespace.as_deref(), Some("kube-public"));
    assert_eq!(binding.role_ref.kind, "Role");
    Ok(())
}

/// A kubectl-written exec stanza (null args and env) drives the sans-IO authenticator.
fn exec_credential_from_kubectl(now: SystemTime) -> Result<(), BoxError> {
    #[derive(serde::Deserialize)]
    struct NamedUser {
        user: User,
    }
    #[derive(serde::Deserialize)]
    struct User {
        exec: ExecConfig,
    }
    let named: NamedUser = serde_json::from_str(KUBECTL_EXEC_USER)?;
    let mut exec = named.user.exec;
    exec.apply_defaults();
    exec.validate("eks")?;
    assert_eq!(exec.api_version, ApiVersion::V1Beta1.as_str());
    let mut auth = ExecAuthenticator::new(exec, Cluster::new("https://10.0.0.1:6443"))?;
    assert!(matches!(auth.credential(now)?, CredentialState::Pending(_)));
    Ok(())
}

/// An add-on identity token checked by the sidecar decision on an `http::HeaderMap` (hyper's
/// types).
fn addon_jwt_with_hyper_types(now: SystemTime) -> Result<(), BoxError> {
    let private_pem = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
    let key = SigningKey::from_pkcs8_pem(private_pem)?;
    let keys = KeySet::from_pem(&key.public_key_pem()?, Algorithm::EdDsa)?;
    let issuer = Issuer::new("https://kubernetes.default.svc");
    let audience = Audience::new("kube-system/dashboard");
    let mut minter = Minter::new(key, issuer.clone());
    let token = minter.mint("jane", &audience, now)?;
    // One sidecar shared by every connection task (`&self` decisions, no global lock).
    let sidecar = std::sync::Arc::new(Sidecar::new(keys, Validation::new(issuer, audience)));

    let mut request = hyper::Request::new(());
    let headers = request.headers_mut();
    headers.insert(
        hyper::header::AUTHORIZATION,
        format!("Bearer {}", token.expose_secret()).parse()?,
    );
    headers.insert("x-authenticated-user", "admin".parse()?);
    let user = sidecar.decide_header_map(request.headers_mut(), now)?;
    assert_eq!(&*user, "jane");
    assert_eq!(
        request.headers().get("x-authenticated-user").map(|v| v.as_bytes()),
        Some(&b"jane"[..])
    );
    assert!(request.headers().get(hyper::header::AUTHORIZATION).is_none());
    Ok(())
}

/// The types our crates produce are the ones kube's `Api` and runtime take (compile-time
/// proof; nothing is sent: there is no cluster here).
fn kube_types_fit() -> Result<(), BoxError> {
    fn api_of<K>(_: Option<Api<K>>) {}
    api_of::<Secret>(None);
    api_of::<ConfigMap>(None);
    let _config = watcher::Config::default().fields("type=bootstrap.kubernetes.io/token");
    let _labels: BTreeMap<String, String> = BTreeMap::new();
    Ok(())
}
