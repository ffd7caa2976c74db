//! `SelfSubjectReview` (`authentication.k8s.io/v1`): who the API server thinks the caller is, as
//! `kubectl auth whoami` asks (kube-apiserver's `pkg/registry/authentication/selfsubjectreview`).

use std::time::SystemTime;

use serde_json::{Value, json};

use super::auth::User;
use super::ids;
use super::status::ApiError;

/// The `apiVersion` of the review.
const API_VERSION: &str = "authentication.k8s.io/v1";
/// The kind of the review.
const KIND: &str = "SelfSubjectReview";

/// The created review for `body` (a `SelfSubjectReview`, whose content does not matter): the
/// requester's user name, UID and extra when they have them, and groups, stamped `now`. Nothing is
/// stored.
pub(crate) fn create(body: &Value, user: &User, now: SystemTime) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    match body.get("kind").and_then(Value::as_str) {
        None | Some("" | KIND) => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the object provided is not a {KIND}"
            )));
        }
    }
    match body.get("apiVersion").and_then(Value::as_str) {
        None | Some("" | API_VERSION) => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data does not match the expected API version ({API_VERSION})"
            )));
        }
    }
    let mut user_info = json!({"username": user.name, "groups": user.groups});
    if let Some(map) = user_info.as_object_mut() {
        if let Some(uid) = user.uid.as_ref().filter(|u| !u.is_empty()) {
            map.insert("uid".to_owned(), Value::String(uid.clone()));
        }
        if !user.extra.is_empty() {
            map.insert("extra".to_owned(), json!(user.extra));
        }
    }
    Ok(json!({
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": {"creationTimestamp": ids::timestamp(now)},
        "status": {"userInfo": user_info},
    }))
}
