//! The API server's half of add-on authentication: what a server that authenticates users and
//! proxies their requests to Services does with `add-auth=true`.

use core::fmt;

use crate::Audience;

/// The user a server or gateway authenticated, in the form the `add-auth` decision takes it.
///
/// A server puts this in a request's extensions (`http::Extensions`) once it has authenticated
/// the caller; the add-auth layer reads it from there. A user name is not a secret, so `Debug`
/// shows it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct AuthenticatedUser {
    name: String,
}

impl AuthenticatedUser {
    /// The user called `name` (as the server's authenticator named it: for a kubeconfig's
    /// client certificate, the subject's common name).
    #[must_use]
    pub fn new(name: impl Into<String>) -> AuthenticatedUser {
        AuthenticatedUser { name: name.into() }
    }

    /// The user's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for AuthenticatedUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuthenticatedUser")
            .field(&self.name)
            .finish()
    }
}

/// The Service a proxied request is for: the add-on's audience is `<namespace>/<name>`.
///
/// A server puts this in a request's extensions beside [`AuthenticatedUser`] once it has
/// resolved the proxy path (`/api/v1/namespaces/<namespace>/services/<name>[:<port>]/proxy/...`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProxiedService {
    namespace: String,
    name: String,
}

impl ProxiedService {
    /// The Service `name` in `namespace` (the name without any `:<port>` suffix).
    #[must_use]
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ProxiedService {
        ProxiedService {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The Service's namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Service's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The audience of the tokens minted for this Service: `<namespace>/<name>`, as
    /// `forward-proxy --audience-from-services` expects.
    #[must_use]
    pub fn audience(&self) -> Audience {
        Audience::new(format!("{}/{}", self.namespace, self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::{AuthenticatedUser, ProxiedService};

    #[test]
    fn a_service_s_audience_is_namespace_slash_name() {
        let service = ProxiedService::new("kube-system", "dashboard");
        assert_eq!(service.audience().as_str(), "kube-system/dashboard");
        assert_eq!(
            (service.namespace(), service.name()),
            ("kube-system", "dashboard")
        );
    }

    #[test]
    fn the_name_is_kept_and_shown() {
        let user = AuthenticatedUser::new("jane");
        assert_eq!(user.name(), "jane");
        assert_eq!(format!("{user:?}"), "AuthenticatedUser(\"jane\")");
    }
}
