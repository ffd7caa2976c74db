//! The kube-apiserver bootstrap-token authenticator.

use std::borrow::Borrow;
use std::fmt;
use std::time::SystemTime;

use subtle::ConstantTimeEq;

use crate::constants::{
    AUTH_EXTRA_GROUPS_KEY, NAMESPACE, SECRET_TYPE, TOKEN_ID_KEY, TOKEN_SECRET_KEY,
    USAGE_AUTHENTICATION_KEY,
};
use crate::token::split_token;
use crate::{ExpirationStatus, SecretObject, TokenId, parse_groups};

/// What the authenticator decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthOutcome {
    /// The bearer token is not of the bootstrap-token form: let the next authenticator try.
    NotABootstrapToken,
    /// The token has the bootstrap form but is not accepted. Kubernetes answers "not
    /// authenticated" (no error); the reason is for audit logs and never contains the secret.
    Rejected {
        /// The token ID presented (public).
        token_id: TokenId,
        /// Why.
        reason: RejectReason,
    },
    /// Authenticated.
    Authenticated(Authenticated),
}

impl AuthOutcome {
    /// The authenticated identity, if any.
    #[must_use]
    pub fn authenticated(&self) -> Option<&Authenticated> {
        match self {
            Self::Authenticated(a) => Some(a),
            _ => None,
        }
    }
}

/// Why a well-formed bootstrap token was not authenticated, in the order the API server checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// No Secret `kube-system/bootstrap-token-<id>`.
    NotFound,
    /// The lookup returned a Secret with another name or namespace (a lookup bug; Kubernetes'
    /// namespaced lister cannot do this, so it is rejected defensively).
    WrongSecret,
    /// The Secret has a deletion timestamp.
    DeletionPending,
    /// The Secret's type is not `bootstrap.kubernetes.io/token`, or it has no `data`.
    InvalidType,
    /// `token-secret` differs from the presented secret (compared in constant time).
    SecretMismatch,
    /// `token-id` differs from the presented ID.
    TokenIdMismatch,
    /// The token expired (at or after its `expiration`).
    Expired,
    /// `expiration` is not an RFC 3339 time Go accepts: treated as expired.
    UnparseableExpiration,
    /// `usage-bootstrap-authentication` is not exactly `true`.
    NotForAuthentication,
    /// An `auth-extra-groups` entry is invalid; the whole token is refused.
    InvalidExtraGroups,
}

impl RejectReason {
    /// A short lowercase description for logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "no secret matches the token id",
            Self::WrongSecret => "lookup returned a secret with another name or namespace",
            Self::DeletionPending => "secret is deleted and awaiting removal",
            Self::InvalidType => "secret has an invalid type or no data",
            Self::SecretMismatch => "secret has a different token-secret",
            Self::TokenIdMismatch => "secret has a different token-id",
            Self::Expired => "token has expired",
            Self::UnparseableExpiration => "token expiration is unparseable (treated as expired)",
            Self::NotForAuthentication => {
                "secret is not marked usage-bootstrap-authentication=true"
            }
            Self::InvalidExtraGroups => "secret has an invalid auth-extra-groups value",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An authenticated bootstrap token: user `system:bootstrap:<id>` and its groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    token_id: TokenId,
    user_name: String,
    groups: Vec<String>,
}

impl Authenticated {
    /// The token ID.
    #[must_use]
    pub fn token_id(&self) -> &TokenId {
        &self.token_id
    }

    /// `system:bootstrap:<id>`.
    #[must_use]
    pub fn user_name(&self) -> &str {
        &self.user_name
    }

    /// The groups: `system:bootstrappers` plus the extra groups, sorted and deduplicated. (The
    /// API server later adds `system:authenticated`; that is not this authenticator's doing.)
    #[must_use]
    pub fn groups(&self) -> &[String] {
        &self.groups
    }
}

/// The kube-apiserver bootstrap-token authenticator as a pure function.
///
/// `lookup` is given the parsed token ID and returns the Secret `kube-system/bootstrap-token-<id>`
/// (`Ok(None)` when it does not exist); any other lookup failure is returned as `Err`, as the
/// API server returns lister errors. The checks run in the API server's order:
///
/// 1. the token matches `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`, else [`AuthOutcome::NotABootstrapToken`];
/// 2. the Secret exists ([`RejectReason::NotFound`]) and is the one asked for ([`RejectReason::WrongSecret`]);
/// 3. no deletion timestamp;
/// 4. type `bootstrap.kubernetes.io/token` and `data` present;
/// 5. `token-secret` equals the presented secret — **constant-time**, no trimming;
/// 6. `token-id` equals the presented ID;
/// 7. not expired at `now` (unparseable counts as expired; expired at the exact instant);
/// 8. `usage-bootstrap-authentication` is exactly `true`;
/// 9. every `auth-extra-groups` entry is valid.
///
/// The reject path does not allocate (proven by a counting-allocator test).
///
/// ```
/// use bootstrap_token::{AuthOutcome, RejectReason, SecretObject, authenticate};
/// use std::collections::BTreeMap;
/// use std::time::UNIX_EPOCH;
/// let data: BTreeMap<String, Vec<u8>> = [
///     ("token-id", "abcdef"),
///     ("token-secret", "0123456789abcdef"),
///     ("usage-bootstrap-authentication", "true"),
/// ]
/// .into_iter()
/// .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
/// .collect();
/// let secret = SecretObject::new(
///     "bootstrap-token-abcdef", "kube-system", "bootstrap.kubernetes.io/token", Some(data),
/// );
/// let lookup = |id: &bootstrap_token::TokenId| {
///     Ok::<_, std::convert::Infallible>((id.as_str() == "abcdef").then_some(&secret))
/// };
/// let ok = authenticate("abcdef.0123456789abcdef", UNIX_EPOCH, lookup)?;
/// let user = ok.authenticated().unwrap();
/// assert_eq!(user.user_name(), "system:bootstrap:abcdef");
/// assert_eq!(user.groups(), ["system:bootstrappers"]);
/// let bad = authenticate("abcdef.0123456789abcdeg", UNIX_EPOCH, lookup)?;
/// assert!(matches!(bad, AuthOutcome::Rejected { reason: RejectReason::SecretMismatch, .. }));
/// assert_eq!(authenticate("not-a-token", UNIX_EPOCH, lookup)?, AuthOutcome::NotABootstrapToken);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// Only what `lookup` returns as `Err`.
pub fn authenticate<S, E, F>(token: &str, now: SystemTime, lookup: F) -> Result<AuthOutcome, E>
where
    F: FnOnce(&TokenId) -> Result<Option<S>, E>,
    S: Borrow<SecretObject>,
{
    let Some((id, secret)) = parse_borrowed(token.as_bytes()) else {
        return Ok(AuthOutcome::NotABootstrapToken);
    };
    let reject = |reason| AuthOutcome::Rejected {
        token_id: id,
        reason,
    };
    let Some(found) = lookup(&id)? else {
        return Ok(reject(RejectReason::NotFound));
    };
    let s: &SecretObject = found.borrow();
    Ok(match check(&id, secret, s, now) {
        Err(reason) => reject(reason),
        Ok(groups) => AuthOutcome::Authenticated(Authenticated {
            token_id: id,
            user_name: id.user_name(),
            groups,
        }),
    })
}

fn check(
    id: &TokenId,
    secret: &[u8],
    s: &SecretObject,
    now: SystemTime,
) -> Result<Vec<String>, RejectReason> {
    let name_ok = s
        .name()
        .strip_prefix(crate::SECRET_NAME_PREFIX)
        .is_some_and(|rest| rest.as_bytes() == id.as_bytes());
    if !name_ok || s.namespace() != NAMESPACE {
        return Err(RejectReason::WrongSecret);
    }
    if s.is_deletion_pending() {
        return Err(RejectReason::DeletionPending);
    }
    if s.secret_type() != SECRET_TYPE || s.data_map().is_none() {
        return Err(RejectReason::InvalidType);
    }
    if !bool::from(s.data_or_empty(TOKEN_SECRET_KEY).ct_eq(secret)) {
        return Err(RejectReason::SecretMismatch);
    }
    if s.data_or_empty(TOKEN_ID_KEY) != id.as_bytes() {
        return Err(RejectReason::TokenIdMismatch);
    }
    match s.expiration(now) {
        ExpirationStatus::Expired { .. } => return Err(RejectReason::Expired),
        ExpirationStatus::Unparseable => return Err(RejectReason::UnparseableExpiration),
        _ => {}
    }
    if s.data_or_empty(USAGE_AUTHENTICATION_KEY) != b"true" {
        return Err(RejectReason::NotForAuthentication);
    }
    parse_groups(s.data_or_empty(AUTH_EXTRA_GROUPS_KEY))
        .map_err(|_| RejectReason::InvalidExtraGroups)
}

/// Parses a token without copying the secret; every secret byte is examined.
fn parse_borrowed(bytes: &[u8]) -> Option<(TokenId, &[u8])> {
    let (id, secret) = split_token(bytes)?;
    let id = TokenId::from_bytes(id).ok()?;
    let mut ok = true;
    for &b in secret {
        ok &= crate::constants::is_token_char(b);
    }
    ok.then_some((id, secret))
}
