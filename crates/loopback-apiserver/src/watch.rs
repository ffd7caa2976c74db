//! Watches: a chunked stream of JSON watch events.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::{Interval, Sleep};

use super::handler::{Shared, lock};
use super::selector::Selector;
use super::status::ApiError;
use super::store::{Event, EventType, Resource, WatchStart};

/// Most watches open at once.
pub(crate) const MAX_WATCHERS: usize = 128;
/// The longest a watch stays open (and the default `timeoutSeconds`).
const MAX_TIMEOUT: Duration = Duration::from_secs(1800);
/// Interval between BOOKMARK events when the client allows them.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// The watch query parameters.
pub(crate) struct WatchParams {
    pub(crate) resource_version: Option<String>,
    pub(crate) bookmarks: bool,
    pub(crate) timeout_seconds: Option<String>,
}

/// Counts an open watch; the count drops when the stream does.
struct WatcherGuard(Arc<AtomicUsize>);

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct Filter {
    resource: Resource,
    namespace: Option<String>,
    selector: Selector,
}

impl Filter {
    fn matches(&self, e: &Event) -> bool {
        e.resource == self.resource
            && self.namespace.as_ref().is_none_or(|n| *n == e.namespace)
            && self.selector.matches(&e.object)
    }
}

struct State {
    pending: VecDeque<Bytes>,
    rx: broadcast::Receiver<Arc<Event>>,
    deadline: Pin<Box<Sleep>>,
    bookmark: Option<Interval>,
    filter: Filter,
    last_rv: u64,
    done: bool,
    _guard: WatcherGuard,
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

fn bookmark(resource: Resource, rv: u64) -> Bytes {
    line(
        "BOOKMARK",
        &json!({
            "kind": resource.kind(),
            "apiVersion": resource.group_version(),
            "metadata": {"resourceVersion": rv.to_string()},
        }),
    )
}

/// Start a watch: the response streams until the timeout, the server stops, or the client goes.
pub(crate) fn start(
    shared: &Arc<Shared>,
    resource: Resource,
    namespace: Option<String>,
    selector: Selector,
    params: &WatchParams,
) -> Result<Response, ApiError> {
    let from = match params.resource_version.as_deref() {
        None | Some("" | "0") => None,
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            let shown: String = s.chars().take(64).collect();
            ApiError::bad_request(format!("invalid resource version: {shown:?}"))
        })?),
    };
    let timeout = match params.timeout_seconds.as_deref() {
        // 0, like no value, means the server's default, as in kube-apiserver.
        None | Some("" | "0") => MAX_TIMEOUT,
        Some(s) => {
            let secs = s.parse::<u64>().map_err(|_| {
                ApiError::bad_request("timeoutSeconds must be a non-negative integer")
            })?;
            Duration::from_secs(secs).min(MAX_TIMEOUT)
        }
    };
    if shared.watchers.fetch_add(1, Ordering::AcqRel) >= MAX_WATCHERS {
        shared.watchers.fetch_sub(1, Ordering::AcqRel);
        return Err(ApiError::too_many(
            "loopback API server (test double): too many open watches",
        ));
    }
    let guard = WatcherGuard(Arc::clone(&shared.watchers));
    let filter = Filter {
        resource,
        namespace,
        selector,
    };
    let mut pending = VecDeque::new();
    let (rx, last_rv, too_old) = {
        let store = lock(&shared.store);
        let (start, rx) = store.watch(from);
        let current = store.revision();
        match start {
            WatchStart::TooOld { requested, oldest } => (rx, current, Some((requested, oldest))),
            WatchStart::Replay(events) => {
                match from {
                    // No resourceVersion: synthetic ADDED events for the current state.
                    None => {
                        let ns = filter.namespace.as_deref();
                        for object in store.list(resource, ns) {
                            if filter.selector.matches(&object) {
                                pending.push_back(line("ADDED", &object));
                            }
                        }
                    }
                    Some(_) => {
                        for e in events.iter().filter(|e| filter.matches(e)) {
                            pending.push_back(line(e.kind.as_str(), &e.object));
                        }
                    }
                }
                (rx, current, None)
            }
        }
    };
    let done = if let Some((requested, oldest)) = too_old {
        let status = ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
        pending.push_back(line("ERROR", &status.to_status()));
        true
    } else {
        false
    };
    let bookmark = if params.bookmarks && !done {
        pending.push_back(bookmark(resource, last_rv));
        let start = tokio::time::Instant::now()
            .checked_add(BOOKMARK_INTERVAL)
            .unwrap_or_else(tokio::time::Instant::now);
        Some(tokio::time::interval_at(start, BOOKMARK_INTERVAL))
    } else {
        None
    };
    let state = State {
        pending,
        rx,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        bookmark,
        filter,
        last_rv,
        done,
        _guard: guard,
    };
    let stream = futures_util::stream::unfold(state, next);
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

async fn next(mut st: State) -> Option<(Result<Bytes, Infallible>, State)> {
    loop {
        if let Some(b) = st.pending.pop_front() {
            return Some((Ok(b), st));
        }
        if st.done {
            return None;
        }
        let State {
            pending,
            rx,
            deadline,
            bookmark: interval,
            filter,
            last_rv,
            done,
            ..
        } = &mut st;
        let tick = async {
            match interval.as_mut() {
                Some(i) => {
                    i.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = deadline.as_mut() => *done = true,
            () = tick => pending.push_back(bookmark(filter.resource, *last_rv)),
            r = rx.recv() => match r {
                Ok(e) if e.kind == EventType::Expired => {
                    let status = ApiError::expired(format!(
                        "too old resource version: {last_rv} ({})",
                        e.rv.saturating_add(1)
                    ));
                    pending.push_back(line("ERROR", &status.to_status()));
                    *done = true;
                }
                Ok(e) => {
                    if e.rv > *last_rv && filter.matches(&e) {
                        pending.push_back(line(e.kind.as_str(), &e.object));
                    }
                    if e.rv > *last_rv {
                        *last_rv = e.rv;
                    }
                }
                // A watcher that fell behind is ended; the client re-lists, as after a
                // server-side watch timeout.
                Err(RecvError::Lagged(_) | RecvError::Closed) => *done = true,
            },
        }
    }
}
