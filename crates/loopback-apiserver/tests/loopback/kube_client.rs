//! `kube::Client` against the loopback API server.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;

use futures_util::StreamExt as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent,
    WatchParams,
};
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;

use crate::support::admin_client;

fn secret(name: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([("app".to_owned(), "demo".to_owned())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "k".to_owned(),
            ByteString(b"v".to_vec()),
        )])),
        ..Default::default()
    }
}

fn api_error(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn secrets_crud_with_conflicts_and_preconditions() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = admin_client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");

    let created = secrets
        .create(&PostParams::default(), &secret("one"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.uid.as_ref().unwrap().len(), 36);
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(created.type_.as_deref(), Some("Opaque"));

    let again = secrets
        .create(&PostParams::default(), &secret("one"))
        .await
        .unwrap_err();
    let s = api_error(again);
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(s.message, "secrets \"one\" already exists");

    let got = secrets.get("one").await.unwrap();
    assert_eq!(got.data.unwrap()["k"].0, b"v");

    secrets
        .create(&PostParams::default(), &secret("two"))
        .await
        .unwrap();
    let list = secrets
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["one", "two"]);
    assert!(list.metadata.resource_version.is_some());
    let none = secrets
        .list(&ListParams::default().labels("app in (other)"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    let by_name = secrets
        .list(&ListParams::default().fields("metadata.name=two"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let by_type = secrets
        .list(&ListParams::default().fields("type=Opaque"))
        .await
        .unwrap();
    assert_eq!(by_type.items.len(), 2);

    // Replace with the current resourceVersion succeeds; with the old one it conflicts.
    let mut changed = created.clone();
    changed.string_data = Some(BTreeMap::from([("k".to_owned(), "w".to_owned())]));
    let replaced = secrets
        .replace("one", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(replaced.data.unwrap()["k"].0, b"w");
    let stale = secrets
        .replace("one", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    let s = api_error(stale);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on secrets \"one\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Merge patch.
    let patched = secrets
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["x"], "y");

    // Delete with a wrong UID precondition conflicts; with the right one succeeds.
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("00000000-0000-4000-8000-000000000000".to_owned()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let s = api_error(secrets.delete("one", &wrong).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(s.message.starts_with(
        "Operation cannot be fulfilled on secrets \"one\": Precondition failed: UID in precondition"
    ));
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    secrets.delete("one", &right).await.unwrap();

    let s = api_error(secrets.get("one").await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(s.message, "secrets \"one\" not found");
    let s = api_error(
        secrets
            .delete("one", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 404);

    // The recorded requests name the user and never hold the token.
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "DELETE" && r.status == 409)
    );
    assert!(
        requests
            .iter()
            .all(|r| r.user.as_deref() == Some("loopback-admin"))
    );
    assert!(!format!("{requests:?}").contains(server.admin_token()));
}

#[tokio::test]
async fn configmaps_and_namespaces() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = admin_client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            generate_name: Some("gen-".to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("a".to_owned(), "b".to_owned())])),
        ..Default::default()
    };
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.clone().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9);
    let mut updated = created.clone();
    updated.data = Some(BTreeMap::from([("a".to_owned(), "c".to_owned())]));
    let updated = cms
        .replace(&name, &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(updated.data.unwrap()["a"], "c");
    let s = api_error(
        cms.replace(&name, &PostParams::default(), &created)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));

    // Dry run stores nothing.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let mut other = cm.clone();
    other.metadata.generate_name = None;
    other.metadata.name = Some("dry".to_owned());
    cms.create(&dry, &other).await.unwrap();
    assert!(server.object("kube-system", "configmaps", "dry").is_none());

    // Missing name: 422 Invalid.
    let mut nameless = cm.clone();
    nameless.metadata.generate_name = None;
    let s = api_error(
        cms.create(&PostParams::default(), &nameless)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));

    // Cluster-wide lists.
    let all: Api<ConfigMap> = Api::all(client.clone());
    let names: Vec<_> = all
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .collect();
    assert!(names.contains(&"cluster-info".to_owned()) && names.contains(&name));
    let ns: Api<Namespace> = Api::all(client.clone());
    let names: Vec<_> = ns
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .collect();
    for n in ["default", "kube-system", "kube-public"] {
        assert!(names.contains(&n.to_owned()));
    }
    assert_eq!(
        ns.get("kube-public")
            .await
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Active")
    );

    // A namespace that does not exist.
    let missing: Api<ConfigMap> = Api::namespaced(client.clone(), "nope");
    let mut named = cm.clone();
    named.metadata.generate_name = None;
    named.metadata.name = Some("x".to_owned());
    let s = api_error(
        missing
            .create(&PostParams::default(), &named)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );

    // The version endpoint.
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
}

#[tokio::test]
async fn watch_sees_changes_and_too_old_versions_expire() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = admin_client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let wp = WatchParams::default().timeout(30);
    let mut stream = cms.watch(&wp, "0").await.unwrap().boxed();

    let mut cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("w".to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    cm.metadata.resource_version = created.metadata.resource_version.clone();
    cm.data = Some(BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    cms.replace("w", &PostParams::default(), &cm).await.unwrap();
    cms.delete("w", &DeleteParams::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        match stream.next().await.unwrap().unwrap() {
            WatchEvent::Added(c) => seen.push(("ADDED", c.metadata.name.unwrap())),
            WatchEvent::Modified(c) => seen.push(("MODIFIED", c.metadata.name.unwrap())),
            WatchEvent::Deleted(c) => seen.push(("DELETED", c.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("ADDED", "w".to_owned()),
            ("MODIFIED", "w".to_owned()),
            ("DELETED", "w".to_owned())
        ]
    );

    // Resuming from the creation's resourceVersion replays what came after it.
    let rv = created.metadata.resource_version.unwrap();
    let mut resumed = cms.watch(&wp, &rv).await.unwrap().boxed();
    let first = loop {
        match resumed.next().await.unwrap().unwrap() {
            WatchEvent::Bookmark(_) => continue,
            e => break e,
        }
    };
    assert!(matches!(first, WatchEvent::Modified(_)));

    // Push the creation out of the retained history: the watch answers 410 Expired.
    for i in 0..1100 {
        server
            .insert(
                "default",
                "configmaps",
                json!({"metadata": {"name": format!("filler-{i}")}}),
            )
            .unwrap();
    }
    let mut expired = cms.watch(&wp, &rv).await.unwrap().boxed();
    match expired.next().await.unwrap().unwrap() {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(s.message.starts_with("too old resource version: "));
        }
        other => panic!("expected 410, got {other:?}"),
    }
}
