//! Raw HTTP edge cases of the loopback API server: bad input, bounds, discovery, bookmarks.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use kube::Client;
use loopback_apiserver::LoopbackApiServer;
use serde_json::Value;

use crate::support::admin_client;

/// Sends one request; returns the status and the body as JSON (`Null` when not JSON).
async fn call(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), 16 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn bad_input_gets_status_errors() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let c = admin_client(&server).await;
    let secrets = "/api/v1/namespaces/default/secrets";

    let (code, s) = call(
        &c,
        "POST",
        secrets,
        "application/json",
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!(
        (code, s["kind"].as_str(), s["reason"].as_str()),
        (400, Some("Status"), Some("BadRequest"))
    );

    let big = format!(
        "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"k\":\"{}\"}}}}",
        "A".repeat(3 * 1024 * 1024)
    );
    let (code, s) = call(&c, "POST", secrets, "application/json", big.into_bytes()).await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );

    let (code, s) = call(
        &c,
        "POST",
        secrets,
        "application/json",
        br#"{"metadata":{}}"#.to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        s["message"],
        "Secret \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );

    let (code, s) = call(
        &c,
        "POST",
        secrets,
        "application/json",
        br#"{"metadata":{"name":"Bad_Name"}}"#.to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")));

    let (code, s) = call(
        &c,
        "POST",
        secrets,
        "application/json",
        br#"{"metadata":{"name":"x","namespace":"other"}}"#.to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));

    let (code, s) = call(
        &c,
        "POST",
        &format!("{secrets}?fieldValidation=Strict&dryRun=All"),
        "application/json",
        br#"{"metadata":{"name":"x"}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 201);
    assert!(s["metadata"]["uid"].is_string());
    assert!(server.object("default", "secrets", "x").is_none());

    server
        .insert(
            "default",
            "secrets",
            serde_json::json!({"metadata": {"name": "p"}}),
        )
        .unwrap();
    let (code, s) = call(
        &c,
        "PATCH",
        &format!("{secrets}/p"),
        "application/apply-patch+yaml",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(
        (code, s["reason"].as_str(), s["message"].as_str()),
        (
            422,
            Some("Invalid"),
            Some(
                "PatchOptions \"\" is invalid: fieldManager: Required value: is required for apply patch"
            )
        )
    );
    // Server-side apply: creates, merges, and a field another manager set differently is a
    // conflict unless forced.
    let apply = |manager: &str, force: bool, label: &str| {
        (
            format!(
                "{secrets}/q?fieldManager={manager}{}",
                if force { "&force=true" } else { "" }
            ),
            format!(r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"q","labels":{{"a":"{label}"}}}}}}"#)
                .into_bytes(),
        )
    };
    let (path, body) = apply("one", false, "x");
    let (code, s) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(
        (code, s["metadata"]["labels"]["a"].as_str()),
        (200, Some("x"))
    );
    let (path, body) = apply("one", false, "y");
    let (code, _) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(code, 200, "a manager may change its own fields");
    let (path, body) = apply("two", false, "y");
    let (code, _) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(code, 200, "the same value is no conflict");
    let (path, body) = apply("two", false, "z");
    let (code, s) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(
        (code, s["reason"].as_str(), s["message"].as_str()),
        (
            409,
            Some("Conflict"),
            Some("Apply failed with 1 conflict: conflict with \"one\": .metadata.labels.a")
        )
    );
    let (path, body) = apply("two", true, "z");
    let (code, s) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(
        (code, s["metadata"]["labels"]["a"].as_str()),
        (200, Some("z"))
    );
    let (path, body) = apply("one", false, "w");
    let (code, _) = call(&c, "PATCH", &path, "application/apply-patch+yaml", body).await;
    assert_eq!(code, 409, "forcing took the field over");
    let (code, s) = call(
        &c,
        "PATCH",
        &format!("{secrets}/p"),
        "application/strategic-merge-patch+json",
        br#"{"metadata":{"labels":{"a":"b"}}}"#.to_vec(),
    )
    .await;
    assert_eq!(
        (code, s["metadata"]["labels"]["a"].as_str()),
        (200, Some("b"))
    );
    let (code, s) = call(
        &c,
        "PATCH",
        &format!("{secrets}/p"),
        "application/merge-patch+json",
        br#"{"metadata":{"resourceVersion":"1"}}"#.to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (409, Some("Conflict")));
    let (code, s) = call(
        &c,
        "PATCH",
        &format!("{secrets}/missing"),
        "application/merge-patch+json",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(
        (code, s["message"].as_str()),
        (404, Some("secrets \"missing\" not found"))
    );

    let (code, s) = call(
        &c,
        "DELETE",
        &format!("{secrets}/p"),
        "application/json",
        br#"{"preconditions":{"resourceVersion":"1"}}"#.to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (409, Some("Conflict")));
    let (code, s) = call(
        &c,
        "DELETE",
        &format!("{secrets}/p"),
        "application/json",
        b"{".to_vec(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));

    let (code, s) = call(&c, "GET", "/api/v1/pods", "application/json", Vec::new()).await;
    assert_eq!((code, s["reason"].as_str()), (404, Some("NotFound")));
    let (code, _) = call(&c, "GET", "/openapi/v2", "application/json", Vec::new()).await;
    assert_eq!(code, 404);
    let (code, s) = call(
        &c,
        "GET",
        &format!("{secrets}?labelSelector=a%20in%20(b"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(
        &c,
        "GET",
        &format!("{secrets}?fieldSelector=spec.x%3Dy"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(
        &c,
        "GET",
        &format!("{secrets}?labelSelector=a%3Db,!c"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(
        (code, s["items"][0]["metadata"]["name"].as_str()),
        (200, Some("p"))
    );
}

#[tokio::test]
async fn discovery_documents() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let c = admin_client(&server).await;
    let (code, v) = call(&c, "GET", "/api", "application/json", Vec::new()).await;
    assert_eq!(
        (code, v["kind"].as_str(), v["versions"][0].as_str()),
        (200, Some("APIVersions"), Some("v1"))
    );
    let (_, v) = call(&c, "GET", "/api/v1", "application/json", Vec::new()).await;
    let resources = v["resources"].as_array().unwrap();
    let cm = resources
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap();
    assert_eq!(
        (
            cm["shortNames"][0].as_str(),
            cm["namespaced"].as_bool(),
            cm["kind"].as_str()
        ),
        (Some("cm"), Some(true), Some("ConfigMap"))
    );
    let ns = resources
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap();
    assert_eq!(
        (ns["shortNames"][0].as_str(), ns["namespaced"].as_bool()),
        (Some("ns"), Some(false))
    );
    let (_, v) = call(&c, "GET", "/apis", "application/json", Vec::new()).await;
    assert_eq!(v["kind"], "APIGroupList");
    let (_, v) = call(&c, "GET", "/version", "application/json", Vec::new()).await;
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("32"))
    );
}

#[tokio::test]
async fn watch_stream_has_bookmarks_and_times_out() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let c = admin_client(&server).await;
    let rv = server.object("", "namespaces", "default").unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!(
        "/api/v1/namespaces?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    );
    // Read the whole stream (it ends after its one-second timeout) as lines.
    let req = http::Request::builder()
        .uri(&path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = c.send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let bytes = axum::body::to_bytes(axum::body::Body::new(resp.into_body()), 1 << 20)
        .await
        .unwrap();
    let events: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // The namespaces created after `default`, then a bookmark at the current revision.
    assert_eq!(types, ["ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(events[3]["object"]["kind"], "Namespace");
}
