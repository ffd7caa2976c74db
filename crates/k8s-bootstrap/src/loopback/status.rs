//! `metav1.Status` errors, phrased as kube-apiserver phrases them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A failed API call: the HTTP status and the `Status` object the loopback double answers with.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    pub(crate) details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: String, details: Option<Value>) -> ApiError {
        ApiError {
            code,
            reason,
            message,
            details,
        }
    }

    /// `secrets "x" not found`.
    pub(crate) fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{resource} {name:?} not found"),
            Some(json!({"name": name, "kind": resource})),
        )
    }

    /// `secrets "x" already exists`.
    pub(crate) fn already_exists(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{resource} {name:?} already exists"),
            Some(json!({"name": name, "kind": resource})),
        )
    }

    /// `Operation cannot be fulfilled on secrets "x": <why>`.
    pub(crate) fn conflict(resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {resource} {name:?}: {why}"),
            Some(json!({"name": name, "kind": resource})),
        )
    }

    /// Server-side apply's conflicts: `(manager, .field.path)` pairs.
    pub(crate) fn apply_conflicts(
        resource: super::store::Resource,
        name: &str,
        conflicts: &[(String, String)],
    ) -> ApiError {
        let message = match conflicts {
            [(manager, path)] => {
                format!("Apply failed with 1 conflict: conflict with {manager:?}: {path}")
            }
            _ => {
                let mut by_manager: Vec<(&str, Vec<&str>)> = Vec::new();
                for (manager, path) in conflicts {
                    match by_manager.iter_mut().find(|(m, _)| m == manager) {
                        Some((_, paths)) => paths.push(path),
                        None => by_manager.push((manager, vec![path])),
                    }
                }
                let mut message = format!("Apply failed with {} conflicts:", conflicts.len());
                for (manager, paths) in by_manager {
                    message.push_str(&format!(" conflicts with {manager:?}:"));
                    for path in paths {
                        message.push_str(&format!("\n- {path}"));
                    }
                }
                message
            }
        };
        ApiError::new(
            409,
            "Conflict",
            message,
            Some(
                json!({"name": name, "group": resource.group_version().split_once('/').map_or("", |(g, _)| g), "kind": resource.plural()}),
            ),
        )
    }

    /// The optimistic-concurrency conflict of an update with a stale `resourceVersion`.
    pub(crate) fn stale(resource: &str, name: &str) -> ApiError {
        ApiError::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message.into(), None)
    }

    /// 422 Invalid: `Secret "x" is invalid: <field>: <detail>`.
    pub(crate) fn invalid(
        kind: &str,
        name: &str,
        field: &str,
        cause: &str,
        detail: &str,
    ) -> ApiError {
        ApiError::new(
            422,
            "Invalid",
            format!("{kind} {name:?} is invalid: {field}: {detail}"),
            Some(json!({
                "name": name,
                "kind": kind,
                "causes": [{"reason": cause, "message": detail, "field": field}],
            })),
        )
    }

    /// 403 Forbidden, with the authorizer's sentence.
    pub(crate) fn forbidden(resource: &str, name: Option<&str>, sentence: &str) -> ApiError {
        let message = match (resource.is_empty(), name) {
            (true, None) => format!("forbidden: {sentence}"),
            (_, Some(name)) => format!("{resource} {name:?} is forbidden: {sentence}"),
            (false, None) => format!("{resource} is forbidden: {sentence}"),
        };
        let details = match name {
            Some(name) => json!({"name": name, "kind": resource}),
            None if resource.is_empty() => json!({}),
            None => json!({"kind": resource}),
        };
        ApiError::new(403, "Forbidden", message, Some(details))
    }

    /// 401 Unauthorized.
    pub(crate) fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized".to_owned(), None)
    }

    /// 410 Gone, reason `Expired`.
    pub(crate) fn expired(message: String) -> ApiError {
        ApiError::new(410, "Expired", message, None)
    }

    /// 404 for a path the double does not serve.
    pub(crate) fn path_not_found() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
            Some(json!({})),
        )
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_owned(),
            Some(json!({})),
        )
    }

    /// 413 RequestEntityTooLarge.
    pub(crate) fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
            None,
        )
    }

    /// 415 UnsupportedMediaType.
    pub(crate) fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json, application/strategic-merge-patch+json (got {content_type:?})"
            ),
            None,
        )
    }

    /// 429 TooManyRequests: one of the double's bounds was reached.
    pub(crate) fn too_many(message: &str) -> ApiError {
        ApiError::new(429, "TooManyRequests", message.to_owned(), Some(json!({})))
    }

    /// 500 InternalError.
    pub(crate) fn internal(message: &str) -> ApiError {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
            None,
        )
    }

    /// The `metav1.Status` object.
    pub(crate) fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let (Some(details), Some(map)) = (&self.details, status.as_object_mut()) {
            map.insert("details".to_owned(), details.clone());
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(code, &self.to_status())
    }
}

/// A JSON response with the given status.
pub(crate) fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (
        code,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
