//! Authentication (client certificates, admin token, static tokens, bootstrap tokens, the
//! service-account tokens the double issued, anonymous) and the authorizer chain.
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
//! Authorization is kube-apiserver's chain (`--authorization-mode=Node,RBAC`, behind the
//! privileged-group authorizer), each step [`authorize`] tries in turn:
//!
//! * group `system:masters` may do everything, whatever the policy objects say (kube-apiserver's
//!   privileged-group authorizer);
//! * the node authorizer: a node (group `system:nodes` and a user name `system:node:<name>`)
//!   may create, get, list and watch `certificatesigningrequests`, the one rule of the
//!   `system:node` role the double serves a resource for (kube-apiserver's node authorizer
//!   grants it from that role's rules, not from a binding);
//! * RBAC over the stored Roles, ClusterRoles and bindings ([`super::rbac`]), seeded with the
//!   default policy kube-apiserver and kubeadm create ([`super::policy`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use axum::http::HeaderMap;
use delegated_auth::{Attributes, Target, UserInfo};
use zeroize::Zeroizing;

use super::rbac::{Decision, Policy, PolicyRule};
use super::sa_token::{Refusal, TokenIssuer};
use super::store::Store;
use super::x509::CertIdentity;

/// The anonymous user.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group everything may do.
pub(crate) const MASTERS: &str = "system:masters";
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
    pub(crate) fn anonymous() -> User {
        User {
            name: ANONYMOUS.to_owned(),
            uid: None,
            groups: vec!["system:unauthenticated".to_owned()],
            extra: BTreeMap::new(),
            authenticated: false,
        }
    }

    pub(crate) fn authenticated(name: String, groups: Vec<String>) -> User {
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

    /// The user as the authorizer reads it.
    pub(crate) fn info(&self) -> UserInfo {
        let mut info = UserInfo::new(self.name.clone()).with_groups(self.groups.iter().cloned());
        if let Some(uid) = &self.uid {
            info = info.with_uid(uid.clone());
        }
        for (k, v) in &self.extra {
            info = info.with_extra(k.clone(), v.iter().cloned());
        }
        info
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

/// The bearer-token authenticators, in kube-apiserver's order: the admin token and the static
/// tokens (`--token-auth-file`), bootstrap tokens, then the service-account tokens the double
/// issued.
pub(crate) struct TokenAuthenticators<'a> {
    pub(crate) admin: &'a str,
    pub(crate) statics: &'a [StaticToken],
    pub(crate) store: &'a Store,
    pub(crate) issuer: &'a TokenIssuer,
}

impl TokenAuthenticators<'_> {
    /// The user of `token` presented for `audiences`, with the audiences it is accepted for;
    /// `Err(None)` when no authenticator knows it, `Err(Some(why))` when one refused it (the
    /// text kube-apiserver gives in a TokenReview's `status.error`).
    ///
    /// The admin, static and bootstrap tokens are for the API server's own audience (the
    /// issuer URL) only, as kube-apiserver's audience-agnostic authenticators.
    pub(crate) fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
        now: SystemTime,
    ) -> Result<(User, Vec<String>), Option<String>> {
        let own: Vec<String> = audiences
            .iter()
            .filter(|a| a.as_str() == self.issuer.issuer())
            .cloned()
            .collect();
        if !own.is_empty()
            && let Some(user) = self.audience_agnostic(token, now)
        {
            return Ok((user, own));
        }
        match self.issuer.authenticate(token, audiences, self.store, now) {
            Ok(found) => Ok(found),
            Err(Refusal::NotOurs) => Err(None),
            Err(Refusal::Refused(why)) => Err(Some(why)),
        }
    }

    /// The admin token, a static token or a bootstrap token.
    fn audience_agnostic(&self, token: &str, now: SystemTime) -> Option<User> {
        if ct_eq(token.as_bytes(), self.admin.as_bytes()) {
            return Some(User::authenticated(
                super::ADMIN_USER.to_owned(),
                vec![MASTERS.to_owned()],
            ));
        }
        let mut found = None;
        for s in self.statics {
            if ct_eq(token.as_bytes(), s.token.as_bytes()) {
                found = Some(User::authenticated(s.user.clone(), s.groups.clone()));
            }
        }
        if found.is_some() {
            return found;
        }
        let outcome = bootstrap_token::authenticate(token, now, |id| {
            Ok::<_, std::convert::Infallible>(self.store.bootstrap_secret(id.as_str()))
        });
        match outcome {
            Ok(bootstrap_token::AuthOutcome::Authenticated(a)) => Some(User::authenticated(
                a.user_name().to_owned(),
                a.groups().iter().map(|g| g.to_string()).collect(),
            )),
            _ => None,
        }
    }
}

/// Authenticate a request whose connection presented `cert`; `None` means 401. `revoked` holds
/// the SHA-256 fingerprints (lowercase hex) of the client certificates no longer accepted.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    cert: &CertIdentity,
    revoked: &BTreeSet<String>,
    tokens: &TokenAuthenticators<'_>,
    now: SystemTime,
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
    tokens
        .authenticate(token, &[tokens.issuer.issuer().to_owned()], now)
        .ok()
        .map(|(user, _)| user)
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

/// The rules the node authorizer grants every node (the part of the `system:node` role the
/// double serves resources for).
fn node_rules() -> [PolicyRule; 1] {
    [PolicyRule::new(["create", "get", "list", "watch"])
        .groups(["certificates.k8s.io"])
        .resources(["certificatesigningrequests"])]
}

/// The decision of the authorizer chain on `attrs` (whose user is the requester), with the
/// policy objects of `store`.
pub(crate) fn authorize(store: &Store, attrs: &Attributes) -> Decision {
    if attrs.user.groups.iter().any(|g| g == MASTERS) {
        return Decision::Allow(String::new());
    }
    if is_node(&attrs.user) && node_rules().iter().any(|r| r.allows(attrs)) {
        return Decision::Allow(String::new());
    }
    Policy::from_store(store).authorize(attrs)
}

/// The sentence of a 403 for `attrs`, as kube-apiserver's `forbiddenMessage` words it
/// (`User "u" cannot list resource "secrets" in API group "" in the namespace "ns"`), with the
/// authorizer's reason after a colon when it gave one.
pub(crate) fn forbidden_sentence(attrs: &Attributes, reason: &str) -> String {
    let who = format!("User {:?}", attrs.user.name);
    let verb = &attrs.verb;
    let mut sentence = match &attrs.target {
        Target::Resource(r) => {
            let scope = if r.namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {:?}", r.namespace)
            };
            let resource = if r.subresource.is_empty() {
                r.resource.clone()
            } else {
                format!("{}/{}", r.resource, r.subresource)
            };
            format!(
                "{who} cannot {verb} resource {resource:?} in API group {:?} {scope}",
                r.api_group
            )
        }
        Target::NonResource { path } => format!("{who} cannot {verb} path {path:?}"),
        _ => format!("{who} cannot {verb}"),
    };
    if !reason.is_empty() {
        sentence.push_str(": ");
        sentence.push_str(reason);
    }
    sentence
}

/// A node, as the node authorizer identifies one: group `system:nodes` and a user name
/// `system:node:<non-empty name>`.
fn is_node(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == NODES)
        && user
            .name
            .strip_prefix(NODE_PREFIX)
            .is_some_and(|n| !n.is_empty())
}
