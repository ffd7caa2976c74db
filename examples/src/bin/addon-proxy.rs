//! Add-on authentication demo over real sockets on loopback.
//!
//! * a "dashboard" (plain HTTP) that greets the `X-Authenticated-User` it receives and reports
//!   whether any credential reached it;
//! * a forward proxy in front of it built on hyper 1 (tokio, current-thread runtime) whose every
//!   request goes through `addon_jwt::Sidecar::decide_header_map`, which edits the request's
//!   headers in place: 403 on failure, otherwise the request is forwarded with the bearer token
//!   removed and `X-Authenticated-User` set;
//! * a client that mints tokens as the API server would (`addon_jwt::Minter`, ES256 key made with
//!   rcgen) and calls through the proxy: a good token is accepted; an expired token, a wrong
//!   audience, a forged signature and a spoofed `X-Authenticated-User` are all rejected or
//!   neutralised.
//!
//! Prints one line per scenario and exits non-zero if any scenario does not behave as expected.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_bootstrap_examples::{BoxError, HttpsServer, Response, http_request};

const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";

/// (name, request headers, expected status, expected body).
type Scenario<'a> = (&'a str, Vec<(&'a str, String)>, u16, Option<&'a str>);

#[allow(clippy::disallowed_methods)] // a real proxy reads the wall clock; the library does not
fn wall_clock() -> SystemTime {
    SystemTime::now()
}

fn main() {
    match run() {
        Ok(true) => println!("addon-proxy: all scenarios behaved as expected"),
        Ok(false) => {
            eprintln!("addon-proxy: a scenario did not behave as expected");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("addon-proxy: {e}");
            std::process::exit(2);
        }
    }
}

fn run() -> Result<bool, BoxError> {
    // The add-on: greets whoever the proxy says the user is.
    let dashboard = HttpsServer::start_plain(|req| {
        let user = req.header("X-Authenticated-User").unwrap_or("<nobody>");
        let users = req
            .headers
            .iter()
            .filter(|(n, _)| {
                n.replace('_', "-")
                    .eq_ignore_ascii_case("x-authenticated-user")
            })
            .count();
        let credential = req.header("Authorization").is_some();
        Response::new(
            200,
            "text/plain",
            format!("hello, {user} (user headers: {users}, credential seen: {credential})"),
        )
    })?;

    // The API server's key pair: ES256, PKCS#8 PEM from rcgen.
    let key_pair = rcgen::KeyPair::generate()?;
    let signing_key = SigningKey::from_pkcs8_pem(&key_pair.serialize_pem())?;
    // The proxy is configured with the public key only.
    let keys =
        addon_jwt::KeySet::from_pem(&signing_key.public_key_pem()?, signing_key.algorithm())?;
    let sidecar = Sidecar::new(
        keys,
        Validation::new(Issuer::new(ISSUER), Audience::new(AUDIENCE)),
    );
    let proxy = start_proxy(sidecar, dashboard.addr())?;
    let proxy_url = format!("http://{proxy}/ui/");

    let mut minter = Minter::new(signing_key, Issuer::new(ISSUER));
    let now = wall_clock();
    let good = minter.mint("jane", &Audience::new(AUDIENCE), now)?;
    let expired = minter.signing_key().sign(
        &Issuer::new(ISSUER),
        "jane",
        &Audience::new(AUDIENCE),
        now.checked_sub(Duration::from_secs(120))
            .ok_or("clock before 1970")?,
        Duration::from_secs(60),
    )?;
    let wrong_audience = minter.mint("jane", &Audience::new("kube-system/grafana"), now)?;
    let forger = SigningKey::from_pkcs8_pem(&rcgen::KeyPair::generate()?.serialize_pem())?;
    let forged = forger.sign(
        &Issuer::new(ISSUER),
        "admin",
        &Audience::new(AUDIENCE),
        now,
        Duration::from_secs(60),
    )?;

    let bearer = |t: &addon_jwt::BearerToken| format!("Bearer {}", t.expose_secret());
    let good_auth = bearer(&good);
    let scenarios: Vec<Scenario<'_>> = vec![
        (
            "good token",
            vec![("Authorization", good_auth.clone())],
            200,
            Some("hello, jane (user headers: 1, credential seen: false)"),
        ),
        (
            "expired token",
            vec![("Authorization", bearer(&expired))],
            403,
            None,
        ),
        (
            "wrong audience",
            vec![("Authorization", bearer(&wrong_audience))],
            403,
            None,
        ),
        (
            "forged signature",
            vec![("Authorization", bearer(&forged))],
            403,
            None,
        ),
        (
            "spoofed X-Authenticated-User with a good token",
            vec![
                ("X-Authenticated-User", "admin".to_owned()),
                ("Authorization", good_auth.clone()),
                ("X_Authenticated_User", "root".to_owned()),
                ("Connection", "X-Authenticated-User".to_owned()),
            ],
            200,
            Some("hello, jane (user headers: 1, credential seen: false)"),
        ),
        (
            "spoofed X-Authenticated-User without a token",
            vec![("X-Authenticated-User", "admin".to_owned())],
            403,
            None,
        ),
        (
            "two Authorization headers",
            vec![
                ("Authorization", good_auth.clone()),
                ("Authorization", good_auth.clone()),
            ],
            403,
            None,
        ),
    ];

    let mut all_ok = true;
    for (name, headers, want_status, want_body) in scenarios {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let response = http_request(&proxy_url, "GET", &headers, b"")?;
        let body = response.text().trim_end().to_owned();
        let ok = response.status == want_status && want_body.is_none_or(|b| body == b);
        all_ok &= ok;
        println!(
            "{} {name}: {} {body}",
            if ok { "ok  " } else { "FAIL" },
            response.status
        );
    }

    // Many clients at once, each with its own user, plus forged tokens among them: the one
    // sidecar, shared without a lock, answers each with its own user or 403.
    let users: Vec<String> = (0..8).map(|i| format!("user{i}")).collect();
    let mut tokens = Vec::new();
    for user in &users {
        tokens.push((
            user.clone(),
            bearer(&minter.mint(user, &Audience::new(AUDIENCE), now)?),
        ));
    }
    let forged_auth = bearer(&forged);
    let concurrent_ok = std::thread::scope(|scope| {
        let handles: Vec<_> = tokens
            .iter()
            .map(|(user, auth)| {
                let (proxy_url, forged_auth) = (&proxy_url, &forged_auth);
                scope.spawn(move || -> Result<bool, String> {
                    let mut ok = true;
                    for _ in 0..4 {
                        let good = http_request(proxy_url, "GET", &[("Authorization", auth)], b"")
                            .map_err(|e| e.to_string())?;
                        ok &= good.status == 200
                            && good.text().starts_with(&format!("hello, {user} "));
                        let bad =
                            http_request(proxy_url, "GET", &[("Authorization", forged_auth)], b"")
                                .map_err(|e| e.to_string())?;
                        ok &= bad.status == 403;
                    }
                    Ok(ok)
                })
            })
            .collect();
        handles
            .into_iter()
            .all(|h| h.join().is_ok_and(|r| r.is_ok_and(|ok| ok)))
    });
    all_ok &= concurrent_ok;
    println!(
        "{} concurrent clients: 8 users x 4 requests, forged tokens between",
        if concurrent_ok { "ok  " } else { "FAIL" }
    );
    Ok(all_ok)
}

/// Starts the hyper forward proxy on a loopback port, in its own thread with a current-thread
/// tokio runtime, and returns its address.
fn start_proxy(sidecar: Sidecar, upstream: SocketAddr) -> Result<SocketAddr, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    // One sidecar for every connection and request: it decides through `&self` (its cache is
    // sharded inside), so requests never queue behind one another's signature checks.
    let sidecar = Arc::new(sidecar);
    std::thread::spawn(move || {
        runtime.block_on(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let sidecar = sidecar.clone();
                tokio::task::spawn(async move {
                    let service = service_fn(move |req| handle(req, sidecar.clone(), upstream));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    Ok(addr)
}

async fn handle(
    req: hyper::Request<Incoming>,
    sidecar: Arc<Sidecar>,
    upstream: SocketAddr,
) -> Result<hyper::Response<Full<Bytes>>, BoxError> {
    let (mut parts, body) = req.into_parts();
    // The decision edits the request's own headers in place: credentials, spoofed users,
    // hop-by-hop and Connection-named headers out, then `x-authenticated-user` in. On rejection
    // the map comes back empty.
    let decision = sidecar.decide_header_map(&mut parts.headers, wall_clock());
    if let Err(rejection) = decision {
        // The reason is safe to log: it never contains the token.
        eprintln!("proxy: {rejection}");
        return Ok(hyper::Response::builder()
            .status(rejection.status())
            .header("Content-Type", "text/plain")
            .body(Full::new(Bytes::from("forbidden\n")))?);
    }
    let body = body.collect().await?.to_bytes();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let mut upstream_req = hyper::Request::builder()
        .method(parts.method)
        .uri(path)
        .body(Full::new(body))?;
    *upstream_req.headers_mut() = parts.headers;

    let stream = tokio::net::TcpStream::connect(upstream).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::task::spawn(async move {
        let _ = connection.await;
    });
    let response = sender.send_request(upstream_req).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut out = hyper::Response::from_parts(parts, Full::new(body));
    // Hop-by-hop headers of the upstream response stay on that hop.
    for name in ["connection", "keep-alive", "transfer-encoding"] {
        out.headers_mut().remove(name);
    }
    Ok(out)
}
