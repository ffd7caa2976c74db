//! The delegated-auth layer in front of an axum router, against the API-server double's real
//! TokenReview, SubjectAccessReview and RBAC: a bound ServiceAccount gets in with its user as an
//! extension, an unbound one gets 403, no or a garbage token 401, concurrent requests with a new
//! token send one review, an unreachable API server gives 500 that is not cached, a deleted
//! ServiceAccount is refused once the cache lifetime has passed, and the token never appears in
//! logs, `Debug` output or answers.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code"
)]

use std::cell::Cell;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::routing::get;
use axum::{Extension, Router};
use http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use std::num::NonZeroU32;

use k8s_bootstrap::ClientCertificates;
use k8s_bootstrap::delegated::{
    DelegatedAuthLayer, ReviewRateLimit, TokenReviews, VerifiedUser,
    fetch_service_account_authenticator,
};
use k8s_bootstrap::delegated_auth::{ClientCa, FrontProxyAuthenticator, RequestHeaderConfig};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, PostParams};
use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt as _;

const NS: &str = "monitoring";
const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

thread_local! {
    /// Seconds the layer's clock is ahead of the wall clock (each `#[tokio::test]` runs on its
    /// own thread, so tests do not see each other's clocks).
    static OFFSET: Cell<u64> = const { Cell::new(0) };
}

#[allow(clippy::disallowed_methods, reason = "the test's clock")]
fn clock() -> SystemTime {
    SystemTime::now() + Duration::from_secs(OFFSET.with(Cell::get))
}

fn advance(secs: u64) {
    OFFSET.with(|o| o.set(o.get() + secs));
}

/// A TCP relay in front of the double that can be cut (every connection dropped, new ones
/// refused) and restored: the API server unreachable, then back.
struct Relay {
    addr: SocketAddr,
    up: watch::Sender<bool>,
}

impl Relay {
    async fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let state = up.subscribe();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let mut state = state.clone();
                if !*state.borrow() {
                    drop(client);
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = state.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Relay { addr, up }
    }

    fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }
}

struct Cluster {
    server: LoopbackApiServer,
    admin: kube::Client,
    relay: Relay,
}

impl Cluster {
    async fn start() -> Cluster {
        let server = LoopbackApiServer::builder().start().await.unwrap();
        let admin = server.admin_client().await.unwrap();
        let relay = Relay::start(server.endpoint()).await;
        let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
        ns.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
        let roles: Api<ClusterRole> = Api::all(admin.clone());
        roles
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": "metrics-reader"},
                    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
                }))
                .unwrap(),
            )
            .await
            .unwrap();
        let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
        bindings
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": "prometheus-metrics"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}],
                }))
                .unwrap(),
            )
            .await
            .unwrap();
        for name in ["prometheus", "stranger"] {
            Api::<ServiceAccount>::namespaced(admin.clone(), NS)
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
                )
                .await
                .unwrap();
        }
        Cluster {
            server,
            admin,
            relay,
        }
    }

    /// `kubectl create token <name>`.
    async fn token(&self, name: &str) -> String {
        let request = TokenRequest {
            spec: Some(TokenRequestSpec::default()),
            ..TokenRequest::default()
        };
        Api::<ServiceAccount>::namespaced(self.admin.clone(), NS)
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .unwrap()
            .status
            .unwrap()
            .token
            .unwrap()
    }

    /// The client the layer reviews with: the admin's, through the relay.
    async fn layer_client(&self) -> kube::Client {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let yaml = self
            .server
            .admin_kubeconfig_yaml()
            .replace(&self.server.url(), &format!("https://{}", self.relay.addr));
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&yaml).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    async fn layer(&self) -> DelegatedAuthLayer {
        DelegatedAuthLayer::new(self.layer_client().await)
            .review_timeout(Duration::from_secs(20))
            .clock(clock)
    }

    fn reviews(&self, path: &str) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path == path)
            .count()
    }
}

/// The add-on: `/metrics` answers with the user the layer verified, and counts its calls.
fn app(layer: DelegatedAuthLayer, calls: Arc<AtomicUsize>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(
                move |user: Option<Extension<VerifiedUser>>, headers: http::HeaderMap| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        assert!(
                            headers.get("authorization").is_none(),
                            "the token reached the add-on"
                        );
                        let Some(Extension(user)) = user else {
                            return "no user".to_owned();
                        };
                        format!("{} {:?} {:?}", user.name, user.groups, user.uid.is_some())
                    }
                },
            ),
        )
        .layer(layer)
}

async fn call(
    app: &Router,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, http::HeaderMap, String) {
    let mut request = Request::get(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

fn status_json(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn a_bound_account_gets_in_with_its_user_others_are_refused_as_kube_apiserver_refuses() {
    let cluster = Cluster::start().await;
    let layer = cluster.layer().await;
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));

    // Bound to a ClusterRole with nonResourceURLs [/metrics] verbs [get]: 200, with the user.
    let token = cluster.token("prometheus").await;
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.starts_with(&format!("system:serviceaccount:{NS}:prometheus ")),
        "{body}"
    );
    assert!(body.contains("system:serviceaccounts"), "{body}");
    assert!(body.ends_with("true"), "the UID: {body}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Unbound: 403 with kube-apiserver's Status, no reason by default, nothing reaches the add-on.
    let stranger = cluster.token("stranger").await;
    let (status, headers, body) = call(&app, "/metrics", Some(&stranger)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(headers["content-type"], "application/json");
    let s = status_json(&body);
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(s["code"], 403);
    assert_eq!(
        s["message"],
        format!(
            "forbidden: User \"system:serviceaccount:{NS}:stranger\" cannot get path \"/metrics\""
        )
    );

    // No token, a garbage token, another scheme, the token in the query string: 401.
    for (path, token) in [
        ("/metrics", None),
        ("/metrics", Some("garbage.garbage.garbage")),
        (&*format!("/metrics?access_token={token}"), None),
        (&*format!("/metrics?token={token}"), None),
    ] {
        let (status, headers, body) = call(&app, path, token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} {token:?}");
        assert!(headers.get("www-authenticate").is_none());
        let s = status_json(&body);
        assert_eq!(
            (s["reason"].as_str(), s["message"].as_str()),
            (Some("Unauthorized"), Some("Unauthorized"))
        );
    }
    let basic = app
        .clone()
        .oneshot(
            Request::get("/metrics")
                .header("authorization", "Basic YWRtaW46YWRtaW4=")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
    // Two Authorization headers, even if one is valid: 401.
    let two = app
        .clone()
        .oneshot(
            Request::get("/metrics")
                .header("authorization", format!("Bearer {token}"))
                .header("authorization", "Bearer other")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(two.status(), StatusCode::UNAUTHORIZED);
    // An unclean path is redirected before any check.
    let (status, headers, _) = call(&app, "/x/../metrics", Some(&stranger)).await;
    assert_eq!(status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(headers["location"], "/metrics");
    // Only the first request reached the add-on.
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Cached: the same two tokens again send no review.
    let before = (
        cluster.reviews(TOKEN_REVIEWS),
        cluster.reviews(ACCESS_REVIEWS),
    );
    assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
    assert_eq!(
        call(&app, "/metrics", Some(&stranger)).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        before,
        (
            cluster.reviews(TOKEN_REVIEWS),
            cluster.reviews(ACCESS_REVIEWS)
        )
    );
    let m = metrics.snapshot();
    assert_eq!((m.allowed, m.denied, m.errored), (2, 2, 0));
    assert!(m.token_cache_hits >= 2 && m.access_cache_hits >= 2, "{m:?}");
    assert_eq!(m.token_reviews as usize, before.0);
    assert_eq!(m.access_reviews as usize, before.1);

    // With the reason opted in, the 403 carries the authorizer's reason when it gives one (the
    // RBAC authorizer gives none for no opinion): nothing is appended here.
    let explained = self::app(
        cluster.layer().await.explain_denials(true),
        Arc::clone(&calls),
    );
    let (status, _, body) = call(&explained, "/metrics", Some(&stranger)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(status_json(&body)["message"], s["message"]);
}

#[tokio::test]
async fn concurrent_requests_with_a_new_token_send_one_review() {
    let cluster = Cluster::start().await;
    let layer = cluster.layer().await;
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));
    let token = cluster.token("prometheus").await;
    let (tokens_before, access_before) = (
        cluster.reviews(TOKEN_REVIEWS),
        cluster.reviews(ACCESS_REVIEWS),
    );

    const N: usize = 32;
    let answers = futures_join_all((0..N).map(|_| call(&app, "/metrics", Some(&token)))).await;
    assert!(answers.iter().all(|(s, _, _)| *s == StatusCode::OK));
    assert_eq!(calls.load(Ordering::SeqCst), N);
    assert_eq!(cluster.reviews(TOKEN_REVIEWS) - tokens_before, 1);
    assert_eq!(cluster.reviews(ACCESS_REVIEWS) - access_before, 1);
    let m = metrics.snapshot();
    assert_eq!((m.token_reviews, m.access_reviews), (1, 1));
    assert_eq!(m.coalesced, 2 * (N as u64 - 1), "{m:?}");
}

/// The request whose token was just reviewed and the ones after it, from the cache, get the
/// very same user (one allocation, the cache's): the access decision kept for the first is
/// found for the next by pointer, without comparing the user's groups and extra.
#[tokio::test]
async fn the_reviewed_request_and_the_cached_ones_share_one_user() {
    let cluster = Cluster::start().await;
    let layer = cluster.layer().await;
    let metrics = layer.metrics();
    let seen: Arc<std::sync::Mutex<Vec<Arc<k8s_bootstrap::delegated_auth::UserInfo>>>> =
        Arc::default();
    let app = {
        let seen = Arc::clone(&seen);
        Router::new()
            .route(
                "/metrics",
                get(move |Extension(user): Extension<VerifiedUser>| {
                    let seen = Arc::clone(&seen);
                    async move {
                        seen.lock().unwrap().push(user.into_inner());
                        "ok"
                    }
                }),
            )
            .layer(layer)
    };
    let token = cluster.token("prometheus").await;
    for _ in 0..3 {
        assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        Arc::ptr_eq(&seen[0], &seen[1]),
        "the reviewed request's user is the cache's"
    );
    assert!(Arc::ptr_eq(&seen[1], &seen[2]));
    let m = metrics.snapshot();
    assert_eq!((m.token_reviews, m.access_reviews), (1, 1), "{m:?}");
}

/// `futures::future::join_all`, without the dependency: polls every future in turn.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn an_unreachable_api_server_is_a_500_that_is_not_cached() {
    let cluster = Cluster::start().await;
    let layer = cluster.layer().await;
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));
    let token = cluster.token("prometheus").await;

    cluster.relay.set_up(false);
    for _ in 0..2 {
        let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        let s = status_json(&body);
        assert_eq!(s["reason"], "InternalError");
        assert!(!body.contains(&token));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(metrics.snapshot().errored, 2);

    // Back: the same token is reviewed again, and gets in.
    cluster.relay.set_up(true);
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Authenticated and cached, then the SubjectAccessReview fails: 500, then 200 when back.
    let stranger_layer = cluster.layer().await;
    let app2 = self::app(stranger_layer, Arc::clone(&calls));
    assert_eq!(
        call(&app2, "/metrics", Some(&token)).await.0,
        StatusCode::OK
    );
    advance(11); // both caches expired
    cluster.relay.set_up(false);
    assert_eq!(
        call(&app2, "/metrics", Some(&token)).await.0,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    cluster.relay.set_up(true);
    assert_eq!(
        call(&app2, "/metrics", Some(&token)).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_deleted_service_account_is_refused_once_the_cache_lifetime_has_passed() {
    let cluster = Cluster::start().await;
    let app = app(cluster.layer().await, Arc::new(AtomicUsize::new(0)));
    let token = cluster.token("prometheus").await;
    assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);

    Api::<ServiceAccount>::namespaced(cluster.admin.clone(), NS)
        .delete("prometheus", &DeleteParams::default())
        .await
        .unwrap();
    // Within the token cache's lifetime (10 s, as k8s.io/apiserver): still the cached user.
    advance(5);
    assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
    // Past it: the TokenReview refuses the token.
    advance(6);
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_token_is_never_logged_nor_in_debug_output_nor_in_answers() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let cluster = Cluster::start().await;
    let layer = cluster.layer().await.explain_denials(true);
    let app = app(layer.clone(), Arc::new(AtomicUsize::new(0)));
    let token = cluster.token("prometheus").await;
    let stranger = cluster.token("stranger").await;
    let mut answers = Vec::new();
    for t in [&token, &stranger, &"forged-token-0123456789".to_owned()] {
        answers.push(call(&app, "/metrics", Some(t)).await.2);
    }
    cluster.relay.set_up(false);
    advance(11);
    for t in [&token, &stranger] {
        answers.push(call(&app, "/metrics", Some(t)).await.2);
    }
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("delegated"),
        "the layer logged nothing: {logs}"
    );
    let debug = format!("{layer:?} {:?}", app);
    for secret in [&token, &stranger, &"forged-token-0123456789".to_owned()] {
        assert!(!logs.contains(secret.as_str()), "a token in the logs");
        assert!(!debug.contains(secret.as_str()), "a token in Debug output");
        assert!(
            answers.iter().all(|a| !a.contains(secret.as_str())),
            "a token in an answer"
        );
    }
}

/// Creates `object` (typed by the `Api` it goes through) as the admin.
async fn create<K>(api: Api<K>, object: Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).unwrap(),
    )
    .await
    .unwrap();
}

/// A ServiceAccount in [`NS`] with a Role in `namespace` allowing `get` on `services/proxy`
/// (only `web` when `name` is given), bound to it.
async fn proxy_role(cluster: &Cluster, account: &str, namespace: &str, name: Option<&str>) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let mut rule = json!({"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get"]});
    if let Some(name) = name {
        rule["resourceNames"] = json!([name]);
    }
    let role = format!("{account}-services-proxy");
    create(
        Api::<Role>::namespaced(cluster.admin.clone(), namespace),
        json!({"metadata": {"name": role}, "rules": [rule]}),
    )
    .await;
    create(
        Api::<RoleBinding>::namespaced(cluster.admin.clone(), namespace),
        json!({
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NS}],
        }),
    )
    .await;
}

/// The add-on behind a kube-rbac-proxy configuration: `/metrics` and `/healthz` answer with the
/// user the layer verified ("no user" on an ignored path), `/other` exists too.
fn proxy_app(layer: DelegatedAuthLayer) -> Router {
    let user = |user: Option<Extension<VerifiedUser>>| async move {
        user.map_or_else(|| "no user".to_owned(), |Extension(u)| u.name.clone())
    };
    Router::new()
        .route("/metrics", get(user))
        .route("/healthz", get(user))
        .route("/other", get(user))
        .layer(layer)
}

fn proxy_config(yaml: &str) -> k8s_bootstrap::delegated_auth::RbacProxyConfig {
    k8s_bootstrap::delegated_auth::RbacProxyConfig::from_yaml(yaml.as_bytes()).unwrap()
}

#[tokio::test]
async fn a_kube_rbac_proxy_configuration_with_resource_attributes_statics_and_ignored_paths() {
    let cluster = Cluster::start().await;
    // `prometheus` may get services/proxy of `web` in `default`; `stranger` of nothing;
    // `static-scraper` only through the file's static authorization, which RBAC does not know.
    proxy_role(&cluster, "prometheus", "default", Some("web")).await;
    create(
        Api::<ServiceAccount>::namespaced(cluster.admin.clone(), NS),
        json!({"metadata": {"name": "static-scraper"}}),
    )
    .await;
    let config = proxy_config(&format!(
        r#"
authorization:
  resourceAttributes:
    namespace: default
    apiVersion: v1
    resource: services
    subresource: proxy
    name: web
  static:
    - user:
        name: system:serviceaccount:{NS}:static-scraper
      resourceRequest: true
      verb: get
      namespace: default
      resource: services
      subresource: proxy
"#
    ))
    .with_ignore_paths(["/healthz"])
    .unwrap();
    let layer = cluster.layer().await.rbac_proxy_config(config);
    let metrics = layer.metrics();
    let app = proxy_app(layer);
    let token = cluster.token("prometheus").await;
    let stranger = cluster.token("stranger").await;
    let static_scraper = cluster.token("static-scraper").await;

    // Allowed by RBAC for the configured resource, whatever the path.
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, format!("system:serviceaccount:{NS}:prometheus"));
    assert_eq!(call(&app, "/other", Some(&token)).await.0, StatusCode::OK);

    // Not allowed: kube-apiserver's 403 for the resource request.
    let (status, _, body) = call(&app, "/metrics", Some(&stranger)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let s = status_json(&body);
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(
        s["message"],
        format!(
            "services \"web\" is forbidden: User \"system:serviceaccount:{NS}:stranger\" cannot \
             get resource \"services/proxy\" in API group \"\" in the namespace \"default\""
        )
    );
    assert_eq!(s["details"]["name"], "web");
    // The verb is the method's: RBAC allows `get`, not `post`.
    let post = app
        .clone()
        .oneshot(
            Request::post("/metrics")
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::FORBIDDEN);
    let body = post.into_body().collect().await.unwrap().to_bytes();
    let message = status_json(std::str::from_utf8(&body).unwrap())["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap()
            .contains(" cannot post resource \"services/proxy\""),
        "{message}"
    );

    // The static authorization: allowed without a SubjectAccessReview.
    let access_before = cluster.reviews(ACCESS_REVIEWS);
    let (status, _, body) = call(&app, "/metrics", Some(&static_scraper)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, format!("system:serviceaccount:{NS}:static-scraper"));
    assert_eq!(cluster.reviews(ACCESS_REVIEWS), access_before);

    // The ignored path: no token needed, no user, no review; a token there is not reviewed.
    let before = (
        cluster.reviews(TOKEN_REVIEWS),
        cluster.reviews(ACCESS_REVIEWS),
    );
    let (status, _, body) = call(&app, "/healthz", None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "no user"));
    let (status, _, body) = call(&app, "/healthz", Some("garbage")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "no user"));
    assert_eq!(
        before,
        (
            cluster.reviews(TOKEN_REVIEWS),
            cluster.reviews(ACCESS_REVIEWS)
        )
    );
    // Any other path still needs a token.
    assert_eq!(
        call(&app, "/metrics", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let m = metrics.snapshot();
    assert_eq!(m.errored, 0, "{m:?}");
}

#[tokio::test]
async fn a_kube_rbac_proxy_rewrite_by_query_parameter_with_allowed_paths() {
    let cluster = Cluster::start().await;
    // `prometheus` may get services/proxy in its own namespace only.
    proxy_role(&cluster, "prometheus", NS, None).await;
    let config = proxy_config(
        r#"
authorization:
  rewrites:
    byQueryParameter:
      name: namespace
  resourceAttributes:
    apiVersion: v1
    resource: services
    subresource: proxy
    namespace: "{{ .Value }}"
"#,
    )
    .with_allow_paths(["/metrics"])
    .unwrap();
    let layer = cluster.layer().await.rbac_proxy_config(config);
    let metrics = layer.metrics();
    let app = proxy_app(layer);
    let token = cluster.token("prometheus").await;
    let stranger = cluster.token("stranger").await;

    // The value names the namespace: allowed in NS, refused in `default`.
    let (status, _, body) = call(&app, &format!("/metrics?namespace={NS}"), Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _, body) = call(&app, "/metrics?namespace=default", Some(&token)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        status_json(&body)["message"],
        format!(
            "services is forbidden: User \"system:serviceaccount:{NS}:prometheus\" cannot get \
             resource \"services/proxy\" in API group \"\" in the namespace \"default\""
        )
    );
    // Every value must be allowed.
    let (status, _, body) = call(
        &app,
        &format!("/metrics?namespace={NS}&namespace=default"),
        Some(&token),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _, body) = call(&app, &format!("/metrics?namespace={NS}"), Some(&stranger)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // No value: kube-rbac-proxy's rewriting authorizer fails with an error, which
    // k8s.io/apiserver's authorization filter answers 500; nothing reaches the add-on.
    let errored = metrics.snapshot().errored;
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    let s = status_json(&body);
    assert_eq!(s["reason"], "InternalError");
    assert_eq!(
        s["message"],
        "Internal error occurred: bad request. The request or configuration is malformed"
    );
    assert_eq!(metrics.snapshot().errored, errored + 1);
    // Another parameter is no value.
    let (status, _, _) = call(&app, "/metrics?ns=default", Some(&token)).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);

    // A path outside --allow-paths: 403 before any review, even with a valid value.
    let before = (
        cluster.reviews(TOKEN_REVIEWS),
        cluster.reviews(ACCESS_REVIEWS),
    );
    let (status, _, body) = call(&app, &format!("/other?namespace={NS}"), Some(&token)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(call(&app, "/other", None).await.0, StatusCode::FORBIDDEN);
    assert_eq!(
        before,
        (
            cluster.reviews(TOKEN_REVIEWS),
            cluster.reviews(ACCESS_REVIEWS)
        )
    );
}

/// A CA of our own (the front proxy's, or one the layer does not trust), with rcgen.
struct TestCa {
    key: rcgen::KeyPair,
    cert: rcgen::Certificate,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        TestCa { key, cert }
    }

    fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A client certificate (DER) for `common_name`, for client authentication.
    fn client(&self, common_name: &str) -> Vec<u8> {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params
            .signed_by(&key, &self.cert, &self.key)
            .unwrap()
            .der()
            .to_vec()
    }
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// The add-on: `/metrics` answers, in JSON, with the user the layer verified and every request
/// header it received; counts its calls.
fn echo_app(layer: DelegatedAuthLayer, calls: Arc<AtomicUsize>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(
                move |user: Option<Extension<VerifiedUser>>, headers: http::HeaderMap| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let headers: Vec<String> =
                            headers.keys().map(|k| k.as_str().to_owned()).collect();
                        let user = user.map(|Extension(u)| {
                            json!({"name": u.name, "groups": u.groups, "extra": u.extra})
                        });
                        json!({"user": user, "headers": headers}).to_string()
                    }
                },
            ),
        )
        .layer(layer)
}

/// A GET of `/metrics` with these headers, the client certificate chain as a request extension
/// (as the TLS server puts it), and the bearer token.
async fn call_with(
    app: &Router,
    certificate: Option<&[u8]>,
    headers: &[(&str, &str)],
    token: Option<&str>,
) -> (StatusCode, http::HeaderMap, String) {
    let mut request = Request::get("/metrics");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut request = request.body(Body::empty()).unwrap();
    if let Some(der) = certificate {
        request
            .extensions_mut()
            .insert(ClientCertificates::from_der_chain([der.to_vec()]));
    }
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

/// Binds the `metrics-reader` ClusterRole to these users.
async fn bind_users(cluster: &Cluster, users: &[&str]) {
    let subjects: Vec<Value> = users
        .iter()
        .map(|u| json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": u}))
        .collect();
    create(
        Api::<ClusterRoleBinding>::all(cluster.admin.clone()),
        json!({
            "metadata": {"name": "users-metrics"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
            "subjects": subjects,
        }),
    )
    .await;
}

const IDENTITY: [(&str, &str); 4] = [
    ("X-Remote-User", "alice"),
    ("X-Remote-Group", "metrics-viewers"),
    ("X-Remote-Extra-Scopes", "read"),
    ("X-Remote-Uid", "alice-uid"),
];

#[tokio::test]
async fn the_front_proxy_then_client_certificates_then_tokens_and_identity_headers_never_reach_the_addon()
 {
    let cluster = Cluster::start().await;
    bind_users(&cluster, &["alice", "carol"]).await;
    let front_proxy_ca = TestCa::new("front-proxy-ca");
    let front_proxy = front_proxy_ca.client("front-proxy-client");
    let intruder = front_proxy_ca.client("intruder");
    let (carol_pem, _) = cluster
        .server
        .issue_client_certificate("carol", &["dev"])
        .unwrap();
    let carol = pem_to_der(&carol_pem);
    let unknown_carol = TestCa::new("someone else's CA").client("carol");

    let layer = cluster
        .layer()
        .await
        .front_proxy(FrontProxyAuthenticator::new(
            ClientCa::from_pem(front_proxy_ca.pem().as_bytes()).unwrap(),
            vec!["front-proxy-client".to_owned()],
            RequestHeaderConfig::kube_apiserver_defaults(),
        ))
        .client_ca(ClientCa::from_pem(cluster.server.ca_pem().as_bytes()).unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let app = echo_app(layer, Arc::clone(&calls));
    let token_reviews = cluster.reviews(TOKEN_REVIEWS);
    let seen = |body: &str| -> (Value, Vec<String>) {
        let v = status_json(body);
        let headers = v["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_owned())
            .collect();
        (v["user"].clone(), headers)
    };
    let no_identity_header = |headers: &[String]| {
        headers
            .iter()
            .all(|h| !h.starts_with("x-remote-") && h != "authorization")
    };

    // The front proxy's certificate (an allowed name): the user its headers name, in
    // system:authenticated, without a TokenReview; the headers stop here.
    let (status, _, body) = call_with(&app, Some(&front_proxy), &IDENTITY, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (user, headers) = seen(&body);
    assert_eq!(user["name"], "alice");
    assert_eq!(
        user["groups"],
        json!(["metrics-viewers", "system:authenticated"])
    );
    assert_eq!(user["extra"]["scopes"], json!(["read"]));
    assert!(no_identity_header(&headers), "{headers:?}");

    // A certificate of the front-proxy CA whose name is not allowed: not the front proxy, not
    // a client of the client CA, no token: 401, and the add-on sees nothing.
    let before = calls.load(Ordering::SeqCst);
    let (status, _, body) = call_with(&app, Some(&intruder), &IDENTITY, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    // The allowed front proxy naming no user is no user either.
    let (status, _, _) = call_with(&app, Some(&front_proxy), &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A client certificate of the client CA is its own user: X-Remote-* ignored and removed.
    let (status, _, body) = call_with(&app, Some(&carol), &IDENTITY, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (user, headers) = seen(&body);
    assert_eq!(user["name"], "carol");
    assert_eq!(user["groups"], json!(["dev", "system:authenticated"]));
    assert!(
        user["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("X509SHA256="),
        "{user}"
    );
    assert!(no_identity_header(&headers), "{headers:?}");
    // The same name from a CA the layer does not trust: 401.
    let (status, _, _) = call_with(&app, Some(&unknown_carol), &IDENTITY, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // No certificate: X-Remote-* alone is nothing (401); with a token, the token's user, and
    // the headers never reach the add-on.
    let (status, _, _) = call_with(&app, None, &IDENTITY, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);
    assert_eq!(
        cluster.reviews(TOKEN_REVIEWS),
        token_reviews,
        "no token, no review"
    );
    let token = cluster.token("prometheus").await;
    let (status, _, body) = call_with(&app, None, &IDENTITY, Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (user, headers) = seen(&body);
    assert_eq!(
        user["name"],
        format!("system:serviceaccount:{NS}:prometheus")
    );
    assert!(no_identity_header(&headers), "{headers:?}");
    // A certificate that fails both leaves the request to its token, as in k8s.io/apiserver's
    // union.
    let (status, _, body) = call_with(&app, Some(&intruder), &IDENTITY, Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        seen(&body).0["name"],
        format!("system:serviceaccount:{NS}:prometheus")
    );

    // Configured header names are removed as well as kube-apiserver's defaults, and read.
    let layer = cluster
        .layer()
        .await
        .front_proxy(FrontProxyAuthenticator::new(
            ClientCa::from_pem(front_proxy_ca.pem().as_bytes()).unwrap(),
            Vec::new(),
            RequestHeaderConfig::new(
                &["X-Forwarded-User"],
                &["X-Forwarded-Groups"],
                &["X-Forwarded-Extra-"],
            )
            .unwrap(),
        ));
    let app = echo_app(layer, Arc::new(AtomicUsize::new(0)));
    let forwarded = [
        ("X-Forwarded-User", "alice"),
        ("X-Forwarded-Extra-Scopes", "read"),
        ("X-Remote-User", "carol"),
        ("X-Remote-Group", "system:masters"),
    ];
    let (status, _, body) = call_with(&app, Some(&intruder), &forwarded, None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "every name of that CA is allowed: {body}"
    );
    let (user, headers) = seen(&body);
    assert_eq!(user["name"], "alice");
    assert_eq!(user["groups"], json!(["system:authenticated"]));
    assert!(
        headers
            .iter()
            .all(|h| !h.starts_with("x-remote-") && !h.starts_with("x-forwarded-")),
        "{headers:?}"
    );
}

#[tokio::test]
async fn projected_tokens_verify_offline_and_another_audience_is_refused() {
    const AUDIENCE: &str = "https://metrics.example";
    let cluster = Cluster::start().await;
    let audiences = [AUDIENCE.to_owned()];
    let offline = fetch_service_account_authenticator(&cluster.admin, &audiences)
        .await
        .unwrap();
    let token_for = |audience: &'static str| {
        let admin = cluster.admin.clone();
        async move {
            let request = TokenRequest {
                spec: Some(TokenRequestSpec {
                    audiences: Some(vec![audience.to_owned()]),
                    ..TokenRequestSpec::default()
                }),
                ..TokenRequest::default()
            };
            Api::<ServiceAccount>::namespaced(admin, NS)
                .create_token_request("prometheus", &PostParams::default(), &request)
                .await
                .unwrap()
                .status
                .unwrap()
                .token
                .unwrap()
        }
    };
    let metrics_token = token_for(AUDIENCE).await;
    let other_token = token_for("https://other.example").await;
    let api_token = cluster.token("prometheus").await;

    // Offline only: no TokenReview is ever sent.
    let layer = cluster
        .layer()
        .await
        .service_account_tokens(offline.clone())
        .token_reviews(TokenReviews::Disabled);
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));
    let before = cluster.reviews(TOKEN_REVIEWS);
    let (status, _, body) = call(&app, "/metrics", Some(&metrics_token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.starts_with(&format!("system:serviceaccount:{NS}:prometheus ")),
        "{body}"
    );
    assert!(body.contains("system:authenticated"), "{body}");
    for token in [&other_token, &api_token, &"not-a-jwt".to_owned()] {
        let (status, _, body) = call(&app, "/metrics", Some(token)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        cluster.reviews(TOKEN_REVIEWS),
        before,
        "a TokenReview was sent"
    );

    // Offline, then reviewed for the same audiences: the other audience's token is refused by
    // the API server too; the API server's own token likewise.
    let layer = cluster
        .layer()
        .await
        .token_audiences(audiences.clone())
        .service_account_tokens(offline);
    let app = self::app(layer, Arc::clone(&calls));
    assert_eq!(
        call(&app, "/metrics", Some(&metrics_token)).await.0,
        StatusCode::OK
    );
    assert_eq!(cluster.reviews(TOKEN_REVIEWS), before);
    for token in [&other_token, &api_token] {
        let (status, _, body) = call(&app, "/metrics", Some(token)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    assert_eq!(cluster.reviews(TOKEN_REVIEWS), before + 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
#[allow(clippy::disallowed_methods, reason = "the wall time the flood took")]
async fn a_flood_of_unique_invalid_tokens_is_held_to_the_rate_limit_and_cached_users_still_get_in()
{
    const RATE: u32 = 2;
    const BURST: u32 = 5;
    const N: usize = 100;
    let cluster = Cluster::start().await;
    let layer = cluster
        .layer()
        .await
        .review_rate_limit(ReviewRateLimit::new(
            NonZeroU32::new(RATE).unwrap(),
            NonZeroU32::new(BURST).unwrap(),
        ));
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));
    let token = cluster.token("prometheus").await;
    let fresh = cluster.token("prometheus").await;

    let start = std::time::Instant::now();
    // A valid user, reviewed (a TokenReview and a SubjectAccessReview of the burst) and cached.
    assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
    let reviews = || cluster.reviews(TOKEN_REVIEWS) + cluster.reviews(ACCESS_REVIEWS);
    let before = reviews();

    let mut throttled = 0;
    let mut refused = 0;
    let mut last_429 = None;
    for i in 0..N {
        let (status, headers, body) =
            call(&app, "/metrics", Some(&format!("invalid-token-{i:04}"))).await;
        match status {
            StatusCode::UNAUTHORIZED => refused += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                throttled += 1;
                last_429 = Some((headers, body));
            }
            other => panic!("{other}: {body}"),
        }
        // The cached user is never throttled.
        if i % 10 == 0 {
            assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let sent = reviews() - before;
    let bound = f64::from(BURST) + f64::from(RATE) * elapsed;
    assert!(
        (sent as f64) <= bound,
        "{sent} reviews in {elapsed:.2} s, bound {bound:.1}"
    );
    assert!(
        sent >= (BURST - 2) as usize,
        "the rest of the burst is used: {sent}"
    );
    assert_eq!(refused, sent, "each review sent refused one token");
    assert_eq!(throttled + refused, N);
    assert!(throttled > 0);
    let m = metrics.snapshot();
    assert_eq!(m.throttled as usize, throttled);
    assert_eq!(m.errored, 0);

    // The answer: kube-apiserver's TooManyRequests Status, with Retry-After.
    let (headers, body) = last_429.unwrap();
    let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=1).contains(&retry_after), "{retry_after}");
    let s = status_json(&body);
    assert_eq!(
        (
            s["kind"].as_str(),
            s["status"].as_str(),
            s["reason"].as_str(),
            s["code"].as_u64()
        ),
        (
            Some("Status"),
            Some("Failure"),
            Some("TooManyRequests"),
            Some(429)
        )
    );
    assert_eq!(
        s["details"]["retryAfterSeconds"].as_u64(),
        Some(retry_after)
    );
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .starts_with("Too many requests")
    );

    // Exhausted, a valid new token is throttled, and that is not cached: once the bucket has
    // refilled (the layer's clock moved, no sleep), the same token gets in.
    for i in 0.. {
        let drain = format!("drain-the-bucket-{i}");
        if call(&app, "/metrics", Some(&drain)).await.0 == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
    }
    assert_eq!(
        call(&app, "/metrics", Some(&fresh)).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    advance(5);
    let (status, _, body) = call(&app, "/metrics", Some(&fresh)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_served_users_renewal_is_not_throttled_by_a_flood_of_new_tokens() {
    let cluster = Cluster::start().await;
    let layer = cluster
        .layer()
        .await
        .review_rate_limit(ReviewRateLimit::new(
            NonZeroU32::new(1).unwrap(),
            NonZeroU32::new(3).unwrap(),
        ));
    let metrics = layer.metrics();
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(layer, Arc::clone(&calls));
    let token = cluster.token("prometheus").await;
    let never_seen = cluster.token("prometheus").await;
    let reviews = || cluster.reviews(TOKEN_REVIEWS) + cluster.reviews(ACCESS_REVIEWS);
    let drain = |app: Router| async move {
        let mut refused = 0;
        for i in 0.. {
            let invalid = format!("flood-{i}");
            match call(&app, "/metrics", Some(&invalid)).await.0 {
                StatusCode::UNAUTHORIZED => refused += 1,
                StatusCode::TOO_MANY_REQUESTS => return refused,
                other => panic!("{other}"),
            }
        }
        unreachable!()
    };

    // Served once: a TokenReview and a SubjectAccessReview, then the caches.
    assert_eq!(call(&app, "/metrics", Some(&token)).await.0, StatusCode::OK);
    assert_eq!(reviews(), 2);
    // Both entries expire; the flood empties the bucket of new tokens meanwhile.
    advance(11);
    let refused = drain(app.clone()).await;
    assert_eq!(refused, 3, "the burst of new tokens");
    let before = reviews();
    // The served user's token and access are renewed from their own bucket...
    let (status, _, body) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(reviews(), before + 2);
    // ... while a valid token never seen before waits for the flood's bucket, as the flood.
    assert_eq!(
        call(&app, "/metrics", Some(&never_seen)).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    // The renewal bucket is bounded too: three renewals at once at most, then 429 until it
    // refills.
    advance(11);
    drain(app.clone()).await;
    let (status, _, _) = call(&app, "/metrics", Some(&token)).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "2 of the renewal bucket's 3 (refilled)"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(metrics.snapshot().errored, 0);
}

#[tokio::test]
async fn identity_headers_never_reach_the_addon_on_an_ignored_path_either() {
    let cluster = Cluster::start().await;
    let config = k8s_bootstrap::delegated_auth::RbacProxyConfig::new()
        .with_ignore_paths(["/metrics"])
        .unwrap();
    let layer = cluster.layer().await.rbac_proxy_config(config);
    let calls = Arc::new(AtomicUsize::new(0));
    let app = echo_app(layer, Arc::clone(&calls));
    let (status, _, body) = call_with(&app, None, &IDENTITY, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v = status_json(&body);
    assert_eq!(v["user"], Value::Null);
    let headers = v["headers"].as_array().unwrap();
    assert!(
        headers
            .iter()
            .all(|h| !h.as_str().unwrap().starts_with("x-remote-")),
        "{headers:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
