//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-<key>`), as kube-apiserver's impersonation filter
//! (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`) does it: each requested
//! attribute is authorized with the verb `impersonate` (on `users`, `serviceaccounts` and
//! `groups` in the core group, on `uids` and `userextras/<key>` in `authentication.k8s.io`), in
//! that order (user, groups, extras, UID), the first refusal answering 403; then the request is
//! served as the impersonated user.
//!
//! The rules of that filter the double keeps:
//!
//! * an empty `Impersonate-User` or `Impersonate-Uid` is no request at all; groups, extras or a
//!   UID without a user are refused with a 500 in plain text, as the filter's `InternalError`;
//! * an extra's key is the lowercase header suffix, percent-decoded (`url.PathUnescape`; kept as
//!   it is when it does not decode), each value authorized on its own;
//! * `system:serviceaccount:<namespace>:<name>` with a valid namespace and name is a service
//!   account (authorized on `serviceaccounts`, and given its groups when none are asked for);
//!   anything else is a user;
//! * `system:authenticated` is added unless the groups hold it or `system:unauthenticated`;
//!   `system:anonymous` gets `system:unauthenticated` instead.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
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
/// The group of every authenticated user.
const AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group the UID and extras are authorized in.
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
/// How kube-apiserver names the version of that group in an `ObjectReference`.
const AUTHENTICATION_VERSION: &str = "authentication.k8s.io/v1";

/// Why impersonation was refused: the answer kube-apiserver's filter gives.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Something may not be impersonated (403, a `Status`).
    Forbidden(ApiError),
    /// Groups, extras or a UID without a user: the filter's `InternalError`, a 500 in plain
    /// text naming the request URI and what was asked.
    WithoutUser(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Forbidden(e) => e.into_response(),
            Refusal::WithoutUser(text) => {
                let mut response = (StatusCode::INTERNAL_SERVER_ERROR, text).into_response();
                let headers = response.headers_mut();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                headers.insert(
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                );
                response
            }
        }
    }
}

/// One thing asked to be impersonated (kube's `ObjectReference` in the filter).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Request {
    /// The resource, subresource, group, namespace and name authorized with `impersonate`.
    fn target(&self) -> (&'static str, &str, &'static str, &str, &str) {
        match self {
            Request::ServiceAccount { namespace, name } => {
                ("serviceaccounts", "", "", namespace, name)
            }
            Request::User(name) => ("users", "", "", "", name),
            Request::Group(name) => ("groups", "", "", "", name),
            Request::Extra { key, value } => ("userextras", key, AUTHENTICATION_GROUP, "", value),
            Request::Uid(uid) => ("uids", "", AUTHENTICATION_GROUP, "", uid),
        }
    }

    /// As Go's `%v` prints the `ObjectReference` (its fields `Kind Namespace Name UID
    /// APIVersion ResourceVersion FieldPath`, space-separated, in braces).
    fn go_value(&self) -> String {
        let (kind, namespace, name, version, field) = match self {
            Request::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Request::User(name) => ("User", "", name.as_str(), "", ""),
            Request::Group(name) => ("Group", "", name.as_str(), "", ""),
            Request::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                AUTHENTICATION_VERSION,
                key.as_str(),
            ),
            Request::Uid(uid) => ("UID", "", uid.as_str(), AUTHENTICATION_VERSION, ""),
        };
        format!(
            "{{{kind} {namespace} {name} {} {version} {} {field}}}",
            "", ""
        )
    }
}

/// The user `requester` impersonates through `headers` (`None` when the request impersonates
/// no one), once every part of it is authorized; else the answer kube-apiserver gives. `uri` is
/// the request's, for the text of a refusal.
pub(crate) fn impersonate(
    store: &Store,
    requester: &User,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Option<User>, Refusal> {
    let requests = requests(headers);
    if requests.is_empty() {
        return Ok(None);
    }
    if !requests
        .iter()
        .any(|r| matches!(r, Request::User(_) | Request::ServiceAccount { .. }))
    {
        let asked: Vec<String> = requests.iter().map(Request::go_value).collect();
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        return Err(Refusal::WithoutUser(sanitize(&format!(
            "Internal Server Error: {target:?}: requested [{}] without impersonating a user\n",
            asked.join(" ")
        ))));
    }
    let groups_specified = requests.iter().any(|r| matches!(r, Request::Group(_)));
    let mut name = String::new();
    let mut groups = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut uid = None;
    for request in &requests {
        authorize(store, requester, request)?;
        match request {
            Request::ServiceAccount {
                namespace,
                name: sa,
            } => {
                name = format!("{SA_PREFIX}{namespace}:{sa}");
                if !groups_specified {
                    groups = vec![
                        "system:serviceaccounts".to_owned(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Request::User(user) => name.clone_from(user),
            Request::Group(group) => groups.push(group.clone()),
            Request::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone());
            }
            Request::Uid(id) => uid = Some(id.clone()),
        }
    }
    if name == ANONYMOUS {
        if !groups.iter().any(|g| g == UNAUTHENTICATED) {
            groups.push(UNAUTHENTICATED.to_owned());
        }
    } else if !groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        groups.push(AUTHENTICATED.to_owned());
    }
    Ok(Some(User {
        authenticated: name != ANONYMOUS,
        name,
        uid,
        groups,
        extra,
    }))
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

/// What `headers` ask to impersonate, in the order the filter authorizes it: the user (or
/// service account), the groups, the extras, the UID.
fn requests(headers: &HeaderMap) -> Vec<Request> {
    let mut requests = Vec::new();
    if let Some(user) = headers.get(USER).map(text).filter(|u| !u.is_empty()) {
        requests.push(match service_account(&user) {
            Some((namespace, name)) => Request::ServiceAccount {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            None => Request::User(user),
        });
    }
    requests.extend(
        headers
            .get_all(GROUP)
            .iter()
            .map(|g| Request::Group(text(g))),
    );
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            requests.push(Request::Extra {
                key: unescape_extra_key(key),
                value: text(value),
            });
        }
    }
    if let Some(uid) = headers.get(UID).map(text).filter(|u| !u.is_empty()) {
        requests.push(Request::Uid(uid));
    }
    requests
}

/// Authorizes impersonating `request` as `requester`; a refusal is kube-apiserver's 403.
fn authorize(store: &Store, requester: &User, request: &Request) -> Result<(), Refusal> {
    let (resource, subresource, group, namespace, object) = request.target();
    let attrs = Attributes::resource(
        requester.info(),
        "impersonate",
        ResourceAttributes::new(group, "", resource)
            .with_subresource(subresource)
            .in_namespace(namespace)
            .with_name(object),
    );
    match auth::authorize(store, &attrs) {
        Decision::Allow(_) => Ok(()),
        Decision::NoOpinion(reason) => {
            // The qualified resource of the error names no subresource (`userextras.<group>`).
            let qualified = if group.is_empty() {
                resource.to_owned()
            } else {
                format!("{resource}.{group}")
            };
            Err(Refusal::Forbidden(ApiError::forbidden(
                &qualified,
                Some(object).filter(|o| !o.is_empty()),
                &auth::forbidden_sentence(&attrs, &reason),
            )))
        }
    }
}

/// A header value as Go reads it: its bytes as a string (invalid UTF-8 shown replaced, as Go's
/// JSON encoder shows it).
fn text(value: &HeaderValue) -> String {
    String::from_utf8_lossy(value.as_bytes()).into_owned()
}

/// The namespace and name of a service account's user name, when both are valid (kube's
/// `serviceaccount.SplitUsername`: a DNS label and a DNS subdomain).
fn service_account(user: &str) -> Option<(&str, &str)> {
    let (namespace, name) = user.strip_prefix(SA_PREFIX)?.split_once(':')?;
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let subdomain = |s: &str| s.len() <= 253 && s.split('.').all(label);
    (!name.contains(':') && label(namespace) && subdomain(name)).then_some((namespace, name))
}

/// An extra's key from its header-name suffix (lowercase, as header names are), percent-decoded
/// as kube's `unescapeExtraKey` does (`url.PathUnescape`): a `%` not followed by two hex digits
/// leaves the key as it came.
fn unescape_extra_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let Some(byte) = bytes
                .get(i.saturating_add(1)..i.saturating_add(3))
                .and_then(|h| std::str::from_utf8(h).ok())
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            else {
                return encoded.to_owned();
            };
            out.push(byte);
            i = i.saturating_add(3);
        } else {
            out.push(b);
            i = i.saturating_add(1);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// kube's `responsewriters` sanitizer: `&`, `<` and `>` escaped for HTML.
fn sanitize(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use serde_json::json;

    use super::*;
    use crate::store::Resource;

    /// RBAC objects granting what the authorizer of kube's `impersonation_test.go` grants: a
    /// ClusterRole per group named after it, bound to that group.
    fn store() -> Store {
        let mut store = Store::new(false);
        let now = SystemTime::UNIX_EPOCH;
        let grants: &[(&str, serde_json::Value)] = &[
            ("wheel", json!({"apiGroups": [""], "resources": ["users"]})),
            (
                "regular-impersonater",
                json!({"apiGroups": [""], "resources": ["users"]}),
            ),
            (
                "sa-impersonater",
                json!({"apiGroups": [""], "resources": ["serviceaccounts"]}),
            ),
            (
                "group-impersonater",
                json!({"apiGroups": [""], "resources": ["groups"]}),
            ),
            (
                "extra-setter-scopes",
                json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"]}),
            ),
            (
                "extra-setter-particular-scopes",
                json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "resourceNames": ["scope-a"]}),
            ),
            (
                "extra-setter-project",
                json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/project"]}),
            ),
            (
                "extra-setter-escaped",
                json!({"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/example.com/key"]}),
            ),
            (
                "uid-impersonater",
                json!({"apiGroups": ["authentication.k8s.io"], "resources": ["uids"], "resourceNames": ["some-uid"]}),
            ),
        ];
        for (group, rule) in grants {
            let mut rule = rule.clone();
            rule["verbs"] = json!(["impersonate"]);
            store
                .create(
                    Resource::ClusterRoles,
                    "",
                    json!({"metadata": {"name": group}, "rules": [rule]}),
                    false,
                    now,
                )
                .unwrap();
            store
                .create(
                    Resource::ClusterRoleBindings,
                    "",
                    json!({
                        "metadata": {"name": group},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": group},
                        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
                    }),
                    false,
                    now,
                )
                .unwrap();
        }
        store
    }

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.to_owned(),
            uid: None,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: BTreeMap::new(),
            authenticated: true,
        }
    }

    /// One case: requester, headers, then the user served (or the status refused with).
    struct Case {
        name: &'static str,
        requester: User,
        headers: &'static [(&'static str, &'static str)],
        expected: Result<Option<User>, u16>,
    }

    fn impersonated(
        name: &str,
        groups: &[&str],
        uid: Option<&str>,
        extra: &[(&str, &[&str])],
    ) -> Result<Option<User>, u16> {
        Ok(Some(User {
            name: name.to_owned(),
            uid: uid.map(str::to_owned),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
                .collect(),
            authenticated: name != ANONYMOUS,
        }))
    }

    /// kube's `TestImpersonationFilter` table, with RBAC in place of its test authorizer, plus
    /// the UID and escaped-key cases.
    #[test]
    fn kubernetes_impersonation_filter_table() {
        let admin = || user("system:admin", &["system:masters"]);
        let cases = [
            Case {
                name: "not-impersonating",
                requester: user("tester", &[]),
                headers: &[],
                expected: Ok(None),
            },
            Case {
                name: "empty user and uid headers are no request",
                requester: user("tester", &[]),
                headers: &[("impersonate-user", ""), ("impersonate-uid", "")],
                expected: Ok(None),
            },
            Case {
                name: "impersonating-error",
                requester: user("tester", &[]),
                headers: &[("impersonate-user", "anyone")],
                expected: Err(403),
            },
            Case {
                name: "impersonating-group-without-user",
                requester: user("tester", &[]),
                headers: &[("impersonate-group", "some-group")],
                expected: Err(500),
            },
            Case {
                name: "impersonating-extra-without-user",
                requester: user("tester", &[]),
                headers: &[("impersonate-extra-scopes", "scope-a")],
                expected: Err(500),
            },
            Case {
                name: "impersonating-uid-without-user",
                requester: admin(),
                headers: &[("impersonate-uid", "some-uid")],
                expected: Err(500),
            },
            Case {
                name: "disallowed-group",
                requester: user("dev", &["wheel"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-group", "some-group"),
                ],
                expected: Err(403),
            },
            Case {
                name: "allowed-group",
                requester: user("dev", &["wheel", "group-impersonater"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-group", "some-group"),
                ],
                expected: impersonated(
                    "system:admin",
                    &["some-group", "system:authenticated"],
                    None,
                    &[],
                ),
            },
            Case {
                name: "disallowed-userextra-1",
                requester: user("dev", &["wheel"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-group", "some-group"),
                    ("impersonate-extra-scopes", "scope-a"),
                ],
                expected: Err(403),
            },
            Case {
                name: "disallowed-userextra-2",
                requester: user("dev", &["wheel", "extra-setter-project"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-extra-scopes", "scope-a"),
                ],
                expected: Err(403),
            },
            Case {
                name: "disallowed-userextra-3",
                requester: user("dev", &["wheel", "extra-setter-particular-scopes"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-extra-scopes", "scope-a"),
                    ("impersonate-extra-scopes", "scope-b"),
                ],
                expected: Err(403),
            },
            Case {
                name: "allowed-userextras",
                requester: user("dev", &["wheel", "extra-setter-scopes"]),
                headers: &[
                    ("impersonate-user", "system:admin"),
                    ("impersonate-extra-scopes", "scope-a"),
                    ("impersonate-extra-scopes", "scope-b"),
                ],
                expected: impersonated(
                    "system:admin",
                    &["system:authenticated"],
                    None,
                    &[("scopes", &["scope-a", "scope-b"])],
                ),
            },
            Case {
                name: "percent-encoded extra key",
                requester: user("dev", &["wheel", "extra-setter-escaped"]),
                headers: &[
                    ("impersonate-user", "someone"),
                    ("impersonate-extra-example.com%2fkey", "v"),
                ],
                expected: impersonated(
                    "someone",
                    &["system:authenticated"],
                    None,
                    &[("example.com/key", &["v"])],
                ),
            },
            Case {
                name: "malformed escape keeps the key as it came",
                requester: admin(),
                headers: &[
                    ("impersonate-user", "someone"),
                    ("impersonate-extra-a%zzb", "v"),
                ],
                expected: impersonated(
                    "someone",
                    &["system:authenticated"],
                    None,
                    &[("a%zzb", &["v"])],
                ),
            },
            Case {
                name: "allowed-users-impersonation",
                requester: user("dev", &["regular-impersonater"]),
                headers: &[("impersonate-user", "tester")],
                expected: impersonated("tester", &["system:authenticated"], None, &[]),
            },
            Case {
                name: "disallowed-impersonating",
                requester: user("dev", &["sa-impersonater"]),
                headers: &[("impersonate-user", "tester")],
                expected: Err(403),
            },
            Case {
                name: "allowed-sa-impersonating",
                requester: user("dev", &["sa-impersonater"]),
                headers: &[("impersonate-user", "system:serviceaccount:foo:default")],
                expected: impersonated(
                    "system:serviceaccount:foo:default",
                    &[
                        "system:serviceaccounts",
                        "system:serviceaccounts:foo",
                        "system:authenticated",
                    ],
                    None,
                    &[],
                ),
            },
            Case {
                name: "an invalid service-account name is a user",
                requester: user("dev", &["sa-impersonater"]),
                headers: &[("impersonate-user", "system:serviceaccount:Foo:default")],
                expected: Err(403),
            },
            Case {
                name: "anonymous-username-prevents-adding-authenticated-group",
                requester: admin(),
                headers: &[("impersonate-user", "system:anonymous")],
                expected: impersonated("system:anonymous", &["system:unauthenticated"], None, &[]),
            },
            Case {
                name: "unauthenticated-group-prevents-adding-authenticated-group",
                requester: admin(),
                headers: &[
                    ("impersonate-user", "unknown"),
                    ("impersonate-group", "system:unauthenticated"),
                ],
                expected: impersonated("unknown", &["system:unauthenticated"], None, &[]),
            },
            Case {
                name: "unauthenticated-group-prevents-double-adding-authenticated-group",
                requester: admin(),
                headers: &[
                    ("impersonate-user", "unknown"),
                    ("impersonate-group", "system:authenticated"),
                ],
                expected: impersonated("unknown", &["system:authenticated"], None, &[]),
            },
            Case {
                name: "allowed-uid",
                requester: user("dev", &["regular-impersonater", "uid-impersonater"]),
                headers: &[
                    ("impersonate-user", "tester"),
                    ("impersonate-uid", "some-uid"),
                ],
                expected: impersonated("tester", &["system:authenticated"], Some("some-uid"), &[]),
            },
            Case {
                name: "disallowed-uid",
                requester: user("dev", &["regular-impersonater", "uid-impersonater"]),
                headers: &[
                    ("impersonate-user", "tester"),
                    ("impersonate-uid", "other-uid"),
                ],
                expected: Err(403),
            },
        ];
        let store = store();
        let uri = Uri::from_static("/api/v1/namespaces");
        for case in cases {
            let mut headers = HeaderMap::new();
            for (k, v) in case.headers {
                headers.append(
                    axum::http::HeaderName::from_static(k),
                    HeaderValue::from_static(v),
                );
            }
            let got = impersonate(&store, &case.requester, &headers, &uri)
                .map_err(|e| e.into_response().status().as_u16());
            assert_eq!(got, case.expected, "{}", case.name);
        }
    }

    fn refusal_text(requester: &User, headers: &[(&'static str, &'static str)]) -> (u16, String) {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                axum::http::HeaderName::from_static(k),
                HeaderValue::from_static(v),
            );
        }
        let uri = Uri::from_static("/api/v1/namespaces/default/pods?limit=1&x=y");
        match impersonate(&store(), requester, &map, &uri) {
            Err(Refusal::WithoutUser(text)) => (500, text),
            Err(Refusal::Forbidden(e)) => (
                e.code,
                e.to_status()["message"].as_str().unwrap().to_owned(),
            ),
            Ok(u) => panic!("{u:?}"),
        }
    }

    #[test]
    fn refusals_are_worded_as_kubernetes_words_them() {
        let dev = user("dev", &["wheel", "extra-setter-particular-scopes"]);
        assert_eq!(
            refusal_text(
                &dev,
                &[
                    ("impersonate-user", "tester"),
                    ("impersonate-extra-scopes", "scope-b")
                ]
            ),
            (
                403,
                "userextras.authentication.k8s.io \"scope-b\" is forbidden: User \"dev\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope".to_owned()
            )
        );
        assert_eq!(
            refusal_text(
                &dev,
                &[("impersonate-user", "tester"), ("impersonate-uid", "u-1")]
            ),
            (
                403,
                "uids.authentication.k8s.io \"u-1\" is forbidden: User \"dev\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope".to_owned()
            )
        );
        // An empty group is authorized and named by no name.
        assert_eq!(
            refusal_text(&dev, &[("impersonate-user", "tester"), ("impersonate-group", "")]),
            (
                403,
                "groups is forbidden: User \"dev\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope".to_owned()
            )
        );
        assert_eq!(
            refusal_text(
                &dev,
                &[
                    ("impersonate-group", "g"),
                    ("impersonate-extra-scopes", "s"),
                    ("impersonate-uid", "u")
                ]
            ),
            (
                500,
                "Internal Server Error: \"/api/v1/namespaces/default/pods?limit=1&amp;x=y\": requested [{Group  g    } {UserExtra  s  authentication.k8s.io/v1  scopes} {UID  u  authentication.k8s.io/v1  }] without impersonating a user\n".to_owned()
            )
        );
    }

    #[test]
    fn extra_keys_are_unescaped_as_url_path_unescape() {
        assert_eq!(unescape_extra_key("scopes"), "scopes");
        assert_eq!(unescape_extra_key("example.com%2fkey"), "example.com/key");
        assert_eq!(unescape_extra_key("a%2"), "a%2");
        assert_eq!(unescape_extra_key("a%"), "a%");
        assert_eq!(unescape_extra_key("a%g1"), "a%g1");
        assert_eq!(unescape_extra_key("a+b"), "a+b");
        assert_eq!(unescape_extra_key("%e2%82%ac"), "\u{20ac}");
    }
}
