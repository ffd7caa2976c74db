//! A plain-HTTP upstream for the Service proxy tests: it answers each request with what it
//! received and records it.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "each test binary uses some of the helpers; test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

/// What the upstream received: one JSON object per request.
pub(crate) type Seen = Arc<Mutex<Vec<Value>>>;

/// A plain-HTTP upstream on 127.0.0.1 that answers each request with what it received (method,
/// path and query, headers, body) and records it. `/redirect` answers 302 to `/login` with a
/// CORS header; `/hang` never answers; `/stream` sends one chunk and then nothing.
pub(crate) async fn upstream() -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .fallback(echo)
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

async fn echo(State(seen): State<Seen>, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let on_upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let mut headers = BTreeMap::<String, Vec<String>>::new();
    for (name, value) in &parts.headers {
        headers
            .entry(name.as_str().to_owned())
            .or_default()
            .push(value.to_str().unwrap_or("<binary>").to_owned());
    }
    let record = json!({
        "method": parts.method.as_str(),
        "uri": parts.uri.to_string(),
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
    });
    seen.lock().unwrap().push(record.clone());
    match parts.uri.path() {
        "/redirect" => (
            http::StatusCode::FOUND,
            [
                ("location", "/login?next=1"),
                ("access-control-allow-origin", "*"),
                ("x-kept", "yes"),
            ],
        )
            .into_response(),
        "/hang" => std::future::pending().await,
        // Protocol `echo`: after the 101, every byte comes back.
        "/upgrade" => {
            let on_upgrade = on_upgrade.unwrap();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(on_upgrade.await.unwrap());
                let (mut reader, mut writer) = tokio::io::split(io);
                let _ = tokio::io::copy(&mut reader, &mut writer).await;
            });
            (
                http::StatusCode::SWITCHING_PROTOCOLS,
                [("connection", "upgrade"), ("upgrade", "echo")],
            )
                .into_response()
        }
        "/stream" => {
            let chunks = futures_util::stream::once(async {
                Ok::<_, Infallible>(bytes::Bytes::from_static(b"first chunk"))
            })
            .chain(futures_util::stream::pending());
            Response::new(Body::from_stream(chunks))
        }
        _ => axum::Json(record).into_response(),
    }
}
