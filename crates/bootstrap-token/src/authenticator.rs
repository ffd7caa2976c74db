//! The kube-apiserver bootstrap-token authenticator.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::time::SystemTime;

use subtle::ConstantTimeEq;

use crate::constants::{
    AUTH_EXTRA_GROUPS_KEY, EXPIRATION_KEY, NAMESPACE, SECRET_TYPE, TOKEN_ID_KEY, TOKEN_SECRET_KEY,
    USAGE_AUTHENTICATION_KEY,
};
use crate::group::groups_cow;
use crate::token::split_token;
use crate::{ExpirationStatus, SecretObject, TokenId};

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

/// Length of `system:bootstrap:<id>`.
const USER_NAME_LEN: usize = 23;

/// An authenticated bootstrap token: user `system:bootstrap:<id>` and its groups.
#[derive(Clone, PartialEq, Eq)]
pub struct Authenticated {
    token_id: TokenId,
    user_name: [u8; USER_NAME_LEN],
    groups: Vec<Cow<'static, str>>,
}

impl fmt::Debug for Authenticated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticated")
            .field("token_id", &self.token_id)
            .field("user_name", &self.user_name())
            .field("groups", &self.groups)
            .finish()
    }
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
        // Always ASCII by construction.
        std::str::from_utf8(&self.user_name).unwrap_or_default()
    }

    /// The groups: `system:bootstrappers` plus the extra groups, sorted and deduplicated. (The
    /// API server later adds `system:authenticated`; that is not this authenticator's doing.)
    #[must_use]
    pub fn groups(&self) -> &[Cow<'static, str>] {
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
        Ok(groups) => {
            let mut user_name = [0u8; USER_NAME_LEN];
            let prefix = crate::BOOTSTRAP_USER_PREFIX.as_bytes().iter();
            for (slot, &b) in user_name.iter_mut().zip(prefix.chain(id.as_bytes())) {
                *slot = b;
            }
            AuthOutcome::Authenticated(Authenticated {
                token_id: id,
                user_name,
                groups,
            })
        }
    })
}

/// The data values the authenticator reads (`GetData`: empty when missing).
#[derive(Default)]
struct Fields<'a> {
    secret: &'a [u8],
    id: &'a [u8],
    expiration: &'a [u8],
    usage: &'a [u8],
    groups: &'a [u8],
}

impl<'a> Fields<'a> {
    fn of(s: &'a SecretObject) -> Self {
        let Some(map) = s.data_map() else {
            return Self::default();
        };
        // A token Secret has about seven keys: one pass beats five tree lookups. Large maps
        // keep logarithmic lookups, so a Secret full of junk keys costs no more per request.
        if map.len() > 16 {
            return Self {
                secret: s.data_or_empty(TOKEN_SECRET_KEY),
                id: s.data_or_empty(TOKEN_ID_KEY),
                expiration: s.data_or_empty(EXPIRATION_KEY),
                usage: s.data_or_empty(USAGE_AUTHENTICATION_KEY),
                groups: s.data_or_empty(AUTH_EXTRA_GROUPS_KEY),
            };
        }
        let mut f = Self::default();
        for (k, v) in map {
            let slot = match k.as_str() {
                TOKEN_SECRET_KEY => &mut f.secret,
                TOKEN_ID_KEY => &mut f.id,
                EXPIRATION_KEY => &mut f.expiration,
                USAGE_AUTHENTICATION_KEY => &mut f.usage,
                AUTH_EXTRA_GROUPS_KEY => &mut f.groups,
                _ => continue,
            };
            *slot = v;
        }
        f
    }
}

fn check(
    id: &TokenId,
    secret: &[u8],
    s: &SecretObject,
    now: SystemTime,
) -> Result<Vec<Cow<'static, str>>, RejectReason> {
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
    let f = Fields::of(s);
    if !bool::from(f.secret.ct_eq(secret)) {
        return Err(RejectReason::SecretMismatch);
    }
    if f.id != id.as_bytes() {
        return Err(RejectReason::TokenIdMismatch);
    }
    match ExpirationStatus::at(f.expiration, now) {
        ExpirationStatus::Expired { .. } => return Err(RejectReason::Expired),
        ExpirationStatus::Unparseable => return Err(RejectReason::UnparseableExpiration),
        _ => {}
    }
    if f.usage != b"true" {
        return Err(RejectReason::NotForAuthentication);
    }
    groups_cow(f.groups).map_err(|_| RejectReason::InvalidExtraGroups)
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
