//! Authentication (client certificates, admin token, static tokens, bootstrap tokens,
//! anonymous) and the double's tiny authorizer.
//!
//! Authentication follows kube-apiserver's union authenticator, in its order: the x509 client
//! certificate authenticator first, then the bearer-token authenticators, then anonymous. A
//! request whose connection presented a verified client certificate with a subject common name
//! is that certificate's user, whatever `Authorization` header it also carries (the token is not
//! looked at); a certificate without a common name leaves the decision to the token; a
//! certificate the x509 authenticator refuses (not signed by the CA, expired, without extended
//! key usage clientAuth, several or empty UIDs) makes the request 401 unless a token
//! authenticates it. A certificate the double was told to revoke
//! ([`crate::LoopbackApiServer::revoke_client_certificate`]) is refused the same way, checked on
//! every request (a kept-alive connection does not keep a revoked user in).
//!
//! Authorization, documented (the RBAC kubeadm installs, and the node authorizer):
//!
//! * group `system:masters` may do everything, and so may group `kubeadm:cluster-admins` (the
//!   group of kubeadm's `admin.conf` since 1.29, bound to the `cluster-admin` ClusterRole);
//! * any authenticated user may read discovery (`/version`, `/api*`, `/apis*`, `/openapi*`,
//!   health checks) and create `selfsubjectreviews` (`system:basic-user`);
//! * anyone, anonymous included, may `get` `kube-public/configmaps/cluster-info` and read
//!   `/version` and the health checks;
//! * members of `system:bootstrappers` (every bootstrap token's user; kubeadm binds
//!   `system:node-bootstrapper` to `system:bootstrappers:kubeadm:default-node-token`, the double
//!   to the whole group) may create, get, list and watch `certificatesigningrequests`;
//! * nodes (group `system:nodes` and a user name `system:node:<name>`, as the node authorizer
//!   identifies them) may do the same, to renew their certificates;
//! * the `approval` and `status` subresources, and the Service proxy (`services/proxy`), are for
//!   those two groups only;
//! * everything else is forbidden.

use std::collections::{BTreeMap, BTreeSet};

use axum::http::HeaderMap;
use zeroize::Zeroizing;

use super::store::Store;
use super::x509::CertIdentity;

/// The anonymous user.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group everything may do.
pub(crate) const MASTERS: &str = "system:masters";
/// The group of kubeadm's `admin.conf` user (1.29 and later), bound to `cluster-admin`.
pub(crate) const CLUSTER_ADMINS: &str = "kubeadm:cluster-admins";

/// The group of bootstrap-token users.
const BOOTSTRAPPERS: &str = "system:bootstrappers";
/// The group of nodes.
const NODES: &str = "system:nodes";
/// The user-name prefix of nodes.
const NODE_PREFIX: &str = "system:node:";

/// Who made a request (kube-apiserver's `user.Info`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) extra: BTreeMap<String, Vec<String>>,
    pub(crate) authenticated: bool,
}

impl User {
    fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_owned(),
            uid: None,
            groups: vec!["system:unauthenticated".to_owned()],
            extra: BTreeMap::new(),
            authenticated: false,
        }
    }

    fn authenticated(name: String, groups: Vec<String>) -> User {
        User::authenticated_with(name, None, groups, BTreeMap::new())
    }

    /// An authenticated user; `system:authenticated` is added to `groups` unless present (the
    /// authenticated group adder).
    pub(crate) fn authenticated_with(
        name: String,
        uid: Option<String>,
        mut groups: Vec<String>,
        extra: BTreeMap<String, Vec<String>>,
    ) -> User {
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".to_owned());
        }
        User {
            name,
            uid,
            groups,
            extra,
            authenticated: true,
        }
    }

    fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// A node, as the node authorizer identifies one: group `system:nodes` and a user name
    /// `system:node:<non-empty name>`.
    fn is_node(&self) -> bool {
        self.in_group(NODES)
            && self
                .name
                .strip_prefix(NODE_PREFIX)
                .is_some_and(|n| !n.is_empty())
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

/// Authenticate a request whose connection presented `cert`; `None` means 401. `revoked` holds
/// the SHA-256 fingerprints (lowercase hex) of the client certificates no longer accepted.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    cert: &CertIdentity,
    revoked: &BTreeSet<String>,
    admin: &str,
    statics: &[StaticToken],
    store: &Store,
) -> Option<User> {
    // kube-apiserver's union: x509 first; a certificate error fails the request unless a later
    // authenticator succeeds (no anonymous fallback after an error).
    let fallback = match cert {
        CertIdentity::User(user) if is_revoked(user, revoked) => None,
        CertIdentity::User(user) => return Some(user.clone()),
        CertIdentity::None => Some(User::anonymous()),
        CertIdentity::Error => None,
    };
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return fallback;
    };
    let Ok(value) = value.to_str() else {
        return None;
    };
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or_default();
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Not a bearer token: the token authenticators pass.
        return fallback;
    }
    let token = parts.next().unwrap_or_default().trim();
    if token.is_empty() {
        return fallback;
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

/// Whether `user` came from a client certificate whose fingerprint is in `revoked`.
fn is_revoked(user: &User, revoked: &BTreeSet<String>) -> bool {
    if revoked.is_empty() {
        return false;
    }
    user.extra
        .get(super::x509::CREDENTIAL_ID)
        .into_iter()
        .flatten()
        .filter_map(|id| id.strip_prefix("X509SHA256="))
        .any(|fingerprint| revoked.contains(fingerprint))
}

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone)]
pub(crate) enum Attributes<'a> {
    Resource {
        verb: &'static str,
        /// The API group (empty for the core group).
        group: &'static str,
        resource: &'static str,
        subresource: Option<&'a str>,
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
    if user
        .groups
        .iter()
        .any(|g| g == MASTERS || g == CLUSTER_ADMINS)
    {
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
            group,
            resource,
            subresource,
            namespace,
            name,
        } => {
            let cluster_info = *verb == "get"
                && *resource == "configmaps"
                && *namespace == clusterinfo::CLUSTER_INFO_NAMESPACE
                && *name == Some(clusterinfo::CLUSTER_INFO_NAME);
            let self_review = *verb == "create"
                && *group == "authentication.k8s.io"
                && *resource == "selfsubjectreviews"
                && user.authenticated;
            let csr = *group == "certificates.k8s.io"
                && *resource == "certificatesigningrequests"
                && subresource.is_none()
                && matches!(*verb, "create" | "get" | "list" | "watch")
                && (user.is_node()
                    || user.groups.iter().any(|g| {
                        g == BOOTSTRAPPERS
                            || g.strip_prefix(BOOTSTRAPPERS)
                                .is_some_and(|rest| rest.starts_with(':'))
                    }));
            if cluster_info || self_review || csr {
                return Ok(());
            }
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {namespace:?}")
            };
            let resource = match subresource {
                Some(sub) => format!("{resource}/{sub}"),
                None => (*resource).to_owned(),
            };
            Err(format!(
                "User {:?} cannot {verb} resource {resource:?} in API group {group:?} {scope}",
                user.name
            ))
        }
    }
}
