//! The API server's half of add-on authentication: what a server that authenticates users and
//! proxies their requests to Services does with `add-auth=true`.

use core::fmt;

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

#[cfg(test)]
mod tests {
    use super::AuthenticatedUser;

    #[test]
    fn the_name_is_kept_and_shown() {
        let user = AuthenticatedUser::new("jane");
        assert_eq!(user.name(), "jane");
        assert_eq!(format!("{user:?}"), "AuthenticatedUser(\"jane\")");
    }
}
