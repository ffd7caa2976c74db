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
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::{Audience, Issuer, Minter, Rejection, Sidecar, SigningKey, Validation};
use axum::body::Body;
use axum::extract::Extension;
use axum::routing::get;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use k8s_bootstrap::sidecar::{AuthenticatedUser, DecisionObserver, SharedSidecar, SidecarLayer};
use tower::{Layer as _, Service as _, ServiceExt};

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

/// Identity headers other than `X-Authenticated-User` (kube-apiserver's front proxy,
/// impersonation, oauth2-proxy) never reach the add-on, with or without verification slots,
/// and the sidecar's extra names apply too.
#[tokio::test]
async fn other_identity_headers_never_reach_the_addon() {
    let token = mint(key_a(), "jane", AUDIENCE, now());
    let bearer = format!("Bearer {token}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("x-remote-user", "admin"),
        ("x-remote-group", "system:masters"),
        ("x-remote-extra-scopes", "all"),
        ("x_remote_uid", "0"),
        ("impersonate-user", "admin"),
        ("impersonate-group", "system:masters"),
        ("impersonate-extra-reason", "x"),
        ("x-forwarded-user", "admin"),
        ("x-auth-request-user", "admin"),
        ("x-webauth-user", "admin"),
        ("accept", "text/html"),
    ];
    let plain = SidecarLayer::new(sidecar_for(&key_a())).clock(now);
    let slots = SidecarLayer::new(sidecar_for(&key_a()))
        .clock(now)
        .max_concurrent_verifications(std::num::NonZeroUsize::MIN);
    for layer in [plain, slots] {
        let mut app = addon().layer(layer);
        // The first request verifies the token, the second is decided from the cache.
        for _ in 0..2 {
            let (status, body) = send(&mut app, &headers).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(
                body,
                "jane\naccept=text/html\nx-authenticated-user=jane\nx-webauth-user=admin"
            );
        }
    }
    let strict = sidecar_for(&key_a())
        .strip_headers(["X-WebAuth-User"])
        .unwrap();
    let mut app = addon().layer(SidecarLayer::new(strict).clock(now));
    let (_, body) = send(&mut app, &headers).await;
    assert_eq!(body, "jane\naccept=text/html\nx-authenticated-user=jane");
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

/// A request held inside its signature check, so a test can look at other requests while it
/// takes a verification slot: on the thread named `thread`, the layer's second clock reading
/// (taken once that thread's request has a slot) sets `holding` and waits for `release`.
struct Hold {
    thread: &'static str,
    holding: std::sync::atomic::AtomicBool,
    released: Mutex<bool>,
    wake: std::sync::Condvar,
}

impl Hold {
    const fn new(thread: &'static str) -> Hold {
        Hold {
            thread,
            holding: std::sync::atomic::AtomicBool::new(false),
            released: Mutex::new(false),
            wake: std::sync::Condvar::new(),
        }
    }

    /// Called by a test clock on every reading.
    fn reading(&self) {
        thread_local!(static READINGS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
        if std::thread::current().name() == Some(self.thread) {
            let readings = READINGS.with(|r| {
                r.set(r.get() + 1);
                r.get()
            });
            if readings == 2 {
                self.holding.store(true, Ordering::SeqCst);
                let mut released = self.released.lock().unwrap();
                while !*released {
                    released = self.wake.wait(released).unwrap();
                }
            }
        }
    }

    /// Sends `request` through `service` on the holding thread, and returns once it holds its
    /// slot (at most 20 s: 4,000 looks, 5 ms apart); the thread answers with the body.
    fn hold<S>(&'static self, mut service: S, request: Request<String>) -> JoinHandle<String>
    where
        S: tower::Service<Request<String>, Response = Response<String>, Error = Infallible>
            + Send
            + 'static,
    {
        use std::task::{Context, Poll, Waker};
        let holder = std::thread::Builder::new()
            .name(self.thread.into())
            .spawn(move || {
                let mut future = std::pin::pin!(service.call(request));
                let mut cx = Context::from_waker(Waker::noop());
                loop {
                    if let Poll::Ready(response) = future.as_mut().poll(&mut cx) {
                        break response.unwrap().into_body();
                    }
                    std::thread::yield_now();
                }
            })
            .unwrap();
        for look in 0.. {
            if self.holding.load(Ordering::SeqCst) {
                break;
            }
            assert!(look < 4_000, "the holder never took the slot");
            std::thread::sleep(Duration::from_millis(5));
        }
        holder
    }

    /// Lets the held request finish.
    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.wake.notify_all();
    }
}

/// The slot test's holder.
static SLOT_HOLD: Hold = Hold::new("holder");

/// The clock of the slot test (see [`Hold`]).
fn holding_clock() -> SystemTime {
    SLOT_HOLD.reading();
    now()
}

/// With `max_concurrent_verifications(1)`: while one request's token is being checked, another
/// token that needs a check waits for the slot, and a token the sidecar already verified (or a
/// request refused before any check) is decided at once; the waiting one goes on when the slot
/// is free.
#[test]
fn known_callers_first_with_verification_slots() {
    use std::task::{Context, Poll, Waker};
    let forwarded = Arc::new(AtomicUsize::new(0));
    let inner = {
        let forwarded = forwarded.clone();
        tower::service_fn(move |request: Request<String>| {
            let forwarded = forwarded.clone();
            async move {
                forwarded.fetch_add(1, Ordering::SeqCst);
                let user = request.extensions().get::<AuthenticatedUser>().unwrap();
                Ok::<_, Infallible>(Response::new(user.name().to_owned()))
            }
        })
    };
    let layer = SidecarLayer::new(sidecar_for(&key_a()))
        .clock(holding_clock)
        .max_concurrent_verifications(std::num::NonZeroUsize::MIN);
    let request = |sub: Option<&str>| {
        let mut r = Request::get("/");
        if let Some(sub) = sub {
            let token = mint(key_a(), sub, AUDIENCE, now());
            r = r.header("authorization", format!("Bearer {token}"));
        }
        r.body(String::new()).unwrap()
    };
    let known = request(Some("known"));
    let mut known_again = Request::get("/").body(String::new()).unwrap();
    *known_again.headers_mut() = known.headers().clone();
    let body = |poll: Poll<Result<Response<String>, Infallible>>| match poll {
        Poll::Ready(Ok(response)) => Some((response.status(), response.into_body())),
        Poll::Pending => None,
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut service = layer.layer(inner.clone());

    // A token verified once is known from then on (a slot was free: no wait).
    let mut first = std::pin::pin!(service.call(known));
    let decided = body(first.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "known".to_owned())));

    // The holder's token takes the one slot and stays in its check until released.
    let holder = SLOT_HOLD.hold(layer.layer(inner), request(Some("holder")));

    // Another token that needs a check waits for the slot.
    let mut waiting = std::pin::pin!(service.call(request(Some("stranger"))));
    assert_eq!(body(waiting.as_mut().poll(&mut cx)), None);
    assert!(format!("{waiting:?}").contains("waiting for a verification slot"));
    // A known caller is decided at once, and so is a request refused before any check.
    let mut again = std::pin::pin!(service.call(known_again));
    let decided = body(again.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "known".to_owned())));
    let mut anonymous = std::pin::pin!(service.call(request(None)));
    let decided = body(anonymous.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::FORBIDDEN, String::new())));
    // The stranger still waits for the holder's slot.
    assert_eq!(body(waiting.as_mut().poll(&mut cx)), None);

    SLOT_HOLD.release();
    assert_eq!(holder.join().unwrap(), "holder");
    let decided = body(waiting.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "stranger".to_owned())));
    assert_eq!(
        forwarded.load(Ordering::SeqCst),
        4,
        "known twice, the holder, the stranger"
    );
}

/// The threads the checks test's clock was read on.
static CLOCK_READERS: Mutex<Vec<std::thread::ThreadId>> = Mutex::new(Vec::new());

/// The clock of the checks test: notes the thread that reads it.
fn recording_clock() -> SystemTime {
    CLOCK_READERS
        .lock()
        .unwrap()
        .push(std::thread::current().id());
    now()
}

/// With `checks_on_blocking_threads(true)`: a token is checked in the request's task while
/// no known caller is being served, and on one of tokio's blocking threads once one is; the
/// verified request then reaches the add-on with the identity and without the credential, and
/// a forged token is refused. Without the setting, every check stays in the task.
#[tokio::test]
async fn checks_go_to_blocking_threads_only_while_known_callers_are_served() {
    let here = std::thread::current().id();
    for aside in [true, false] {
        let layer = SidecarLayer::new(sidecar_for(&key_a()))
            .clock(recording_clock)
            .max_concurrent_verifications(std::num::NonZeroUsize::MIN)
            .checks_on_blocking_threads(aside);
        let mut service = layer.layer(addon());
        let bearer =
            |key: SigningKey, sub: &str| format!("Bearer {}", mint(key, sub, AUDIENCE, now()));
        let elsewhere = || {
            let mut readers = CLOCK_READERS.lock().unwrap();
            let found = readers.iter().any(|id| *id != here);
            readers.clear();
            found
        };

        // The first caller: no known callers yet, so checked in the task.
        let first = bearer(key_a(), "first");
        let (status, body) = send(&mut service, &[("authorization", &first)]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(!elsewhere(), "aside={aside}");
        // Now known (decided from the cache, no check).
        let (status, _) = send(&mut service, &[("authorization", &first)]).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!elsewhere(), "aside={aside}");

        // A new caller while a known one is served.
        let second = bearer(key_a(), "second");
        let (status, body) = send(&mut service, &[("authorization", &second)]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(elsewhere(), aside, "aside={aside}");
        assert!(body.starts_with("second\n"), "{body}");
        assert!(body.contains("x-authenticated-user=second"), "{body}");
        assert!(!body.contains("authorization="), "{body}");

        // A forged token is refused, wherever it is checked.
        let forged = bearer(key_b(), "first");
        let (status, body) = send(&mut service, &[("authorization", &forged)]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(elsewhere(), aside, "aside={aside}");
    }
}

/// The spare-slot test's holder.
static SPARE_HOLD: Hold = Hold::new("spare-holder");
/// Seconds the spare-slot test's clock is ahead of `now()`.
static SPARE_AHEAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The clock of the spare-slot test (see [`Hold`]), `SPARE_AHEAD` seconds after `now()`.
fn spare_clock() -> SystemTime {
    SPARE_HOLD.reading();
    now() + Duration::from_secs(SPARE_AHEAD.load(Ordering::SeqCst))
}

/// With `max_concurrent_verifications(1)` and
/// `max_concurrent_verifications_without_known_callers(2)`: while no known caller has been
/// seen, a second token that needs a check takes the spare slot beside the one in use; once a
/// known caller was decided, the next such token waits for the one slot although the spare one
/// is free; ten seconds after the last known caller, the spare slot opens again.
#[test]
fn spare_verification_slots_open_only_without_known_callers() {
    use std::task::{Context, Poll, Waker};
    let inner = tower::service_fn(|request: Request<String>| async move {
        let user = request.extensions().get::<AuthenticatedUser>().unwrap();
        Ok::<_, Infallible>(Response::new(user.name().to_owned()))
    });
    let layer = SidecarLayer::new(sidecar_for(&key_a()))
        .clock(spare_clock)
        .max_concurrent_verifications(std::num::NonZeroUsize::MIN)
        .max_concurrent_verifications_without_known_callers(
            std::num::NonZeroUsize::new(2).unwrap(),
        );
    let request = |sub: &str| {
        let token = mint(key_a(), sub, AUDIENCE, now());
        Request::get("/")
            .header("authorization", format!("Bearer {token}"))
            .body(String::new())
            .unwrap()
    };
    let body = |poll: Poll<Result<Response<String>, Infallible>>| match poll {
        Poll::Ready(Ok(response)) => Some((response.status(), response.into_body())),
        Poll::Pending => None,
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut service = layer.layer(inner);

    // The holder takes the one slot and stays in its check until released.
    let holder = SPARE_HOLD.hold(service.clone(), request("holder"));

    // No known caller yet: a stranger takes the spare slot, at once.
    let stranger = request("stranger");
    let mut stranger_again = Request::get("/").body(String::new()).unwrap();
    *stranger_again.headers_mut() = stranger.headers().clone();
    let mut first = std::pin::pin!(service.call(stranger));
    let decided = body(first.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "stranger".to_owned())));

    // Its token is known now: decided from the cache, which closes the spare slot.
    let mut known = std::pin::pin!(service.call(stranger_again));
    let decided = body(known.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "stranger".to_owned())));
    let mut waiting = std::pin::pin!(service.call(request("newcomer")));
    assert_eq!(
        body(waiting.as_mut().poll(&mut cx)),
        None,
        "waits for the one slot"
    );
    assert_eq!(body(waiting.as_mut().poll(&mut cx)), None);

    // 9 s later the spare slot is still closed; 10 s later it is open again.
    SPARE_AHEAD.store(9, Ordering::SeqCst);
    let mut closed = std::pin::pin!(service.call(request("nine seconds")));
    assert_eq!(body(closed.as_mut().poll(&mut cx)), None);
    SPARE_AHEAD.store(10, Ordering::SeqCst);
    let mut open = std::pin::pin!(service.call(request("ten seconds")));
    let decided = body(open.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "ten seconds".to_owned())));

    // The holder finishes; the waiting ones go on in turn.
    SPARE_HOLD.release();
    assert_eq!(holder.join().unwrap(), "holder");
    let decided = body(waiting.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "newcomer".to_owned())));
    let decided = body(closed.as_mut().poll(&mut cx));
    assert_eq!(decided, Some((StatusCode::OK, "nine seconds".to_owned())));
}

/// The 403's `WWW-Authenticate` for `headers`, if any, from a layer with or without
/// explanations and verification slots.
async fn refusal(layer: SidecarLayer, headers: &[(&str, &str)]) -> Option<String> {
    let mut app = addon().layer(layer);
    let mut request = Request::get("/");
    for (n, v) in headers {
        request = request.header(*n, *v);
    }
    let response = ServiceExt::<Request<Body>>::ready(&mut app)
        .await
        .unwrap()
        .call(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    response
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// Off by default, a 403 says nothing; with `explain_rejections`, it says which check failed
/// (RFC 6750's `error` and `error_description`), never the token.
#[tokio::test]
async fn rejections_are_explained_only_when_asked() {
    let expired = mint(key_a(), "jane", AUDIENCE, now() - Duration::from_secs(3600));
    let other_audience = mint(key_a(), "jane", "kube-system/other", now());
    let unknown_key = mint(key_b(), "jane", AUDIENCE, now());
    type Case<'a> = (Vec<(&'a str, String)>, &'a str, &'a str);
    let cases: [Case<'_>; 5] = [
        (vec![], "invalid_request", "no authorization header"),
        (
            vec![("authorization", "Basic amFuZTpzZWNyZXQ=".to_owned())],
            "invalid_request",
            "authorization header is not a single bearer token",
        ),
        (
            vec![("authorization", format!("Bearer {expired}"))],
            "invalid_token",
            "invalid token: ",
        ),
        (
            vec![("authorization", format!("Bearer {other_audience}"))],
            "invalid_token",
            "invalid token: ",
        ),
        (
            vec![("authorization", format!("Bearer {unknown_key}"))],
            "invalid_token",
            "invalid token: ",
        ),
    ];
    for (headers, error, description) in &cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let quiet = SidecarLayer::new(sidecar_for(&key_a())).clock(now);
        assert_eq!(refusal(quiet, &headers).await, None);
        let plain = SidecarLayer::new(sidecar_for(&key_a()))
            .clock(now)
            .explain_rejections(true);
        let slots = SidecarLayer::new(sidecar_for(&key_a()))
            .clock(now)
            .explain_rejections(true)
            .max_concurrent_verifications(std::num::NonZeroUsize::MIN);
        for layer in [plain, slots] {
            let value = refusal(layer, &headers).await.unwrap();
            let prefix = format!("Bearer error=\"{error}\", error_description=\"{description}");
            assert!(value.starts_with(&prefix), "{value}");
            assert!(value.ends_with('"'), "{value}");
            // The quoted string holds no quote or backslash of its own.
            let inner = &value[prefix.len() - description.len()..value.len() - 1];
            assert!(!inner.contains('"') && !inner.contains('\\'), "{value}");
            for (_, v) in &headers {
                let token = v.trim_start_matches("Bearer ").trim_start_matches("Basic ");
                for part in token.split('.') {
                    assert!(part.len() < 8 || !value.contains(part), "{value}");
                }
            }
        }
    }
}
