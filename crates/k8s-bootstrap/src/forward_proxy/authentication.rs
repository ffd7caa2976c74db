//! How the forward proxy authenticates requests: add-on JWTs, or delegated to the API server
//! (`TokenReview`, `SubjectAccessReview`) with the identity handed on in headers as
//! kube-rbac-proxy hands it.

use std::fmt;

use http::{HeaderName, HeaderValue};

use crate::addon_jwt::{Audience, Issuer, KeySet, Sidecar, Validation};
use crate::delegated::DelegatedAuthLayer;
use crate::delegated_auth::UserInfo;

#[cfg(doc)]
use super::Config;
use super::{Error, KeySource};

/// How the forward proxy decides who a request comes from, and whether it goes on.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Authentication {
    /// Add-on JWTs (`add-auth`), verified offline with the keys of `keys` for the issuer
    /// `issuer` and [`Config::audiences`]; the add-on gets `X-Authenticated-User`. What
    /// [`Config::new`] chooses.
    AddonJwt {
        /// The accepted token issuer (the `iss` claim).
        issuer: String,
        /// Where the verification keys come from.
        keys: KeySource,
    },
    /// Delegated to the API server, as kube-rbac-proxy does: the bearer token reviewed
    /// (`TokenReview`), the request authorized (`SubjectAccessReview`) by the
    /// [`DelegatedAuthLayer`]; the add-on gets the user in [`AuthHeaders`]. What
    /// [`Config::delegated`] chooses.
    Delegated(Delegated),
}

/// The delegated mode's settings: the layer that reviews each request, and the headers the
/// add-on gets the verified user in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Delegated {
    /// Authentication and authorization: its token audiences, attributes (kube-rbac-proxy's
    /// `--config-file` with [`DelegatedAuthLayer::rbac_proxy_config`]), caches and review
    /// limits are the proxy's. Its 401, 403 and 500 answers are kube-apiserver's.
    pub layer: DelegatedAuthLayer,
    /// The headers the verified user is sent to the add-on in; `None`: none (kube-rbac-proxy
    /// without `--auth-header-fields-enabled`). Either way, the client's own copies of these
    /// headers, of every identity header the add-on JWT mode removes and of those of
    /// [`Config::strip_headers`] are removed, in the header section and in the trailers, and
    /// `Authorization` is never forwarded. Default: [`AuthHeaders::default`].
    pub auth_headers: Option<AuthHeaders>,
}

impl Delegated {
    /// `layer`, with the user sent in [`AuthHeaders::default`].
    #[must_use]
    pub fn new(layer: DelegatedAuthLayer) -> Delegated {
        Delegated {
            layer,
            auth_headers: Some(AuthHeaders::default()),
        }
    }

    /// Sets [`Delegated::auth_headers`].
    #[must_use]
    pub fn auth_headers(mut self, headers: Option<AuthHeaders>) -> Delegated {
        self.auth_headers = headers;
        self
    }
}

impl From<DelegatedAuthLayer> for Delegated {
    fn from(layer: DelegatedAuthLayer) -> Delegated {
        Delegated::new(layer)
    }
}

/// kube-rbac-proxy's `--auth-header-user-field-name`: `x-remote-user`.
pub const DEFAULT_USER_HEADER: &str = "x-remote-user";
/// kube-rbac-proxy's `--auth-header-groups-field-name`: `x-remote-groups`.
pub const DEFAULT_GROUPS_HEADER: &str = "x-remote-groups";
/// kube-rbac-proxy's `--auth-header-groups-field-separator`: `|`.
pub const DEFAULT_GROUPS_SEPARATOR: &str = "|";

/// The headers the delegated mode hands the verified user to the add-on in, as kube-rbac-proxy
/// with `--auth-header-fields-enabled`: the user's name in one, its groups joined by a
/// separator in the other (both set on every forwarded request, the groups header empty for a
/// user without groups).
#[derive(Clone, PartialEq, Eq)]
pub struct AuthHeaders {
    user: HeaderName,
    groups: HeaderName,
    separator: String,
}

impl AuthHeaders {
    /// The user in `user`, the groups in `groups` joined by `separator`.
    ///
    /// # Errors
    ///
    /// [`Error::AuthHeaders`] when a name is not a header name, both are the same header, or
    /// the separator is empty or holds a character no header value may (a control character).
    pub fn new(user: &str, groups: &str, separator: &str) -> Result<AuthHeaders, Error> {
        let name = |n: &str, what: &'static str| {
            HeaderName::from_bytes(n.as_bytes()).map_err(|_| Error::AuthHeaders { what })
        };
        let user = name(user, "the user header name is not a header name")?;
        let groups = name(groups, "the groups header name is not a header name")?;
        if user == groups {
            return Err(Error::AuthHeaders {
                what: "the user and groups headers are the same",
            });
        }
        if separator.is_empty() || HeaderValue::from_str(separator).is_err() {
            return Err(Error::AuthHeaders {
                what: "the groups separator is empty or not a header value",
            });
        }
        Ok(AuthHeaders {
            user,
            groups,
            separator: separator.to_owned(),
        })
    }

    /// The header the user's name goes in.
    #[must_use]
    pub fn user_header(&self) -> &str {
        self.user.as_str()
    }

    /// The header the user's groups go in.
    #[must_use]
    pub fn groups_header(&self) -> &str {
        self.groups.as_str()
    }

    /// What the groups are joined by.
    #[must_use]
    pub fn groups_separator(&self) -> &str {
        &self.separator
    }
}

impl Default for AuthHeaders {
    /// kube-rbac-proxy's defaults: `x-remote-user`, `x-remote-groups`, `|`.
    fn default() -> AuthHeaders {
        AuthHeaders {
            user: HeaderName::from_static(DEFAULT_USER_HEADER),
            groups: HeaderName::from_static(DEFAULT_GROUPS_HEADER),
            separator: DEFAULT_GROUPS_SEPARATOR.to_owned(),
        }
    }
}

impl fmt::Debug for AuthHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthHeaders")
            .field("user", &self.user.as_str())
            .field("groups", &self.groups.as_str())
            .field("separator", &self.separator)
            .finish()
    }
}

/// What the delegated mode does to a request the layer let through, before the add-on.
pub(super) struct Handover {
    /// The header rule of the add-on JWT mode (no keys: it verifies nothing), with the
    /// identity headers of [`AuthHeaders`] added to the names it removes.
    pub(super) rule: Sidecar,
    pub(super) headers: Option<AuthHeaders>,
}

/// Why a request the layer let through is not forwarded.
#[derive(Debug)]
pub(super) struct Unsendable;

impl Handover {
    /// The rule for `headers`, removing `strip` too.
    pub(super) fn new(headers: Option<AuthHeaders>, strip: &[String]) -> Result<Handover, Error> {
        // kube-rbac-proxy's names are removed even when the user goes in others, or in none.
        let identity = [headers.clone().unwrap_or_default(), AuthHeaders::default()]
            .into_iter()
            .flat_map(|h| [h.user.as_str().to_owned(), h.groups.as_str().to_owned()]);
        let names: Vec<String> = strip.iter().cloned().chain(identity).collect();
        let rule = Sidecar::new(
            KeySet::new(),
            Validation::new(Issuer::new("delegated"), Audience::new("delegated")),
        )
        .cache_capacity(0)
        .strip_headers(names)
        .map_err(Error::StripHeaders)?;
        Ok(Handover { rule, headers })
    }

    /// Removes what must not reach the add-on and adds the user's headers; `Err` when the
    /// user's name or a group cannot be a header value (a control character in it).
    pub(super) fn apply(
        &self,
        headers: &mut http::HeaderMap,
        user: Option<&UserInfo>,
    ) -> Result<(), Unsendable> {
        self.rule.strip_request_headers(headers);
        let (Some(names), Some(user)) = (&self.headers, user) else {
            return Ok(());
        };
        let name = HeaderValue::from_bytes(user.name.as_bytes()).map_err(|_| Unsendable)?;
        let groups = HeaderValue::from_bytes(user.groups.join(&names.separator).as_bytes())
            .map_err(|_| Unsendable)?;
        headers.insert(names.user.clone(), name);
        headers.insert(names.groups.clone(), groups);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_header_names_are_checked() {
        assert!(AuthHeaders::new("x-user", "x-groups", ",").is_ok());
        for (user, groups, separator) in [
            ("x user", "x-groups", "|"),
            ("x-user", "", "|"),
            ("x-user", "X-User", "|"),
            ("x-user", "x-groups", ""),
            ("x-user", "x-groups", "\n"),
        ] {
            assert!(
                matches!(
                    AuthHeaders::new(user, groups, separator),
                    Err(Error::AuthHeaders { .. })
                ),
                "{user:?} {groups:?} {separator:?}"
            );
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        let mut info = UserInfo::new(name);
        info.groups = groups.iter().map(|g| (*g).to_owned()).collect();
        info
    }

    #[test]
    fn the_clients_identity_goes_the_users_comes() {
        let handover = Handover::new(
            Some(AuthHeaders::new("x-user", "x-groups", ",").unwrap()),
            &["x-tenant".to_owned()],
        )
        .unwrap();
        let mut headers = http::HeaderMap::new();
        for (name, value) in [
            ("x-user", "admin"),
            ("x_groups", "system:masters"),
            ("x-remote-user", "admin"),
            ("impersonate-user", "admin"),
            ("x-tenant", "other"),
            ("authorization", "Bearer abc"),
            ("accept", "*/*"),
        ] {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let jane = user("jane", &["a", "b"]);
        assert!(handover.apply(&mut headers, Some(&jane)).is_ok());
        let mut seen: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("?").to_owned()))
            .collect();
        seen.sort();
        let expected = [("accept", "*/*"), ("x-groups", "a,b"), ("x-user", "jane")]
            .map(|(n, v)| (n.to_owned(), v.to_owned()));
        assert_eq!(seen, expected);

        // A control character in a name: not sent.
        assert!(
            handover
                .apply(&mut headers, Some(&user("ja\nne", &[])))
                .is_err()
        );
        // Without a user (an ignored path), or with the headers off: removed, none added.
        let off = Handover::new(None, &[]).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "x-remote-groups",
            HeaderValue::from_static("system:masters"),
        );
        assert!(off.apply(&mut headers, Some(&jane)).is_ok());
        assert!(headers.is_empty(), "{headers:?}");
    }
}
