//! The add-auth tower layer in front of a stub Service proxy that records what it receives:
//! the injected token verifies for the user and the Service, the client's own credentials never
//! reach the add-on, pass-through is untouched, the rate limit answers 429 with `Retry-After`
//! and a `metav1.Status`, and the counters move.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code"
)]

use std::cell::Cell;
use std::convert::Infallible;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::add_auth::{AddAuth, ProxiedService};
use addon_jwt::{Audience, Issuer, Minter, RequestUser, SigningKey, Validation, verify};
use axum::body::Body;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use k8s_bootstrap::addon_auth::AddAuthLayer;
use prometheus_client::registry::Registry;
use tower::{Layer as _, ServiceExt as _};

const ED25519: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://apiserver.example";
const NOW_SECS: u64 = 1_700_000_000;
const PATH: &str = "/api/v1/namespaces/kube-system/services/https:dashboard:8443/proxy/ui/";

thread_local! {
    /// Seconds past `NOW_SECS` the layer's clock reads (each `#[tokio::test]` runs on its own
    /// thread, so tests do not see each other's clocks).
    static OFFSET: Cell<u64> = const { Cell::new(0) };
}

fn clock() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW_SECS + OFFSET.with(Cell::get))
}

fn advance(secs: u64) {
    OFFSET.with(|o| o.set(o.get() + secs));
}

fn key() -> SigningKey {
    SigningKey::from_pkcs8_pem(ED25519).unwrap()
}

fn layer() -> AddAuthLayer {
    AddAuthLayer::new(AddAuth::new(Minter::new(key(), Issuer::new(ISSUER)))).clock(clock)
}

/// What the stub proxy received.
#[derive(Debug, Clone)]
struct Received {
    uri: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

type Log = Arc<Mutex<Vec<Received>>>;

/// A Service proxy that records each request and answers 200.
fn stub(
    log: Log,
) -> impl tower::Service<
    Request<Body>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |req: Request<Body>| {
        let log = Arc::clone(&log);
        async move {
            let uri = req.uri().to_string();
            let headers = req
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
                .collect();
            let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
            log.lock().unwrap().push(Received { uri, headers, body });
            Ok::<_, Infallible>(Response::new(Body::from("proxied")))
        }
    })
}

/// A request as the server hands it to its Service proxy: authenticated, path resolved.
fn proxied(query: &str, user: &str) -> Request<Body> {
    let mut request = Request::post(format!("{PATH}{query}"))
        .header("accept", "application/json")
        .header("authorization", "Bearer the-user-s-own-credential")
        .header("x-authenticated-user", "admin")
        .header("x_authenticated_user", "admin")
        .body(Body::from("payload"))
        .unwrap();
    request.extensions_mut().insert(RequestUser::new(user));
    request
        .extensions_mut()
        .insert(ProxiedService::new("kube-system", "dashboard"));
    request
}

fn header<'r>(r: &'r Received, name: &str) -> Vec<&'r [u8]> {
    r.headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_slice())
        .collect()
}

fn bearer(r: &Received) -> String {
    let values = header(r, "authorization");
    assert_eq!(values.len(), 1, "exactly one Authorization");
    let value = std::str::from_utf8(values[0]).unwrap();
    value.strip_prefix("Bearer ").unwrap().to_owned()
}

async fn json(response: Response<Body>) -> serde_json::Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn the_injected_token_verifies_for_the_user_and_the_service() {
    let log = Log::default();
    let layer = layer();
    let response = layer
        .layer(stub(Arc::clone(&log)))
        .oneshot(proxied("?add-auth=true&watch=1", "jane"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let received = log.lock().unwrap()[0].clone();
    assert_eq!(received.uri, format!("{PATH}?watch=1"));
    assert_eq!(received.body, b"payload");
    let token = bearer(&received);
    assert_ne!(token, "the-user-s-own-credential");
    let keys = key().public_key_set().unwrap();
    let validation = Validation::new(Issuer::new(ISSUER), Audience::new("kube-system/dashboard"));
    let claims = verify(&token, &keys, &validation, clock()).unwrap();
    assert_eq!(claims.subject(), "jane");
    assert_eq!(claims.audiences(), ["kube-system/dashboard"]);
    assert_eq!(claims.expires_at_unix(), (NOW_SECS + 60) as i64);
}

#[tokio::test]
async fn the_client_s_credentials_and_identity_never_reach_the_add_on() {
    let log = Log::default();
    layer()
        .layer(stub(Arc::clone(&log)))
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    let received = log.lock().unwrap()[0].clone();
    assert_eq!(received.uri, PATH, "no query left, no `?`");
    for (name, value) in &received.headers {
        assert_ne!(
            value.as_slice(),
            b"Bearer the-user-s-own-credential",
            "{name}"
        );
        assert_ne!(value.as_slice(), b"admin", "{name}");
    }
    assert!(header(&received, "x-authenticated-user").is_empty());
    assert!(header(&received, "x_authenticated_user").is_empty());
    assert_eq!(header(&received, "accept"), [b"application/json"]);
}

#[tokio::test]
async fn without_add_auth_true_the_request_is_forwarded_byte_identical() {
    for query in [
        "",
        "?watch=1",
        "?add-auth=false",
        "?Add-Auth=true",
        "?add-auth=TRUE",
        "?add-auth=true&add-auth=false",
    ] {
        let log = Log::default();
        let layer = layer();
        layer
            .layer(stub(Arc::clone(&log)))
            .oneshot(proxied(query, "jane"))
            .await
            .unwrap();
        let received = log.lock().unwrap()[0].clone();
        assert_eq!(received.uri, format!("{PATH}{query}"));
        assert_eq!(received.body, b"payload");
        let expected: Vec<(String, Vec<u8>)> = [
            ("accept", "application/json"),
            ("authorization", "Bearer the-user-s-own-credential"),
            ("x-authenticated-user", "admin"),
            ("x_authenticated_user", "admin"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
        .collect();
        assert_eq!(received.headers, expected, "{query}");
        let m = layer.metrics();
        assert_eq!(
            (m.tokens_minted(), m.cache_hits(), m.rate_limited()),
            (0, 0, 0)
        );
    }
}

#[tokio::test]
async fn over_the_limit_the_answer_is_429_with_retry_after_and_a_status() {
    let log = Log::default();
    let layer = AddAuthLayer::new(
        AddAuth::new(Minter::new(key(), Issuer::new(ISSUER)))
            .rate(NonZeroU32::new(1).unwrap(), Duration::from_secs(5))
            .burst(NonZeroU32::new(2).unwrap()),
    )
    .clock(clock);
    let service = layer.layer(stub(Arc::clone(&log)));
    for _ in 0..2 {
        let r = service
            .clone()
            .oneshot(proxied("?add-auth=true", "jane"))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    let refused = service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "5");
    assert_eq!(refused.headers()["content-type"], "application/json");
    let body = json(refused).await;
    assert_eq!(
        body,
        serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "too many add-auth requests, please try again in 5 seconds",
            "reason": "TooManyRequests",
            "details": { "retryAfterSeconds": 5 },
            "code": 429,
        })
    );
    assert_eq!(
        log.lock().unwrap().len(),
        2,
        "the refused request was not forwarded"
    );
    // Another user is not limited by jane's bucket; pass-through is never limited.
    let bob = service
        .clone()
        .oneshot(proxied("?add-auth=true", "bob"))
        .await
        .unwrap();
    assert_eq!(bob.status(), StatusCode::OK);
    let plain = service.clone().oneshot(proxied("", "jane")).await.unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    // Five seconds on, jane may again.
    advance(5);
    let again = service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(layer.metrics().rate_limited(), 1);
}

#[tokio::test]
async fn the_status_body_field_order_is_kube_apiserver_s() {
    let layer = AddAuthLayer::new(
        AddAuth::new(Minter::new(key(), Issuer::new(ISSUER)))
            .rate(NonZeroU32::new(1).unwrap(), Duration::from_secs(60))
            .burst(NonZeroU32::new(1).unwrap()),
    )
    .clock(clock);
    let service = layer.layer(stub(Log::default()));
    let _ = service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    let refused = service
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    let bytes = refused.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        std::str::from_utf8(&bytes).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too many add-auth requests, please try again in 60 seconds","reason":"TooManyRequests","details":{"retryAfterSeconds":60},"code":429}"#
    );
}

#[tokio::test]
async fn the_counters_move_and_the_token_is_reminted_after_half_its_lifetime() {
    let log = Log::default();
    let layer = layer();
    let mut registry = Registry::default();
    layer.register(&mut registry);
    let service = layer.layer(stub(Arc::clone(&log)));
    service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    advance(29);
    service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    advance(1);
    service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    let received = log.lock().unwrap().clone();
    let tokens: Vec<String> = received.iter().map(bearer).collect();
    assert_eq!(tokens[0], tokens[1], "29 s on: the cached token");
    assert_ne!(tokens[1], tokens[2], "30 s on, half of 60: a new one");
    let keys = key().public_key_set().unwrap();
    let validation = Validation::new(Issuer::new(ISSUER), Audience::new("kube-system/dashboard"));
    let fresh = verify(&tokens[2], &keys, &validation, clock()).unwrap();
    assert_eq!(fresh.issued_at_unix(), (NOW_SECS + 30) as i64);

    let m = layer.metrics();
    assert_eq!(
        (m.tokens_minted(), m.cache_hits(), m.rate_limited()),
        (2, 1, 0)
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("add_auth_tokens_minted_total 2"), "{text}");
    assert!(text.contains("add_auth_token_cache_hits_total 1"), "{text}");
    assert!(
        text.contains("add_auth_rate_limited_requests_total 0"),
        "{text}"
    );
    assert!(!text.contains(&tokens[2]), "no token in the metrics");
}

#[tokio::test]
async fn a_request_without_the_extensions_is_answered_500_and_not_forwarded() {
    let log = Log::default();
    let layer = layer();
    let service = layer.layer(stub(Arc::clone(&log)));
    for query in ["?add-auth=true", ""] {
        let mut only_user = proxied(query, "jane");
        only_user.extensions_mut().remove::<ProxiedService>();
        let mut only_service = proxied(query, "jane");
        only_service.extensions_mut().remove::<RequestUser>();
        for request in [only_user, only_service] {
            let response = service.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
            let body = json(response).await;
            assert_eq!(body["reason"], "InternalError");
            assert_eq!(body["code"], 500);
        }
    }
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(layer.metrics().errors(), 4);
}

#[tokio::test]
async fn a_user_name_that_cannot_be_sent_is_answered_403_and_not_forwarded() {
    let log = Log::default();
    let service = layer().layer(stub(Arc::clone(&log)));
    for name in ["", "ja\nne", "jan\u{e9}", " jane"] {
        let response = service
            .clone()
            .oneshot(proxied("?add-auth=true", name))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{name:?}");
        let body = json(response).await;
        assert_eq!(body["reason"], "Forbidden");
    }
    assert!(log.lock().unwrap().is_empty());
}

/// The layer around an axum router, as the API-server double wires it (axum's body types).
#[tokio::test]
async fn the_layer_wraps_an_axum_router() {
    use axum::routing::any;
    let router = axum::Router::new()
        .route(
            "/api/v1/namespaces/{ns}/services/{svc}/proxy/{*rest}",
            any(|headers: http::HeaderMap| async move {
                headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().starts_with("Bearer ey").to_string())
                    .unwrap_or_default()
            }),
        )
        .layer(layer());
    let response = router
        .oneshot(proxied("?add-auth=true", "jane"))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&bytes[..], b"true");
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

/// No minted token, no client credential and no user name reaches the layer's TRACE output,
/// whichever way a request goes (injected, refused by the limit, refused for its user name,
/// missing extensions).
#[tokio::test]
async fn no_token_or_credential_reaches_tracing_output() {
    // One global subscriber (only this test installs one): a thread-local one can miss
    // events when another test thread registers the same callsite first.
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    let captured = CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        captured
    });
    let log = Log::default();
    let layer = AddAuthLayer::new(
        AddAuth::new(Minter::new(key(), Issuer::new(ISSUER)))
            .rate(NonZeroU32::new(1).unwrap(), Duration::from_secs(60))
            .burst(NonZeroU32::new(1).unwrap()),
    )
    .clock(clock);
    let service = layer.layer(stub(Arc::clone(&log)));
    let ok = service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane-the-user"))
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let limited = service
        .clone()
        .oneshot(proxied("?add-auth=true", "jane-the-user"))
        .await
        .unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let bad_name = service
        .clone()
        .oneshot(proxied("?add-auth=true", "bad\nname-of-user"))
        .await
        .unwrap();
    assert_eq!(bad_name.status(), StatusCode::FORBIDDEN);
    let mut bare = proxied("?add-auth=true", "jane-the-user");
    bare.extensions_mut().remove::<ProxiedService>();
    let missing = service.clone().oneshot(bare).await.unwrap();
    assert_eq!(missing.status(), StatusCode::INTERNAL_SERVER_ERROR);

    let token = bearer(&log.lock().unwrap()[0]);
    let output = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        output.contains("rate limited") && output.contains("request refused"),
        "the events were captured: {output}"
    );
    for part in token.split('.') {
        assert!(!output.contains(part), "{output}");
    }
    assert!(!output.contains("the-user-s-own-credential"), "{output}");
    assert!(!output.contains("name-of-user"), "{output}");
    assert!(!output.contains("jane-the-user"), "{output}");
}
