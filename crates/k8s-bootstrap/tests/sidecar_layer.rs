//! The sidecar tower layer as axum middleware and around a plain service: what reaches the
//! add-on, what is answered 403, key replacement, concurrency, and no token in tracing output.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code"
)]

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::{Audience, Issuer, Minter, Rejection, Sidecar, SigningKey, Validation};
use axum::body::Body;
use axum::extract::Extension;
use axum::routing::get;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use k8s_bootstrap::sidecar::{AuthenticatedUser, DecisionObserver, SharedSidecar, SidecarLayer};
use tower::{Layer as _, Service as _, ServiceExt as _};

const ED25519_A: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
/// A second key, unknown to the sidecars built from `ED25519_A`.
const ED25519_B: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEIGXyaBoPMjJdPfKLmx5WHRLmGCVGsuVR/4OfZbiGyeH4\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://apiserver.example";
const AUDIENCE: &str = "kube-system/dashboard";
/// The fixed time every test decides at (the layer's clock).
const NOW_SECS: u64 = 1_700_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW_SECS)
}

fn key_a() -> SigningKey {
    SigningKey::from_pkcs8_pem(ED25519_A).unwrap()
}

fn key_b() -> SigningKey {
    SigningKey::from_pkcs8_pem(ED25519_B).unwrap()
}

fn sidecar_for(key: &SigningKey) -> Sidecar {
    Sidecar::new(
        key.public_key_set().unwrap(),
        Validation::new(Issuer::new(ISSUER), Audience::new(AUDIENCE)),
    )
}

fn mint(key: SigningKey, sub: &str, audience: &str, at: SystemTime) -> String {
    let token = Minter::new(key, Issuer::new(ISSUER))
        .mint(sub, &Audience::new(audience), at)
        .unwrap();
    token.expose_secret().to_owned()
}

/// The add-on: echoes the verified user (extension) and the headers it received.
fn addon() -> axum::Router {
    axum::Router::new().route(
        "/",
        get(
            |Extension(user): Extension<AuthenticatedUser>, headers: HeaderMap| async move {
                let mut names: Vec<String> = headers
                    .iter()
                    .map(|(n, v)| format!("{n}={}", v.to_str().unwrap_or("?")))
                    .collect();
                names.sort();
                format!("{}\n{}", user.name(), names.join("\n"))
            },
        ),
    )
}

async fn send(
    service: &mut (
             impl tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Send
         ),
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = Request::get("/");
    for (n, v) in headers {
        request = request.header(*n, *v);
    }
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn axum_router_behind_the_layer_sees_only_verified_users() {
    captured();
    let mut app = addon().layer(SidecarLayer::new(sidecar_for(&key_a())).clock(now));
    let token = mint(key_a(), "jane", AUDIENCE, now());
    let bearer = format!("Bearer {token}");

    let (status, body) = send(
        &mut app,
        &[
            ("authorization", &bearer),
            ("x-authenticated-user", "admin"),
            ("x_authenticated_user", "root"),
            ("accept", "text/html"),
            ("connection", "x-remove-me"),
            ("x-remove-me", "1"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body, "jane\naccept=text/html\nx-authenticated-user=jane",
        "credential, spoofed identities and Connection-named headers removed"
    );

    // Every kind of bad request is a 403 with an empty body, and the add-on never runs.
    let expired = format!(
        "Bearer {}",
        mint(
            key_a(),
            "jane",
            AUDIENCE,
            now() - Duration::from_secs(86_400)
        )
    );
    let wrong_audience = format!("Bearer {}", mint(key_a(), "jane", "other", now()));
    let other_key = format!("Bearer {}", mint(key_b(), "jane", AUDIENCE, now()));
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("no authorization", vec![("accept", "*/*")]),
        ("forged", vec![("authorization", "Bearer e30.e30.AAAA")]),
        ("basic", vec![("authorization", "Basic amFuZTpwdw==")]),
        ("expired", vec![("authorization", &expired)]),
        ("wrong audience", vec![("authorization", &wrong_audience)]),
        ("unknown key", vec![("authorization", &other_key)]),
        (
            "two authorization headers",
            vec![("authorization", &bearer), ("authorization", &bearer)],
        ),
        (
            "look-alike identity header",
            vec![
                ("authorization", &bearer),
                ("x.authenticated.user", "admin"),
            ],
        ),
    ];
    for (case, headers) in cases {
        let (status, body) = send(&mut app, &headers).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{case}");
        assert_eq!(body, "", "{case}");
    }
}

#[tokio::test]
async fn replacing_the_sidecar_applies_to_the_next_request() {
    captured();
    let shared = SharedSidecar::new(sidecar_for(&key_a()));
    let mut app = addon().layer(SidecarLayer::new(shared.clone()).clock(now));
    let token_a = format!("Bearer {}", mint(key_a(), "jane", AUDIENCE, now()));
    let token_b = format!("Bearer {}", mint(key_b(), "joe", AUDIENCE, now()));

    assert_eq!(
        send(&mut app, &[("authorization", &token_a)]).await.0,
        StatusCode::OK
    );
    assert_eq!(
        send(&mut app, &[("authorization", &token_b)]).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(shared.current().cached(), 1);

    // Key rotation: the cached verification of token A goes with the old sidecar.
    shared.replace(sidecar_for(&key_b()));
    assert_eq!(shared.current().cached(), 0);
    assert_eq!(
        send(&mut app, &[("authorization", &token_a)]).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, body) = send(&mut app, &[("authorization", &token_b)]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.starts_with("joe\n"), "{body}");
}

#[derive(Default)]
struct Counts {
    forwarded: AtomicUsize,
    rejected: AtomicUsize,
}

impl DecisionObserver for Counts {
    fn forwarded(&self) {
        self.forwarded.fetch_add(1, Ordering::Relaxed);
    }
    fn rejected(&self, _: &Rejection) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_share_one_sidecar_and_are_counted() {
    captured();
    let counts = Arc::new(Counts::default());
    let layer = SidecarLayer::new(sidecar_for(&key_a()))
        .clock(now)
        .observer(counts.clone());
    // A plain tower service, not axum: the layer needs only `ResBody: Default`.
    let inner = tower::service_fn(|req: Request<String>| async move {
        let user = req.extensions().get::<AuthenticatedUser>().cloned();
        Ok::<_, Infallible>(Response::new(
            user.map(|u| u.name().to_owned()).unwrap_or_default(),
        ))
    });
    let service = layer.layer(inner);
    let mut tasks = Vec::new();
    for i in 0..64 {
        let mut service = service.clone();
        let token = mint(key_a(), &format!("user-{}", i % 8), AUDIENCE, now());
        tasks.push(tokio::spawn(async move {
            let mut ok = 0;
            for j in 0..50 {
                let auth = if j % 5 == 0 {
                    "Bearer e30.e30.AAAA".to_owned()
                } else {
                    format!("Bearer {token}")
                };
                let request = Request::get("/")
                    .header("authorization", auth)
                    .body(String::new())
                    .unwrap();
                let response = service.ready().await.unwrap().call(request).await.unwrap();
                if response.status() == StatusCode::OK {
                    assert_eq!(response.body(), &format!("user-{}", i % 8));
                    ok += 1;
                } else {
                    assert_eq!(response.status(), StatusCode::FORBIDDEN);
                }
            }
            ok
        }));
    }
    let mut ok = 0;
    for task in tasks {
        ok += task.await.unwrap();
    }
    assert_eq!(ok, 64 * 40);
    assert_eq!(counts.forwarded.load(Ordering::Relaxed), 64 * 40);
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 64 * 10);
}

/// A `tracing` writer that keeps everything written.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every test's TRACE output, from one global subscriber: a thread-local one (`set_default`)
/// misses events when another test thread registers the same callsite first.
fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        captured
    })
}

#[tokio::test]
async fn no_token_reaches_tracing_output() {
    let captured = captured();
    let mut app = addon().layer(SidecarLayer::new(sidecar_for(&key_a())).clock(now));
    let valid = mint(key_a(), "jane", AUDIENCE, now());
    let wrong_audience = mint(key_a(), "jane", "other", now());
    let unknown_key = mint(key_b(), "jane", AUDIENCE, now());
    for token in [&valid, &wrong_audience, &unknown_key] {
        send(&mut app, &[("authorization", &format!("Bearer {token}"))]).await;
    }
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("request rejected") && log.contains("invalid token"),
        "the rejections are logged with their reason: {log}"
    );
    for token in [&valid, &wrong_audience, &unknown_key] {
        let signature = token.rsplit('.').next().unwrap();
        assert!(!log.contains(token.as_str()), "{log}");
        assert!(!log.contains(signature), "{log}");
    }
}
