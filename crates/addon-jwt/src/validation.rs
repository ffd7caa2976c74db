//! What a token must satisfy besides its signature.

use std::time::Duration;

use crate::{Algorithm, Audience, Issuer};

/// The claim policy for [`verify`](crate::verify).
///
/// Defaults: `exp`, `iat`, `nbf`, `iss`, `sub` and `aud` are all required; leeway 0; the
/// asymmetric algorithms ([`Algorithm::ASYMMETRIC`]) are allowed (`HS256` only when listed with
/// [`Validation::algorithms`]); a `typ` header, when present, must be `JWT`.
///
/// ```
/// use std::time::Duration;
/// use addon_jwt::{Algorithm, Audience, Issuer, Validation};
/// let v = Validation::new(
///     Issuer::new("https://kubernetes.default.svc"),
///     Audience::new("kube-system/dashboard"),
/// )
///     .algorithms(&[Algorithm::Es256, Algorithm::EdDsa])
///     .leeway(Duration::from_secs(30));
/// assert!(v.allows(Algorithm::Es256));
/// assert!(!v.allows(Algorithm::Rs256));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    issuers: Vec<Issuer>,
    audiences: Vec<Audience>,
    algorithms: u8,
    leeway: Duration,
}

impl Validation {
    /// A policy accepting tokens from `issuer` for `audience`.
    ///
    /// The two are distinct types, so they cannot be swapped (see [`Issuer`]).
    #[must_use]
    pub fn new(issuer: Issuer, audience: Audience) -> Validation {
        let mut algorithms = 0;
        for alg in Algorithm::ASYMMETRIC {
            algorithms |= alg.bit();
        }
        Validation {
            issuers: vec![issuer],
            audiences: vec![audience],
            algorithms,
            leeway: Duration::ZERO,
        }
    }

    /// Replaces the allowed algorithms. A key still only verifies its own algorithm.
    #[must_use]
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Validation {
        self.algorithms = algorithms.iter().fold(0, |acc, a| acc | a.bit());
        self
    }

    /// Sets the clock-skew leeway applied to `exp`, `nbf` and `iat`.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Validation {
        self.leeway = leeway;
        self
    }

    /// Also accepts `audience` (a token needs one `aud` value among the accepted audiences).
    #[must_use]
    pub fn audience(mut self, audience: Audience) -> Validation {
        self.audiences.push(audience);
        self
    }

    /// Also accepts tokens from `issuer`.
    #[must_use]
    pub fn issuer(mut self, issuer: Issuer) -> Validation {
        self.issuers.push(issuer);
        self
    }

    /// Whether `alg` is allowed.
    #[must_use]
    pub fn allows(&self, alg: Algorithm) -> bool {
        self.algorithms & alg.bit() != 0
    }

    /// The accepted audiences.
    #[must_use]
    pub fn audiences(&self) -> &[Audience] {
        &self.audiences
    }

    /// The accepted issuers.
    #[must_use]
    pub fn issuers(&self) -> &[Issuer] {
        &self.issuers
    }

    /// The leeway.
    #[must_use]
    pub fn leeway_duration(&self) -> Duration {
        self.leeway
    }
}
