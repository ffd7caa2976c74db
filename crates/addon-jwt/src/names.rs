//! Issuers and audiences as distinct types, so that one can never be passed for the other.

use core::fmt;

/// A token issuer (`iss`): kube-apiserver's `--service-account-issuer`, or the name a
/// [`Minter`](crate::Minter) signs as.
///
/// Issuers and audiences are both strings on the wire, but distinct types here: every
/// constructor that takes both ([`Validation::new`](crate::Validation::new),
/// [`ServiceAccountVerifier::new`](crate::ServiceAccountVerifier::new),
/// [`SigningKey::sign`](crate::SigningKey::sign)) names which is which, so a swap does not
/// compile:
///
/// ```compile_fail
/// use addon_jwt::{Audience, Issuer, Validation};
/// // An audience where the issuer belongs (and the other way round) is a type error.
/// let v = Validation::new(Audience::new("kube-system/dashboard"), Issuer::new("https://iss"));
/// ```
///
/// ```compile_fail
/// use addon_jwt::{KeySet, ServiceAccountVerifier};
/// // Plain strings are not accepted either.
/// let v = ServiceAccountVerifier::new(KeySet::new(), &["https://iss"], &["api"]);
/// ```
///
/// ```
/// use addon_jwt::{Audience, Issuer, Validation};
/// let v = Validation::new(Issuer::new("https://iss"), Audience::new("kube-system/dashboard"));
/// assert_eq!(v.issuers()[0].as_str(), "https://iss");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Issuer(String);

/// A token audience (one `aud` value): kube-apiserver's `--api-audiences`, or
/// `<namespace>/<service>` for an add-on. See [`Issuer`] for why the two are distinct types.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Audience(String);

impl Issuer {
    /// The issuer named `issuer`.
    #[must_use]
    pub fn new(issuer: impl Into<String>) -> Issuer {
        Issuer(issuer.into())
    }

    /// The issuer as it appears in `iss`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Audience {
    /// The audience named `audience`.
    #[must_use]
    pub fn new(audience: impl Into<String>) -> Audience {
        Audience(audience.into())
    }

    /// The audience as it appears in `aud`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
