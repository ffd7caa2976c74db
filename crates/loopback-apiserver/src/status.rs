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

    /// `secrets "x" not found`. `resource` is the qualified resource, `plural[.group]`
    /// (`certificatesigningrequests.certificates.k8s.io`), as kube-apiserver names it.
    pub(crate) fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{resource} {name:?} not found"),
            Some(details(resource, Some(name))),
        )
    }

    /// `secrets "x" already exists` (`resource` as in [`ApiError::not_found`]).
    pub(crate) fn already_exists(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{resource} {name:?} already exists"),
            Some(details(resource, Some(name))),
        )
    }

    /// `Operation cannot be fulfilled on secrets "x": <why>` (`resource` as in
    /// [`ApiError::not_found`]).
    pub(crate) fn conflict(resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {resource} {name:?}: {why}"),
            Some(details(resource, Some(name))),
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

    /// 422 Invalid with every field error, as kube-apiserver's `NewInvalid` words it:
    /// `CertificateSigningRequest.certificates.k8s.io "x" is invalid: [<error>, <error>]` (no
    /// brackets for one error). `group` is empty for the core group.
    pub(crate) fn invalid_fields(
        kind: &str,
        group: &str,
        name: &str,
        errors: &[FieldError],
    ) -> ApiError {
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut shown: Vec<String> = Vec::new();
        for e in errors {
            let line = e.to_string();
            if !shown.contains(&line) {
                shown.push(line);
            }
        }
        let all = match shown.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", shown.join(", ")),
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.reason, "message": e.body, "field": e.field}))
            .collect();
        let mut details = json!({"name": name, "kind": kind, "causes": causes});
        if let (false, Some(map)) = (group.is_empty(), details.as_object_mut()) {
            map.insert("group".to_owned(), Value::String(group.to_owned()));
        }
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified} {name:?} is invalid: {all}"),
            Some(details),
        )
    }

    /// 403 Forbidden, with the authorizer's sentence (`resource` as in [`ApiError::not_found`],
    /// empty for a non-resource path).
    pub(crate) fn forbidden(resource: &str, name: Option<&str>, sentence: &str) -> ApiError {
        let message = match (resource.is_empty(), name) {
            (true, None) => format!("forbidden: {sentence}"),
            (_, Some(name)) => format!("{resource} {name:?} is forbidden: {sentence}"),
            (false, None) => format!("{resource} is forbidden: {sentence}"),
        };
        let details = if resource.is_empty() && name.is_none() {
            json!({})
        } else {
            details(resource, name)
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

    /// 503 ServiceUnavailable (`errors.NewServiceUnavailable`: no details).
    pub(crate) fn service_unavailable(message: String) -> ApiError {
        ApiError::new(503, "ServiceUnavailable", message, None)
    }

    /// 504 Timeout, as kube-apiserver's request-timeout filter answers.
    pub(crate) fn timeout() -> ApiError {
        ApiError::new(
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout".to_owned(),
            Some(json!({})),
        )
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

/// `StatusDetails` for a qualified resource `plural[.group]`: `kind` is the plural, `group`
/// the group (omitted for the core group), as kube-apiserver fills them.
fn details(resource: &str, name: Option<&str>) -> Value {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    let mut details = json!({"kind": plural});
    if let Some(map) = details.as_object_mut() {
        if let Some(name) = name {
            map.insert("name".to_owned(), Value::String(name.to_owned()));
        }
        if !group.is_empty() {
            map.insert("group".to_owned(), Value::String(group.to_owned()));
        }
    }
    details
}

/// One field validation error, as apimachinery's `field.Error` renders it:
/// `<field>: <body>`, the body being `Required value`, `Invalid value: <value>: <detail>`...
#[derive(Debug, Clone)]
pub(crate) struct FieldError {
    field: String,
    reason: &'static str,
    body: String,
}

impl FieldError {
    /// `Required value`.
    pub(crate) fn required(field: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueRequired",
            body: "Required value".to_owned(),
        }
    }

    /// `Required value: <detail>`.
    pub(crate) fn required_detail(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueRequired",
            body: format!("Required value: {detail}"),
        }
    }

    /// `Invalid value: <value>: <detail>`; `value` is already rendered as Go renders it
    /// (`"text"` quoted, numbers bare).
    pub(crate) fn invalid(field: impl Into<String>, value: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueInvalid",
            body: format!("Invalid value: {value}: {detail}"),
        }
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueForbidden",
            body: format!("Forbidden: {detail}"),
        }
    }

    /// `Unsupported value: "<value>": supported values: "a", "b"`.
    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &str,
        supported: &[&str],
    ) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            field: field.into(),
            reason: "FieldValueNotSupported",
            body: format!(
                "Unsupported value: {value:?}: supported values: {}",
                list.join(", ")
            ),
        }
    }

    /// `Duplicate value: "<value>"`.
    pub(crate) fn duplicate(field: impl Into<String>, value: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueDuplicate",
            body: format!("Duplicate value: {value:?}"),
        }
    }

    /// `Too long: may not be more than <max> bytes`.
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueTooLong",
            body: format!("Too long: may not be more than {max} bytes"),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body)
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
