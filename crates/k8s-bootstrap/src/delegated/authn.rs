//! The authenticators that decide without the API server, in `k8s.io/apiserver`'s union order
//! (front proxy, then x509 client certificates, then service-account tokens offline), and the
//! identity headers removed from every request.

use std::sync::Arc;
use std::time::SystemTime;

use delegated_auth::{
    BearerTokenRef, ClientCa, FrontProxyAuthenticator, RequestHeaderConfig,
    ServiceAccountAuthenticator, UserInfo,
};
use http::HeaderMap;

use crate::ClientCertificates;

/// `user.AllAuthenticated`.
const ALL_AUTHENTICATED: &str = "system:authenticated";
/// `user.AllUnauthenticated`.
const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// `user.Anonymous`.
const ANONYMOUS: &str = "system:anonymous";

/// Whether bearer tokens that no offline authenticator accepts are reviewed by the API server
/// (`TokenReview`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TokenReviews {
    /// Reviewed (the default): the API server decides every token the layer cannot.
    #[default]
    Enabled,
    /// Never reviewed: a token is accepted only by
    /// [`service_account_tokens`](super::DelegatedAuthLayer::service_account_tokens), offline;
    /// any other is answered 401 without a call to the API server.
    Disabled,
}

/// The offline authenticators configured on a layer.
#[derive(Clone)]
pub(super) struct Authenticators {
    pub(super) front_proxy: Option<Arc<FrontProxyAuthenticator>>,
    pub(super) client_ca: Option<Arc<ClientCa>>,
    pub(super) service_accounts: Option<Arc<ServiceAccountAuthenticator>>,
    pub(super) token_reviews: TokenReviews,
    /// The identity headers removed from every request: the front proxy's, if configured, and
    /// kube-apiserver's defaults (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`,
    /// `X-Remote-Extra-*`).
    defaults: Arc<RequestHeaderConfig>,
}

impl Default for Authenticators {
    fn default() -> Self {
        Authenticators {
            front_proxy: None,
            client_ca: None,
            service_accounts: None,
            token_reviews: TokenReviews::Enabled,
            defaults: Arc::new(RequestHeaderConfig::kube_apiserver_defaults()),
        }
    }
}

impl Authenticators {
    /// The user a client certificate names, if any: the front proxy's user (a chain that
    /// verifies against the requestheader CA, with an allowed common name, and a username
    /// header), else the certificate's own user (a chain that verifies against the client CA).
    /// A chain that fails one authenticator goes on to the next, as in `k8s.io/apiserver`'s
    /// union; `None` leaves the request to its bearer token. `clock` is read only when a chain
    /// is to be verified.
    pub(super) fn certificate_user(
        &self,
        certificates: Option<&ClientCertificates>,
        headers: &HeaderMap,
        clock: fn() -> SystemTime,
    ) -> Option<UserInfo> {
        if self.front_proxy.is_none() && self.client_ca.is_none() {
            return None;
        }
        let chain = certificates.filter(|c| !c.is_empty())?.as_slice();
        let now = clock();
        if let Some(front_proxy) = &self.front_proxy {
            let pairs: Vec<(&[u8], &[u8])> = headers
                .iter()
                .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()))
                .collect();
            match front_proxy.authenticate(chain, &pairs, now) {
                Ok(Some(user)) => return Some(with_authenticated_group(user)),
                Ok(None) => {}
                Err(error) => {
                    tracing::debug!(%error, "delegated authentication: not the front proxy");
                }
            }
        }
        if let Some(ca) = &self.client_ca {
            match ca.authenticate(chain, now) {
                Ok(Some(user)) => return Some(with_authenticated_group(user)),
                Ok(None) => {}
                Err(error) => {
                    tracing::debug!(%error, "delegated authentication: client certificate refused");
                }
            }
        }
        None
    }

    /// The user of a projected service-account token verified offline, if configured and the
    /// token verifies (`clock` read only then).
    pub(super) fn offline_token_user(
        &self,
        token: BearerTokenRef<'_>,
        clock: fn() -> SystemTime,
    ) -> Option<UserInfo> {
        match self.service_accounts.as_ref()?.authenticate(token, clock()) {
            Ok(user) => Some(with_authenticated_group(user)),
            Err(error) => {
                // The verifier's errors never hold the token.
                tracing::debug!(%error, "delegated authentication: not a valid service-account token");
                None
            }
        }
    }

    /// Removes every identity header (the front proxy's configured ones and kube-apiserver's
    /// defaults) from `headers`, whoever sent them.
    pub(super) fn remove_identity_headers(&self, headers: &mut HeaderMap) {
        let configured = self
            .front_proxy
            .as_deref()
            .map(FrontProxyAuthenticator::headers);
        let is_identity = |name: &http::HeaderName| {
            let name = name.as_str().as_bytes();
            self.defaults.is_identity_header(name)
                || configured.is_some_and(|c| c.is_identity_header(name))
        };
        if !headers.keys().any(is_identity) {
            return;
        }
        let names: Vec<http::HeaderName> =
            headers.keys().filter(|n| is_identity(n)).cloned().collect();
        for name in names {
            headers.remove(name);
        }
    }

    /// Whether any authenticator besides the TokenReview is configured.
    pub(super) fn describe(&self) -> [(&'static str, bool); 4] {
        [
            ("front_proxy", self.front_proxy.is_some()),
            ("client_ca", self.client_ca.is_some()),
            ("service_account_tokens", self.service_accounts.is_some()),
            ("token_reviews", self.token_reviews == TokenReviews::Enabled),
        ]
    }
}

/// `k8s.io/apiserver`'s `AuthenticatedGroupAdder`: every authenticated user but the anonymous
/// one is in `system:authenticated`.
pub(super) fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if user.name != ANONYMOUS
        && !user
            .groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
    {
        user.groups.push(ALL_AUTHENTICATED.to_owned());
    }
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authenticated_group_is_added_once_and_never_to_the_anonymous_user() {
        let alice = with_authenticated_group(UserInfo::new("alice").with_groups(["dev"]));
        assert_eq!(alice.groups, ["dev", ALL_AUTHENTICATED]);
        assert_eq!(with_authenticated_group(alice.clone()), alice);
        assert!(
            with_authenticated_group(UserInfo::new(ANONYMOUS))
                .groups
                .is_empty()
        );
        let unauth = UserInfo::new("x").with_groups([ALL_UNAUTHENTICATED]);
        assert_eq!(with_authenticated_group(unauth.clone()), unauth);
    }

    #[test]
    fn kube_apiserver_default_identity_headers_are_removed_in_any_case() {
        let mut a = Authenticators::default();
        let mut headers = HeaderMap::new();
        for (n, v) in [
            ("x-remote-user", "mallory"),
            ("X-Remote-Group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("x-remote-uid", "1"),
            ("x-forwarded-user", "mallory"),
            ("accept", "*/*"),
        ] {
            headers.append(
                http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        a.remove_identity_headers(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(http::HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "x-forwarded-user"]);
        a.token_reviews = TokenReviews::Disabled;
        assert!(a.describe().iter().all(|(_, on)| !on));
    }
}
