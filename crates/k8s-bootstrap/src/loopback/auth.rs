//! Authentication (admin token, static tokens, bootstrap tokens, anonymous) and the double's
//! tiny authorizer.
//!
//! Authorization, documented: group `system:masters` may do everything; any authenticated user
//! may read discovery (`/version`, `/api*`, `/apis*`, `/openapi*`, health checks); anyone,
//! anonymous included, may `get` `kube-public/configmaps/cluster-info` (the RBAC kubeadm
//! installs) and read `/version` and the health checks; everything else is forbidden.

use axum::http::HeaderMap;
use zeroize::Zeroizing;

use super::store::Store;

/// The anonymous user.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group everything may do.
pub(crate) const MASTERS: &str = "system:masters";

/// Who made a request.
#[derive(Debug, Clone)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) groups: Vec<String>,
    pub(crate) authenticated: bool,
}

impl User {
    fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_owned(),
            groups: vec!["system:unauthenticated".to_owned()],
            authenticated: false,
        }
    }

    fn authenticated(name: String, mut groups: Vec<String>) -> User {
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".to_owned());
        }
        User {
            name,
            groups,
            authenticated: true,
        }
    }
}

/// A `--token-auth-file` entry.
pub(crate) struct StaticToken {
    pub(crate) token: Zeroizing<String>,
    pub(crate) user: String,
    pub(crate) groups: Vec<String>,
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticToken")
            .field("token", &"<redacted>")
            .field("user", &self.user)
            .field("groups", &self.groups)
            .finish()
    }
}

/// Constant-time equality of two byte strings (length is not hidden).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Authenticate a request; `None` means 401.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    admin: &str,
    statics: &[StaticToken],
    store: &Store,
) -> Option<User> {
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Some(User::anonymous());
    };
    let Ok(value) = value.to_str() else {
        return None;
    };
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or_default();
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Not a bearer token: the token authenticators pass, the request is anonymous.
        return Some(User::anonymous());
    }
    let token = parts.next().unwrap_or_default().trim();
    if token.is_empty() {
        return Some(User::anonymous());
    }
    if ct_eq(token.as_bytes(), admin.as_bytes()) {
        return Some(User::authenticated(
            super::ADMIN_USER.to_owned(),
            vec![MASTERS.to_owned()],
        ));
    }
    let mut found = None;
    for s in statics {
        if ct_eq(token.as_bytes(), s.token.as_bytes()) {
            found = Some(User::authenticated(s.user.clone(), s.groups.clone()));
        }
    }
    if found.is_some() {
        return found;
    }
    let outcome = bootstrap_token::authenticate(token, crate::clock::now(), |id| {
        Ok::<_, std::convert::Infallible>(store.bootstrap_secret(id.as_str()))
    });
    match outcome {
        Ok(bootstrap_token::AuthOutcome::Authenticated(a)) => Some(User::authenticated(
            a.user_name().to_owned(),
            a.groups().iter().map(|g| g.to_string()).collect(),
        )),
        _ => None,
    }
}

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone)]
pub(crate) enum Attributes<'a> {
    Resource {
        verb: &'static str,
        resource: &'static str,
        namespace: &'a str,
        name: Option<&'a str>,
    },
    NonResource {
        verb: &'static str,
        path: &'a str,
    },
}

/// Public paths anyone may read (`system:public-info-viewer`).
fn public_path(path: &str) -> bool {
    matches!(
        path,
        "/version" | "/version/" | "/healthz" | "/livez" | "/readyz"
    )
}

/// Discovery paths an authenticated user may read (`system:discovery`).
fn discovery_path(path: &str) -> bool {
    public_path(path)
        || ["/api", "/apis", "/openapi"]
            .iter()
            .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// The decision: `Ok` or the authorizer's sentence for a 403.
pub(crate) fn authorize(user: &User, attrs: &Attributes<'_>) -> Result<(), String> {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Ok(());
    }
    match attrs {
        Attributes::NonResource { verb, path } => {
            let allowed = *verb == "get"
                && (public_path(path) || (user.authenticated && discovery_path(path)));
            if allowed {
                Ok(())
            } else {
                Err(format!("User {:?} cannot {verb} path {path:?}", user.name))
            }
        }
        Attributes::Resource {
            verb,
            resource,
            namespace,
            name,
        } => {
            let cluster_info = *verb == "get"
                && *resource == "configmaps"
                && *namespace == clusterinfo::CLUSTER_INFO_NAMESPACE
                && *name == Some(clusterinfo::CLUSTER_INFO_NAME);
            if cluster_info {
                return Ok(());
            }
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {namespace:?}")
            };
            Err(format!(
                "User {:?} cannot {verb} resource {resource:?} in API group \"\" {scope}",
                user.name
            ))
        }
    }
}
