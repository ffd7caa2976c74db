//! The installed `kubectl` against the loopback API server's delegated authentication and
//! authorization: ServiceAccounts and `kubectl create token`, TokenReviews of those tokens,
//! the RBAC objects (`kubectl create role/clusterrole/rolebinding/clusterrolebinding`,
//! `kubectl apply`), `kubectl auth can-i` (also `--as`, `--list`), escalation prevention,
//! impersonation and the OIDC discovery documents.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};

use crate::support::admin_client;
use crate::support::kubectl::{kubectl, kubectl_with_input, stderr, stdout, write};

/// A kubeconfig like the admin's whose user authenticates with `token`.
fn token_kubeconfig(server: &LoopbackApiServer, dir: &Path, name: &str, token: &str) -> PathBuf {
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), token);
    write(dir, name, &yaml)
}

/// POSTs `body` to `path` as the admin; the answer's status code and JSON body.
async fn post(client: &kube::Client, path: &str, body: &[u8]) -> Result<Value, u16> {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .unwrap();
    match client.request::<Value>(req).await {
        Ok(v) => Ok(v),
        Err(kube::Error::Api(s)) => Err(s.code),
        Err(other) => panic!("{other:?}"),
    }
}

/// A TokenReview of `token` for `audiences` (none: the API server's).
async fn review(client: &kube::Client, token: &str, audiences: &[&str]) -> Value {
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec});
    post(
        client,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        body.to_string().as_bytes(),
    )
    .await
    .unwrap()["status"]
        .clone()
}

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_token_and_token_reviews() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let client = admin_client(&server).await;

    let out = kubectl(&kc, &["create", "serviceaccount", "robot", "-n", "default"]).await;
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "serviceaccount/robot created");
    let out = kubectl(&kc, &["get", "serviceaccounts", "-n", "default"]).await;
    assert!(out.status.success());
    assert!(
        stdout(&out).lines().any(|l| l.starts_with("robot")),
        "{}",
        stdout(&out)
    );
    let uid = server
        .object("default", "serviceaccounts", "robot")
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();

    // Audiences and a duration.
    let out = kubectl(
        &kc,
        &[
            "create",
            "token",
            "robot",
            "-n",
            "default",
            "--audience",
            "addon-a",
            "--audience",
            "addon-b",
            "--duration",
            "20m",
        ],
    )
    .await;
    assert!(out.status.success());
    let token = stdout(&out).trim().to_owned();
    let c = claims(&token);
    assert_eq!(c["iss"], server.service_account_issuer());
    assert_eq!(c["sub"], "system:serviceaccount:default:robot");
    assert_eq!(c["aud"], json!(["addon-a", "addon-b"]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        1200
    );
    assert_eq!(c["nbf"], c["iat"]);
    assert!(!c["jti"].as_str().unwrap().is_empty());
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": "default", "serviceaccount": {"name": "robot", "uid": uid}})
    );

    let status = review(&client, &token, &["addon-b"]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(
        status["user"]["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={}", c["jti"].as_str().unwrap())])
    );
    assert_eq!(status["audiences"], json!(["addon-b"]));

    // Another audience, and the API server's own (the default), are refused.
    let status = review(&client, &token, &["addon-c"]).await;
    assert_eq!(status["authenticated"], Value::Null, "{status}");
    assert_eq!(
        status["error"],
        r#"token audiences ["addon-a" "addon-b"] is invalid for the target audiences ["addon-c"]"#
    );
    let status = review(&client, &token, &[]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    // Nor does the token authenticate requests to the API server.
    let robot_addon = token_kubeconfig(&server, dir.path(), "robot-addon.yaml", &token);
    let out = kubectl(&robot_addon, &["auth", "whoami"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));

    // Without --audience: the API server's audience; kubectl authenticates with it.
    let out = kubectl(&kc, &["create", "token", "robot", "-n", "default"]).await;
    assert!(out.status.success());
    let api_token = stdout(&out).trim().to_owned();
    let c = claims(&api_token);
    assert_eq!(c["aud"], json!([server.service_account_issuer()]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600
    );
    let robot = token_kubeconfig(&server, dir.path(), "robot.yaml", &api_token);
    let out = kubectl(&robot, &["auth", "whoami", "-o", "json"]).await;
    assert!(out.status.success());
    let whoami: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        whoami["status"]["userInfo"]["username"],
        "system:serviceaccount:default:robot"
    );
    let status = review(&client, &api_token, &[]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["audiences"],
        json!([server.service_account_issuer()])
    );

    // Shorter than ten minutes: refused as kube-apiserver refuses it.
    let out = kubectl(
        &kc,
        &[
            "create",
            "token",
            "robot",
            "-n",
            "default",
            "--duration",
            "5m",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
        ),
        "{}",
        stderr(&out)
    );
    // A ServiceAccount that does not exist.
    let out = kubectl(&kc, &["create", "token", "nobody", "-n", "default"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("serviceaccounts \"nobody\" not found"),
        "{}",
        stderr(&out)
    );

    // After expiry (20 minutes, and the minute of leeway kube-apiserver allows).
    server.advance_clock(Duration::from_secs(20 * 60 + 90));
    let status = review(&client, &token, &["addon-a"]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    assert_eq!(status["error"], "service account token has expired");
    // The hour-long one is still valid.
    assert_eq!(
        review(&client, &api_token, &[]).await["authenticated"],
        true
    );

    // Once the ServiceAccount is deleted; and when one of the same name comes back (new UID).
    let out = kubectl(&kc, &["delete", "serviceaccount", "robot", "-n", "default"]).await;
    assert!(out.status.success());
    let status = review(&client, &api_token, &[]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    assert_eq!(status["error"], "serviceaccounts \"robot\" not found");
    let out = kubectl(&robot, &["auth", "whoami"]).await;
    assert!(!out.status.success());
    let out = kubectl(&kc, &["create", "serviceaccount", "robot", "-n", "default"]).await;
    assert!(out.status.success());
    let status = review(&client, &api_token, &[]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .starts_with("service account UID ("),
        "{status}"
    );

    // Static and bootstrap tokens are for the API server's audience only.
    server.add_static_token("static-token", "jane", &["dev"]);
    let status = review(&client, "static-token", &[]).await;
    assert_eq!(status["user"]["username"], "jane");
    assert_eq!(
        status["user"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert_eq!(
        status["audiences"],
        json!([server.service_account_issuer()])
    );
    assert!(review(&client, "static-token", &["addon-a"]).await["authenticated"].is_null());
    // A token no authenticator knows: not authenticated, no error.
    let status = review(&client, "abcdef.0123456789abcdef", &[]).await;
    assert_eq!(status, json!({"user": {}}));
}

/// A double started from `builder`, with the ServiceAccount `robot` created by kubectl as the
/// administrator: the double, the directory holding the admin kubeconfig, its path, and an admin
/// client. The directory must outlive the kubeconfig's use.
async fn with_robot(
    builder: loopback_apiserver::Builder,
) -> (LoopbackApiServer, tempfile::TempDir, PathBuf, kube::Client) {
    let server = builder.start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let client = admin_client(&server).await;
    assert!(
        kubectl(&kc, &["create", "sa", "robot"])
            .await
            .status
            .success()
    );
    (server, dir, kc, client)
}

/// `kubectl create token robot` with `args`: the token.
async fn robot_token(kc: &Path, args: &[&str]) -> String {
    let out = kubectl(kc, &[&["create", "token", "robot"][..], args].concat()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// The service-account issuer's discovery document and key set, as `kubectl get --raw` reads
/// them.
async fn oidc_documents(kc: &Path) -> (String, String) {
    let mut documents = Vec::new();
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        let out = kubectl(kc, &["get", "--raw", path]).await;
        assert!(out.status.success(), "{path}: {}", stderr(&out));
        documents.push(stdout(&out));
    }
    let jwks = documents.pop().unwrap();
    (documents.pop().unwrap(), jwks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_request_limits_and_oidc_discovery() {
    let (server, dir, kc, client) = with_robot(
        LoopbackApiServer::builder()
            .service_account_max_token_expiration(Duration::from_secs(7200)),
    )
    .await;
    let token = robot_token(&kc, &["--duration", "24h"]).await;
    let c = claims(&token);
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );

    // The OIDC discovery documents, and the token verified offline with them.
    let (config, jwks) = oidc_documents(&kc).await;
    let config: Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["issuer"], server.service_account_issuer());
    assert_eq!(
        config["jwks_uri"],
        format!("{}/openid/v1/jwks", server.service_account_issuer())
    );
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let keys = addon_jwt::KeySet::from_jwks(&jwks).unwrap();
    let issuer = addon_jwt::Issuer::new(server.service_account_issuer());
    let verifier = addon_jwt::ServiceAccountVerifier::new(keys, &[issuer], &[]);
    let verified = verifier
        .verify(
            &token,
            std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(c["iat"].as_u64().unwrap()),
        )
        .unwrap();
    assert_eq!(verified.user_name(), "system:serviceaccount:default:robot");
    // Service accounts may read them (system:service-account-issuer-discovery); other users
    // may not.
    let robot = token_kubeconfig(&server, dir.path(), "robot.yaml", &token);
    let out = kubectl(&robot, &["get", "--raw", "/openid/v1/jwks"]).await;
    assert!(out.status.success());
    server.add_static_token("jane-token", "jane", &[]);
    let jane = token_kubeconfig(&server, dir.path(), "jane.yaml", "jane-token");
    let out = kubectl(
        &jane,
        &["get", "--raw", "/.well-known/openid-configuration"],
    )
    .await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Forbidden"), "{}", stderr(&out));

    // Enormous review bodies are refused before they are read whole; enormous tokens
    // authenticate no one.
    // Just over the 3 MiB every request body is bounded by (the answer comes once the bound is
    // passed; a much larger body would still be on its way when the server closes).
    let big = vec![b' '; 3 * 1024 * 1024 + 16];
    assert_eq!(
        post(&client, "/apis/authentication.k8s.io/v1/tokenreviews", &big).await,
        Err(413)
    );
    assert_eq!(
        post(
            &client,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &big
        )
        .await,
        Err(413)
    );
    let huge_token = "a".repeat(1024 * 1024);
    let status = review(&client, &huge_token, &[]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    let forged = format!(
        "{}.{}.AAAA",
        token.split('.').next().unwrap(),
        token.split('.').nth(1).unwrap()
    );
    assert!(review(&client, &forged, &[]).await["authenticated"].is_null());
    // A review without a token, or with neither attribute kind: 400 and 422.
    let empty =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}});
    assert_eq!(
        post(
            &client,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            empty.to_string().as_bytes()
        )
        .await,
        Err(400)
    );
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "x"}});
    assert_eq!(
        post(
            &client,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            sar.to_string().as_bytes()
        )
        .await,
        Err(422)
    );
    let _ = kubectl_with_input;
}

const MANIFEST: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: config-reader
  namespace: team
rules:
- apiGroups: [\"\"]
  resources: [\"configmaps\"]
  verbs: [\"get\", \"list\", \"watch\"]
- apiGroups: [\"\"]
  resources: [\"secrets\"]
  resourceNames: [\"app-secret\"]
  verbs: [\"get\"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-reads-config
  namespace: team
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: config-reader
subjects:
- kind: ServiceAccount
  name: robot
  namespace: team
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: health-reader
rules:
- nonResourceURLs: [\"/metrics\", \"/debug/*\"]
  verbs: [\"get\"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: robot-reads-health
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: health-reader
subjects:
- kind: ServiceAccount
  name: robot
  namespace: team
";

/// `(as, verb, resource or URL, namespace, expected)`: `as` empty for the admin.
const CAN_I: &[(&str, &str, &str, &str, bool)] = &[
    ("", "delete", "secrets", "kube-system", true),
    ("", "get", "/anything", "", true),
    (
        "system:serviceaccount:team:robot",
        "get",
        "configmaps",
        "team",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "watch",
        "configmaps",
        "team",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "create",
        "configmaps",
        "team",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "configmaps",
        "default",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "secrets/app-secret",
        "team",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "secrets/other",
        "team",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "list",
        "secrets",
        "team",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "/metrics",
        "",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "/debug/pprof",
        "",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "/metrics/extra",
        "",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "post",
        "/metrics",
        "",
        false,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "/version",
        "",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "get",
        "/openid/v1/jwks",
        "",
        true,
    ),
    (
        "system:serviceaccount:team:robot",
        "create",
        "certificatesigningrequests",
        "",
        false,
    ),
    (
        "system:serviceaccount:team:other",
        "get",
        "configmaps",
        "team",
        false,
    ),
    ("jane", "get", "services", "team", true),
    ("jane", "delete", "services", "team", false),
    ("jane", "get", "services", "default", false),
    ("jane", "get", "certificatesigningrequests", "", true),
    ("jane", "list", "certificatesigningrequests", "", false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_rbac_objects_and_can_i() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    assert!(
        kubectl(&kc, &["create", "namespace", "team"])
            .await
            .status
            .success()
    );
    assert!(
        kubectl(&kc, &["create", "sa", "robot", "-n", "team"])
            .await
            .status
            .success()
    );

    // kubectl create role/clusterrole/rolebinding/clusterrolebinding.
    let out = kubectl(
        &kc,
        &[
            "create",
            "role",
            "svc-reader",
            "-n",
            "team",
            "--verb=get",
            "--resource=services",
        ],
    )
    .await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        "role.rbac.authorization.k8s.io/svc-reader created"
    );
    let out = kubectl(
        &kc,
        &[
            "create",
            "rolebinding",
            "jane-reads-svc",
            "-n",
            "team",
            "--role=svc-reader",
            "--user=jane",
        ],
    )
    .await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        "rolebinding.rbac.authorization.k8s.io/jane-reads-svc created"
    );
    let out = kubectl(
        &kc,
        &[
            "create",
            "clusterrole",
            "csr-getter",
            "--verb=get",
            "--resource=certificatesigningrequests",
        ],
    )
    .await;
    assert!(out.status.success());
    let out = kubectl(
        &kc,
        &[
            "create",
            "clusterrolebinding",
            "jane-gets-csrs",
            "--clusterrole=csr-getter",
            "--user=jane",
        ],
    )
    .await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        "clusterrolebinding.rbac.authorization.k8s.io/jane-gets-csrs created"
    );

    // kubectl apply of RBAC manifests, twice (the second is a patch that changes nothing).
    let manifest = write(dir.path(), "rbac.yaml", MANIFEST);
    for _ in 0..2 {
        let out = kubectl(&kc, &["apply", "-f", manifest.to_str().unwrap()]).await;
        assert!(out.status.success());
    }
    let out = kubectl(&kc, &["get", "roles,rolebindings", "-n", "team"]).await;
    assert!(out.status.success());
    let table = stdout(&out);
    for name in [
        "config-reader",
        "svc-reader",
        "robot-reads-config",
        "jane-reads-svc",
    ] {
        assert!(table.contains(name), "{table}");
    }
    assert!(table.contains("Role/config-reader"), "{table}");
    let out = kubectl(
        &kc,
        &["get", "clusterrolebinding", "cluster-admin", "-o", "json"],
    )
    .await;
    assert!(out.status.success());
    let binding: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(binding["subjects"][0]["name"], "system:masters");

    // delegated-auth's evaluator over the same objects, as kubectl prints them.
    let out = kubectl(
        &kc,
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
    delegated_auth::aggregate_cluster_roles(&mut objects.cluster_roles).unwrap();
    let policy = delegated_auth::Policy::new(&objects);

    // kubectl auth can-i, as the admin and --as others; the core decides the same.
    for (user, verb, what, ns, expected) in CAN_I {
        let info = match *user {
            "" => delegated_auth::UserInfo::new("loopback-admin")
                .with_groups(["system:masters", "system:authenticated"]),
            sa if sa.starts_with("system:serviceaccount:") => {
                let sa_ns = sa.split(':').nth(2).unwrap();
                delegated_auth::UserInfo::new(sa).with_groups([
                    "system:serviceaccounts".to_owned(),
                    format!("system:serviceaccounts:{sa_ns}"),
                    "system:authenticated".to_owned(),
                ])
            }
            name => delegated_auth::UserInfo::new(name).with_groups(["system:authenticated"]),
        };
        let attrs = if what.starts_with('/') {
            delegated_auth::Attributes::non_resource(info, *verb, *what)
        } else {
            let (resource, name) = what.split_once('/').unwrap_or((what, ""));
            let group = if resource == "certificatesigningrequests" {
                "certificates.k8s.io"
            } else {
                ""
            };
            delegated_auth::Attributes::resource(
                info,
                *verb,
                delegated_auth::ResourceAttributes::new(group, "v1", resource)
                    .in_namespace(*ns)
                    .with_name(name),
            )
        };
        assert_eq!(
            policy.authorize(&attrs).is_allowed(),
            *expected,
            "delegated-auth: {user} {verb} {what} {ns}"
        );
        let mut args = vec!["auth", "can-i", *verb, *what];
        if !ns.is_empty() {
            args.extend(["-n", *ns]);
        }
        if !user.is_empty() {
            args.extend(["--as", *user]);
        }
        let out = kubectl(&kc, &args).await;
        let answer = stdout(&out).trim().to_owned();
        assert_eq!(
            answer.starts_with("yes"),
            *expected,
            "{user} {verb} {what} {ns}: {answer} {}",
            stderr(&out)
        );
        assert_eq!(out.status.success(), *expected);
    }

    // --list: the rules a service account holds in its namespace.
    let out = kubectl(
        &kc,
        &[
            "auth",
            "can-i",
            "--list",
            "-n",
            "team",
            "--as",
            "system:serviceaccount:team:robot",
        ],
    )
    .await;
    assert!(out.status.success());
    let list = stdout(&out);
    assert!(list.contains("configmaps"), "{list}");
    assert!(list.contains("[app-secret]"), "{list}");
    assert!(list.contains("/metrics"), "{list}");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );

    // Deleting a binding takes the permission away.
    let out = kubectl(
        &kc,
        &["delete", "rolebinding", "robot-reads-config", "-n", "team"],
    )
    .await;
    assert!(out.status.success());
    let out = kubectl(
        &kc,
        &[
            "auth",
            "can-i",
            "get",
            "configmaps",
            "-n",
            "team",
            "--as",
            "system:serviceaccount:team:robot",
        ],
    )
    .await;
    assert_eq!(stdout(&out).trim(), "no");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalation_is_refused_as_kube_apiserver_refuses_it() {
    let server = LoopbackApiServer::builder()
        .static_token("jane-token", "jane", &["dev"])
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let jane = token_kubeconfig(&server, dir.path(), "jane.yaml", "jane-token");
    // jane may manage Roles and RoleBindings in `default`, and read ConfigMaps there.
    let out = kubectl(
        &kc,
        &[
            "create",
            "role",
            "rbac-manager",
            "--verb=create,get,list,watch,update,patch,delete",
            "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
        ],
    )
    .await;
    assert!(out.status.success());
    let out = kubectl(
        &kc,
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
        ],
    )
    .await;
    assert!(out.status.success());
    for role in ["rbac-manager", "cm-reader"] {
        let out = kubectl(
            &kc,
            &[
                "create",
                "rolebinding",
                &format!("jane-{role}"),
                &format!("--role={role}"),
                "--user=jane",
            ],
        )
        .await;
        assert!(out.status.success());
    }
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrole",
                "secret-reader",
                "--verb=get",
                "--resource=secrets"
            ]
        )
        .await
        .status
        .success()
    );

    // Binding a role whose rules she does not hold: 403, with kube-apiserver's message.
    let out = kubectl(
        &jane,
        &[
            "create",
            "rolebinding",
            "jane-secrets",
            "--clusterrole=secret-reader",
            "--user=jane",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "rolebindings.rbac.authorization.k8s.io \"jane-secrets\" is forbidden: user \"jane\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        ),
        "{}",
        stderr(&out)
    );
    assert!(
        server
            .object("default", "rolebindings", "jane-secrets")
            .is_none()
    );
    // A role with more than she holds, and one with a wildcard.
    let out = kubectl(
        &jane,
        &[
            "create",
            "role",
            "more",
            "--verb=get,delete",
            "--resource=configmaps",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}"),
        "{}",
        stderr(&out)
    );
    let wildcard = write(
        dir.path(),
        "wildcard.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: everything\n  namespace: default\nrules:\n- apiGroups: [\"*\"]\n  resources: [\"*\"]\n  verbs: [\"*\"]\n",
    );
    let out = kubectl(&jane, &["apply", "-f", wildcard.to_str().unwrap()]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is attempting to grant RBAC permissions not currently held"));
    // What she holds she may grant; an empty role grants nothing and is always allowed.
    let out = kubectl(
        &jane,
        &[
            "create",
            "role",
            "same",
            "--verb=get",
            "--resource=configmaps",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let empty = write(
        dir.path(),
        "empty.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: nothing\n  namespace: default\nrules: []\n",
    );
    let out = kubectl(&jane, &["apply", "-f", empty.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(
        &jane,
        &[
            "create",
            "rolebinding",
            "jane-nothing",
            "--role=nothing",
            "--user=jane",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The admin may create the wildcard role; jane may not bind it, then may with `bind`.
    let out = kubectl(&kc, &["apply", "-f", wildcard.to_str().unwrap()]).await;
    assert!(out.status.success());
    let bind = [
        "create",
        "rolebinding",
        "jane-everything",
        "--role=everything",
        "--user=jane",
    ];
    assert!(!kubectl(&jane, &bind).await.status.success());
    let out = kubectl(
        &kc,
        &[
            "create",
            "role",
            "binder",
            "--verb=bind",
            "--resource=roles.rbac.authorization.k8s.io",
            "--resource-name=everything",
        ],
    )
    .await;
    assert!(out.status.success());
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "rolebinding",
                "jane-binder",
                "--role=binder",
                "--user=jane"
            ]
        )
        .await
        .status
        .success()
    );
    let out = kubectl(&jane, &bind).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Now she holds everything in `default`: the secret reader may be bound there too.
    let out = kubectl(
        &jane,
        &[
            "create",
            "rolebinding",
            "jane-secrets",
            "--clusterrole=secret-reader",
            "--user=jane",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // But not at the cluster scope (she has no ClusterRoleBinding rights).
    let out = kubectl(
        &jane,
        &[
            "create",
            "clusterrolebinding",
            "jane-admin",
            "--clusterrole=cluster-admin",
            "--user=jane",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("User \"jane\" cannot create resource \"clusterrolebindings\""),
        "{}",
        stderr(&out)
    );

    // Invalid rules are refused with kube-apiserver's validation.
    let invalid = write(
        dir.path(),
        "invalid.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: invalid\n  namespace: default\nrules:\n- resources: [\"pods\"]\n  verbs: []\n- nonResourceURLs: [\"/metrics\"]\n  verbs: [\"get\"]\n",
    );
    let out = kubectl(&kc, &["apply", "-f", invalid.to_str().unwrap()]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("rules[0].verbs: Required value: verbs must contain at least one value"),
        "{err}"
    );
    assert!(
        err.contains(
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        ),
        "{err}"
    );
    assert!(
        err.contains("rules[1].nonResourceURLs: Invalid value"),
        "{err}"
    );
    // roleRef cannot change.
    let out = kubectl(
        &kc,
        &[
            "patch",
            "rolebinding",
            "jane-nothing",
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"same"}}"#,
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot change roleRef"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_is_authorized_by_the_impersonate_verb() {
    let server = LoopbackApiServer::builder()
        .static_token("jane-token", "jane", &["dev"])
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let jane = token_kubeconfig(&server, dir.path(), "jane.yaml", "jane-token");

    // The admin acts as jane: jane's permissions apply.
    let out = kubectl(&kc, &["get", "secrets", "--as", "jane"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("User \"jane\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""),
        "{}",
        stderr(&out)
    );
    let out = kubectl(
        &kc,
        &[
            "auth",
            "whoami",
            "--as",
            "jane",
            "--as-group",
            "ops",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success());
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "jane");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!(["ops", "system:authenticated"])
    );
    let out = kubectl(
        &kc,
        &[
            "auth",
            "whoami",
            "--as",
            "system:serviceaccount:default:robot",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success());
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );

    // jane may not impersonate anyone...
    let out = kubectl(&jane, &["get", "configmaps", "--as", "bob"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "users \"bob\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        ),
        "{}",
        stderr(&out)
    );
    // ...until she may impersonate bob (and only bob, and not his groups).
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrole",
                "as-bob",
                "--verb=impersonate",
                "--resource=users",
                "--resource-name=bob"
            ]
        )
        .await
        .status
        .success()
    );
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrolebinding",
                "jane-as-bob",
                "--clusterrole=as-bob",
                "--user=jane"
            ]
        )
        .await
        .status
        .success()
    );
    let out = kubectl(&jane, &["auth", "whoami", "--as", "bob"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("bob"));
    let out = kubectl(&jane, &["get", "configmaps", "--as", "alice"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("users \"alice\" is forbidden"),
        "{}",
        stderr(&out)
    );
    let out = kubectl(
        &jane,
        &[
            "get",
            "configmaps",
            "--as",
            "bob",
            "--as-group",
            "system:masters",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("groups \"system:masters\" is forbidden: User \"jane\" cannot impersonate resource \"groups\""),
        "{}",
        stderr(&out)
    );
    // A request impersonating is recorded as the impersonated user.
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("selfsubjectreviews") && r.status == 201)
        .unwrap();
    assert_eq!(last.user.as_deref(), Some("bob"));
}

/// A client authenticating as the user of `kubeconfig`.
async fn client_of(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// POSTs a SelfSubjectReview with `headers`; the status code, content type and body text.
async fn whoami_with(client: &kube::Client, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let resp = client
        .send(req.body(kube::client::Body::from(body.to_vec())).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), 1 << 20)
        .await
        .unwrap();
    (
        status,
        content_type,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

/// Whether the installed kubectl has `--as-user-extra` (newer than 1.32).
async fn kubectl_has_user_extra(kubeconfig: &Path) -> bool {
    stdout(&kubectl(kubeconfig, &["options"]).await).contains("--as-user-extra")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonating_a_uid_and_extras_is_authorized_and_seen() {
    let server = LoopbackApiServer::builder()
        .static_token("jane-token", "jane", &["dev"])
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let jane_kc = token_kubeconfig(&server, dir.path(), "jane.yaml", "jane-token");
    let admin = admin_client(&server).await;
    let jane = client_of(&jane_kc).await;

    // The admin may impersonate anything: the UID and the extras (key percent-decoded) are the
    // impersonated user's.
    let (code, _, body) = whoami_with(
        &admin,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Uid", "uid-42"),
            ("Impersonate-Extra-Example.com%2fScopes", "read"),
            ("Impersonate-Extra-Example.com%2fScopes", "write"),
            ("Impersonate-Extra-Team", "blue"),
        ],
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let who: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        who["status"]["userInfo"],
        json!({
            "username": "bob",
            "uid": "uid-42",
            "groups": ["system:authenticated"],
            "extra": {"example.com/scopes": ["read", "write"], "team": ["blue"]},
        })
    );

    // jane may impersonate bob, but neither a UID nor an extra.
    for (kind, name) in [
        ("clusterrole", "as-bob"),
        ("clusterrolebinding", "jane-as-bob"),
    ] {
        let args: Vec<&str> = if kind == "clusterrole" {
            vec![
                "create",
                kind,
                name,
                "--verb=impersonate",
                "--resource=users",
                "--resource-name=bob",
            ]
        } else {
            vec!["create", kind, name, "--clusterrole=as-bob", "--user=jane"]
        };
        assert!(kubectl(&kc, &args).await.status.success());
    }
    let (code, _, body) = whoami_with(
        &jane,
        &[("Impersonate-User", "bob"), ("Impersonate-Uid", "uid-42")],
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        "uids.authentication.k8s.io \"uid-42\" is forbidden: User \"jane\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    assert_eq!(
        status["details"],
        json!({"name": "uid-42", "group": "authentication.k8s.io", "kind": "uids"})
    );
    let (code, _, body) = whoami_with(
        &jane,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Extra-Example.com%2fScopes", "read"),
        ],
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        "userextras.authentication.k8s.io \"read\" is forbidden: User \"jane\" cannot impersonate resource \"userextras/example.com/scopes\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    // A UID without a user: kube-apiserver's plain-text internal error.
    let (code, content_type, body) = whoami_with(&admin, &[("Impersonate-Uid", "uid-42")]).await;
    assert_eq!(code, 500);
    assert_eq!(content_type, "text/plain; charset=utf-8");
    assert_eq!(
        body,
        "Internal Server Error: \"/apis/authentication.k8s.io/v1/selfsubjectreviews\": requested [{UID  uid-42  authentication.k8s.io/v1  }] without impersonating a user\n"
    );

    // Once granted (the UID by name, the extra key by subresource), both pass.
    let grant = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"as-bob-details"},"rules":[{"apiGroups":["authentication.k8s.io"],"resources":["uids"],"resourceNames":["uid-42"],"verbs":["impersonate"]},{"apiGroups":["authentication.k8s.io"],"resources":["userextras/example.com/scopes"],"verbs":["impersonate"]}]}"#;
    let out = kubectl_with_input(&kc, &["apply", "-f", "-"], Some(grant)).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrolebinding",
                "jane-as-bob-details",
                "--clusterrole=as-bob-details",
                "--user=jane"
            ]
        )
        .await
        .status
        .success()
    );
    let (code, _, body) = whoami_with(
        &jane,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Uid", "uid-42"),
            ("Impersonate-Extra-Example.com%2fScopes", "read"),
        ],
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let who: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(who["status"]["userInfo"]["uid"], "uid-42");
    assert_eq!(
        who["status"]["userInfo"]["extra"],
        json!({"example.com/scopes": ["read"]})
    );

    // kubectl: --as-uid, allowed for uid-42 only.
    let out = kubectl(
        &jane_kc,
        &[
            "auth",
            "whoami",
            "--as=bob",
            "--as-uid=uid-42",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["uid"], "uid-42");
    let out = kubectl(
        &jane_kc,
        &[
            "auth",
            "can-i",
            "list",
            "secrets",
            "--as=bob",
            "--as-uid=uid-42",
        ],
    )
    .await;
    assert_eq!(stdout(&out).trim(), "no", "{}", stderr(&out));
    let out = kubectl(
        &jane_kc,
        &[
            "auth",
            "can-i",
            "list",
            "secrets",
            "--as=bob",
            "--as-uid=uid-7",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "uids.authentication.k8s.io \"uid-7\" is forbidden: User \"jane\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope"
        ),
        "{}",
        stderr(&out)
    );
    // The admin, as bob with a UID, sees bob's decision.
    let out = kubectl(
        &kc,
        &[
            "auth",
            "can-i",
            "create",
            "clusterroles",
            "--as=bob",
            "--as-uid=uid-7",
        ],
    )
    .await;
    assert_eq!(stdout(&out).trim(), "no", "{}", stderr(&out));

    // kubectl: --as-user-extra, where the installed kubectl has it.
    if kubectl_has_user_extra(&kc).await {
        let out = kubectl(
            &jane_kc,
            &[
                "auth",
                "whoami",
                "--as=bob",
                "--as-user-extra=example.com/scopes=read",
                "-o",
                "json",
            ],
        )
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
        let who: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            who["status"]["userInfo"]["extra"],
            json!({"example.com/scopes": ["read"]})
        );
        let out = kubectl(
            &jane_kc,
            &[
                "auth",
                "can-i",
                "get",
                "pods",
                "--as=bob",
                "--as-user-extra=team=blue",
            ],
        )
        .await;
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains(
                "userextras.authentication.k8s.io \"blue\" is forbidden: User \"jane\" cannot impersonate resource \"userextras/team\""
            ),
            "{}",
            stderr(&out)
        );
    }
}

/// A protobuf length-delimited field (`number` < 16).
fn pb_field(number: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![(number << 3) | 2];
    let mut len = content.len();
    while len >= 0x80 {
        out.push(u8::try_from(len & 0x7f).unwrap() | 0x80);
        len >>= 7;
    }
    out.push(u8::try_from(len).unwrap());
    out.extend_from_slice(content);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_subject_access_review_carries_its_extra() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let admin = admin_client(&server).await;
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrole",
                "secret-reader",
                "--verb=get",
                "--resource=secrets"
            ]
        )
        .await
        .status
        .success()
    );
    assert!(
        kubectl(
            &kc,
            &[
                "create",
                "clusterrolebinding",
                "jane-reads",
                "--clusterrole=secret-reader",
                "--user=jane"
            ]
        )
        .await
        .status
        .success()
    );

    // authorization.k8s.io/v1 SubjectAccessReview, fields as generated.proto numbers them.
    let attributes = [
        pb_field(1, b"default"),
        pb_field(2, b"get"),
        pb_field(5, b"secrets"),
    ]
    .concat();
    let extra_value = [pb_field(1, b"read"), pb_field(1, b"write")].concat();
    let extra_entry = [
        pb_field(1, b"example.com/scopes"),
        pb_field(2, &extra_value),
    ]
    .concat();
    let spec = [
        pb_field(1, &attributes),
        pb_field(3, b"jane"),
        pb_field(4, b"dev"),
        pb_field(5, &extra_entry),
        pb_field(6, b"uid-1"),
    ]
    .concat();
    let type_meta = [
        pb_field(1, b"authorization.k8s.io/v1"),
        pb_field(2, b"SubjectAccessReview"),
    ]
    .concat();
    let body = [
        b"k8s\x00".as_slice(),
        &pb_field(1, &type_meta),
        &pb_field(2, &pb_field(2, &spec)),
    ]
    .concat();
    let req = http::Request::post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header("accept", "application/json")
        .body(body)
        .unwrap();
    let answer: Value = admin.request(req).await.unwrap();

    // The same review in JSON gets the same answer.
    let json_body = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "secrets"},
            "user": "jane",
            "groups": ["dev"],
            "extra": {"example.com/scopes": ["read", "write"]},
            "uid": "uid-1",
        },
    });
    let from_json = post(
        &admin,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        json_body.to_string().as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(
        answer["spec"]["extra"],
        json!({"example.com/scopes": ["read", "write"]})
    );
    assert_eq!(answer["spec"], from_json["spec"]);
    assert_eq!(answer["status"], from_json["status"]);
    assert_eq!(answer["status"]["allowed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_token_bound_to_a_secret() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());
    let client = admin_client(&server).await;
    assert!(
        kubectl(&kc, &["create", "serviceaccount", "robot"])
            .await
            .status
            .success()
    );
    assert!(
        kubectl(&kc, &["create", "secret", "generic", "anchor"])
            .await
            .status
            .success()
    );
    let secret_uid = |server: &LoopbackApiServer| {
        server.object("default", "secrets", "anchor").unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let uid = secret_uid(&server);

    let out = kubectl(
        &kc,
        &[
            "create",
            "token",
            "robot",
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "anchor",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out).trim().to_owned();
    let k8s = &claims(&token)["kubernetes.io"];
    assert_eq!(k8s["secret"], json!({"name": "anchor", "uid": uid}));
    assert_eq!(k8s["serviceaccount"]["name"], "robot");
    let status = review(&client, &token, &[]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    // With the Secret's UID; with another one (409, kube-apiserver's words).
    let out = kubectl(
        &kc,
        &[
            "create",
            "token",
            "robot",
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "anchor",
            "--bound-object-uid",
            &uid,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(
        &kc,
        &[
            "create",
            "token",
            "robot",
            "--bound-object-kind",
            "Secret",
            "--bound-object-name",
            "anchor",
            "--bound-object-uid",
            "0d4691ed-659b-4935-a832-355f77ee47cc",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Operation cannot be fulfilled on Secret \"anchor\": the UID in the bound object reference (0d4691ed-659b-4935-a832-355f77ee47cc) does not match the UID in record. The object might have been deleted and then recreated"),
        "{}",
        stderr(&out)
    );
    // Objects that do not exist: a Secret, and any Pod or Node (the double stores none).
    for (kind, name, message) in [
        ("Secret", "missing", "secrets \"missing\" not found"),
        ("Pod", "web-0", "pods \"web-0\" not found"),
        ("Node", "node-a", "nodes \"node-a\" not found"),
    ] {
        let out = kubectl(
            &kc,
            &[
                "create",
                "token",
                "robot",
                "--bound-object-kind",
                kind,
                "--bound-object-name",
                name,
            ],
        )
        .await;
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains(&format!("failed to create token: {message}")),
            "{}",
            stderr(&out)
        );
    }
    // A kind that cannot be bound to.
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}},
    });
    let req = http::Request::post("/api/v1/namespaces/default/serviceaccounts/robot/token")
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    match client.request::<Value>(req).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 400);
            assert_eq!(
                s.message,
                "cannot bind token to object of type /v1, Kind=ConfigMap"
            );
        }
        other => panic!("{other:?}"),
    }

    // Deleting the Secret invalidates the token; a new Secret of the same name does not revive
    // it.
    assert!(
        kubectl(&kc, &["delete", "secret", "anchor"])
            .await
            .status
            .success()
    );
    let status = review(&client, &token, &[]).await;
    assert_eq!(status["authenticated"], Value::Null, "{status}");
    assert_eq!(
        status["error"],
        "service account token has been invalidated"
    );
    assert!(
        kubectl(&kc, &["create", "secret", "generic", "anchor"])
            .await
            .status
            .success()
    );
    let status = review(&client, &token, &[]).await;
    assert_eq!(
        status["error"],
        format!(
            "secret UID ({}) does not match service account secret ref claim ({uid})",
            secret_uid(&server)
        )
    );
}

/// The RSA key the RS256 test signs with (a throwaway test key, `openssl genpkey -algorithm RSA`).
const RSA_KEY_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/service-account-rsa.key"
);

/// openssl's reading of the key: the modulus and the exponent as big-endian bytes.
fn openssl_rsa_public(path: &str) -> (Vec<u8>, Vec<u8>) {
    let out = std::process::Command::new("openssl")
        .args(["rsa", "-in", path, "-noout", "-modulus", "-text"])
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("Modulus="))
        .unwrap();
    let n: Vec<u8> = hex
        .as_bytes()
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect();
    // "publicExponent: 65537 (0x10001)"
    let e: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("publicExponent: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    let e_bytes: Vec<u8> = e
        .to_be_bytes()
        .into_iter()
        .skip_while(|b| *b == 0)
        .collect();
    (n, e_bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rsa_service_account_key_signs_rs256_tokens() {
    let pem = std::fs::read_to_string(RSA_KEY_PATH).unwrap();
    let (server, _dir, kc, client) =
        with_robot(LoopbackApiServer::builder().service_account_signing_key(&pem)).await;
    let audience = "https://metrics.example";
    let token = robot_token(&kc, &["--audience", audience]).await;
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["alg"], "RS256");

    // The discovery documents publish RS256 and the key openssl reads from the same file.
    let (config, jwks) = oidc_documents(&kc).await;
    let discovery = delegated_auth::OidcDiscovery::from_json(config.as_bytes()).unwrap();
    assert_eq!(discovery.issuer(), server.service_account_issuer());
    let config: Value = serde_json::from_str(&config).unwrap();
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["RS256"])
    );
    let set: Value = serde_json::from_str(&jwks).unwrap();
    let jwk = &set["keys"][0];
    assert_eq!(set["keys"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&jwk["kty"], &jwk["alg"], &jwk["use"]),
        (&json!("RSA"), &json!("RS256"), &json!("sig"))
    );
    assert_eq!(jwk["kid"], header["kid"]);
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(v.as_str().unwrap())
            .unwrap()
    };
    let (n, e) = openssl_rsa_public(RSA_KEY_PATH);
    assert_eq!(b64(&jwk["n"]), n);
    assert_eq!(b64(&jwk["e"]), e);

    // Verified offline with those documents, as an add-on verifies a projected token.
    let verifier = delegated_auth::ServiceAccountAuthenticator::new(
        &discovery,
        jwks.as_bytes(),
        &[audience.to_owned()],
    )
    .unwrap();
    let iat = claims(&token)["iat"].as_u64().unwrap();
    let at = std::time::UNIX_EPOCH + Duration::from_secs(iat);
    let bearer = delegated_auth::BearerToken::new(token.clone()).unwrap();
    let user = verifier.authenticate(&bearer, at).unwrap();
    assert_eq!(user.name, "system:serviceaccount:default:robot");
    let other = delegated_auth::ServiceAccountAuthenticator::new(
        &discovery,
        jwks.as_bytes(),
        &["https://other.example".to_owned()],
    )
    .unwrap();
    assert!(other.authenticate(&bearer, at).is_err());

    // And by the double's own TokenReview, for its audience only.
    let status = review(&client, &token, &[audience]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    let status = review(&client, &token, &[]).await;
    assert_ne!(status["authenticated"], true, "{status}");
}

#[tokio::test]
async fn a_service_account_key_that_cannot_sign_is_refused_at_start() {
    // Ed25519 signs no Kubernetes service-account token; text without a key is no key.
    let ed25519 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIEJmnD7eq2EogbNf1F0CU/8sZmHt9i64VgZVE7YuVhHk\n-----END PRIVATE KEY-----\n";
    for pem in [ed25519, "not a key"] {
        let err = LoopbackApiServer::builder()
            .service_account_signing_key(pem)
            .start()
            .await
            .unwrap_err();
        assert!(
            matches!(err, loopback_apiserver::Error::ServiceAccountKey(_)),
            "{err:?}"
        );
        assert!(!format!("{err:?}{err}").contains("EJmnD7eq"));
    }
}
