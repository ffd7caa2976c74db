//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-<key>`), as kube-apiserver's impersonation filter
//! (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`) does it: each requested
//! attribute is authorized with the verb `impersonate` (on `users`, `serviceaccounts`, `groups`,
//! `uids`, `userextras/<key>`), then the request is served as the impersonated user.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use delegated_auth::{Attributes, ResourceAttributes};

use super::auth::{self, ANONYMOUS, User};
use super::rbac::Decision;
use super::status::ApiError;
use super::store::Store;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
/// The prefix of a service account's user name.
const SA_PREFIX: &str = "system:serviceaccount:";

/// Whether the request asks to impersonate anyone.
pub(crate) fn requested(headers: &HeaderMap) -> bool {
    headers.keys().any(|k| {
        let k = k.as_str();
        k == USER || k == GROUP || k == UID || k.starts_with(EXTRA_PREFIX)
    })
}

/// The user `requester` impersonates through `headers`, once every part of it is authorized;
/// else the answer kube-apiserver gives (400 for malformed headers, 403 naming what may not be
/// impersonated).
pub(crate) fn impersonate(
    store: &Store,
    requester: &User,
    headers: &HeaderMap,
) -> Result<User, ApiError> {
    let text = |v: &axum::http::HeaderValue| {
        v.to_str()
            .map(str::to_owned)
            .map_err(|_| ApiError::bad_request("impersonation headers must be text"))
    };
    let name = match headers.get_all(USER).iter().next() {
        Some(v) => Some(text(v)?),
        None => None,
    };
    let groups = headers
        .get_all(GROUP)
        .iter()
        .map(text)
        .collect::<Result<Vec<_>, _>>()?;
    let uid = match headers.get_all(UID).iter().next() {
        Some(v) => Some(text(v)?),
        None => None,
    };
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in headers {
        if let Some(key) = k.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_decode(key)
                .ok_or_else(|| ApiError::bad_request("invalid Impersonate-Extra header key"))?;
            extra.entry(key).or_default().push(text(v)?);
        }
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Err(ApiError::internal(
            "requested impersonation without impersonating a user",
        ));
    };
    // Each part, authorized as the requester.
    let check = |resource: &str, group: &str, namespace: &str, object: &str| {
        let attrs = Attributes::resource(
            requester.info(),
            "impersonate",
            ResourceAttributes::new(group, "", resource)
                .in_namespace(namespace)
                .with_name(object),
        );
        match auth::authorize(store, &attrs) {
            Decision::Allow(_) => Ok(()),
            Decision::NoOpinion(reason) => {
                let (plural, sub) = resource.split_once('/').unwrap_or((resource, ""));
                let shown = if sub.is_empty() {
                    plural.to_owned()
                } else {
                    format!("{plural}/{sub}")
                };
                let qualified = if group.is_empty() {
                    shown
                } else {
                    format!("{shown}.{group}")
                };
                Err(ApiError::forbidden(
                    &qualified,
                    Some(object),
                    &auth::forbidden_sentence(&attrs, &reason),
                ))
            }
        }
    };
    let service_account = name
        .strip_prefix(SA_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, sa)| !ns.is_empty() && !sa.is_empty() && !sa.contains(':'));
    match service_account {
        Some((ns, sa)) => check("serviceaccounts", "", ns, sa)?,
        None => check("users", "", "", &name)?,
    }
    for g in &groups {
        check("groups", "", "", g)?;
    }
    if let Some(uid) = &uid {
        check("uids", "authentication.k8s.io", "", uid)?;
    }
    for (key, values) in &extra {
        for value in values {
            check(
                &format!("userextras/{key}"),
                "authentication.k8s.io",
                "",
                value,
            )?;
        }
    }
    let mut all_groups = groups.clone();
    if let (Some((ns, _)), true) = (service_account, groups.is_empty()) {
        // A service account's groups are known: they are added when none were asked for.
        all_groups = vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{ns}"),
        ];
    }
    if name != ANONYMOUS
        && !all_groups
            .iter()
            .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        all_groups.push("system:authenticated".to_owned());
    }
    Ok(User {
        authenticated: name != ANONYMOUS,
        name,
        uid,
        groups: all_groups,
        extra,
    })
}

/// Removes the impersonation headers (they are not for the handlers, nor for an upstream).
pub(crate) fn remove_headers(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == USER || k == GROUP || k == UID || k.starts_with(EXTRA_PREFIX)
        })
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

/// A header-name key percent-decoded (kube's `unescapeExtraKey`), lowercase as header names are.
fn percent_decode(key: &str) -> Option<String> {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i.checked_add(1)?..i.checked_add(3)?)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i = i.checked_add(3)?;
        } else {
            out.push(b);
            i = i.checked_add(1)?;
        }
    }
    String::from_utf8(out).ok()
}
