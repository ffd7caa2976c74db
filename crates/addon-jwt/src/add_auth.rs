//! The API server's half of add-on authentication: what a server that authenticates users and
//! proxies their requests to Services does with `add-auth=true`.
//!
//! **Kubernetes' own kube-apiserver never implemented this half.** It is for servers and
//! gateways that authenticate users themselves and proxy their requests to Services
//! (`/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>`): an API-server
//! replacement, an authenticating gateway in front of a cluster, a test double. A request sent
//! through kube-apiserver keeps `add-auth=true` in its query and reaches the add-on without any
//! token.
//!
//! For a proxied request whose query asks for it (`add-auth=true`), [`AddAuth::decide`] takes
//! the authenticated user, the Service and `now`, and returns a [`Decision`]:
//!
//! * [`Decision::PassThrough`]: the query does not ask for a token; forward the request
//!   untouched (nothing is added, nothing removed, as kube-apiserver does);
//! * [`Decision::Inject`]: forward it with [`Injection::query`] as its query (every `add-auth`
//!   parameter removed, the others kept byte for byte and in order) and the header lines of
//!   [`Injection::headers`] (or `Injection::apply_to_headers` on an `http::HeaderMap`, feature
//!   `http`): every `Authorization` and client `X-Authenticated-User` line removed (any case,
//!   `_` read as `-`), then `Authorization: Bearer <token>`. The token's `sub` is the user,
//!   its `aud` `<namespace>/<name>`; it comes from the [`Minter`]'s cache while less than half
//!   its lifetime has passed, else is signed now;
//! * [`Decision::Refuse`]: the user is over the per-user rate limit; answer 429 with
//!   `Retry-After` ([`Refusal::retry_after_secs`]) and forward nothing.
//!
//! Refusing a revoked user, and bounding how long a proxied request may run, is the server's
//! own business (its authentication and its proxy): this decision only ever sees users the
//! server authenticated.
//!
//! # How the query is read
//!
//! As Go's `url.ParseQuery`, which kube-apiserver and client-go use: parameters are separated
//! by `&`; a key and its value are split at the first `=` and percent-decoded (`+` is a space);
//! keys are case-sensitive. So:
//!
//! * `add-auth=true` asks for a token, and so does `add%2Dauth=%74rue` (Go reads it as the
//!   same parameter); `Add-Auth=true` does not (another parameter, kept as it is);
//! * the value must be exactly `true`, not any of Go's `strconv.ParseBool` spellings:
//!   `add-auth=TRUE`, `add-auth=1`, `add-auth=t`, `add-auth=false`, `add-auth` and `add-auth=`
//!   pass the request through untouched. client-go and kube-rs users write `true`; anything
//!   else is no request for a credential;
//! * with several `add-auth` parameters, a token is injected only if **every** one of them is
//!   `true`: `add-auth=true&add-auth=false` passes through untouched (Go's `Get` would read
//!   only the first; a credential is never added on an ambiguous request). On injection every
//!   one of them is removed;
//! * an `add-auth` parameter Go would skip (a `;` in it, a bad `%` escape in its value)
//!   counts as one that is not `true`: the request passes through. A parameter whose *key*
//!   has a bad escape is not an `add-auth` parameter, and is kept;
//! * empty parameters (`&&`) are dropped from the rewritten query, as Go ignores them.
//!
//! # Which users, which Services
//!
//! The token's `sub` is the user's name, which the add-on's sidecar hands on as an
//! `X-Authenticated-User` header value: a name that is empty, longer than
//! [`MAX_SUBJECT_BYTES`], starts or ends with a space, or has a
//! control or non-ASCII character is refused with [`AddAuthError::UserNotHeaderSafe`] (answer
//! 500 or 403 as your server sees fit; never forward it). The Service's namespace and name must
//! be DNS labels (lower-case letters, digits, `-`; at most 63), or
//! [`AddAuthError::InvalidService`].
//!
//! The user is checked before it gets a bucket, the Service before a token is signed for it:
//! a user with a bucket, or a cached token, was checked then (the cache key `<user>`, NUL,
//! `<namespace>/<name>` with its one `/` is no other pair's), so a cache hit costs neither
//! check. The Service is therefore checked after the rate limit: a request for an invalid
//! Service counts against the user's bucket. (Tokens your own `Minter::mint` calls cached
//! before the minter was handed to [`AddAuth::new`] are served as they are.)
//!
//! # The rate limit
//!
//! Each user has a token bucket (kept as a generic cell-rate algorithm: one instant per user):
//! [`AddAuth::rate`] requests per period on average, up to [`AddAuth::burst`] at once. Every
//! request that asks for a token counts, cached or not; a refused one does not. At most
//! [`AddAuth::users_capacity`] users are tracked. When the table is full and a new user
//! arrives, the users whose buckets are full again are forgotten first (a full bucket is what
//! an unknown user gets, so nothing is lost); if none is, the user whose bucket is closest to
//! full is. A flood of new user names therefore cannot reset a limited user's bucket: every
//! user tracked that is further from full is kept, so the evicted user gains at most what the
//! least limited user still owes, and to evict a user the flood must first run every other
//! bucket further down than that user's. The table never holds more than its capacity (each
//! entry holds the name, at most `MAX_SUBJECT_BYTES`); that eviction scans the table once.
//!
//! The clock is `now`, passed in. If it steps back, no user waits longer than one interval
//! plus the burst's worth: a bucket never owes more than a full one can.
//!
//! ```
//! use std::num::NonZeroU32;
//! use std::time::{Duration, UNIX_EPOCH};
//! use addon_jwt::add_auth::{AddAuth, Decision, ProxiedService};
//! use addon_jwt::{RequestUser, Audience, Issuer, Minter, SigningKey, Validation, verify};
//! let pem = "-----BEGIN PRIVATE KEY-----\n\
//! MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
//! -----END PRIVATE KEY-----\n";
//! let key = SigningKey::from_pkcs8_pem(pem)?;
//! let keys = key.public_key_set()?;
//! let issuer = Issuer::new("https://apiserver.example");
//! let mut add_auth = AddAuth::new(Minter::new(key, issuer.clone()))
//!     .rate(NonZeroU32::new(5).unwrap(), Duration::from_secs(1))
//!     .burst(NonZeroU32::new(10).unwrap())
//!     .users_capacity(10_000);
//!
//! let user = RequestUser::new("jane");
//! let service = ProxiedService::new("kube-system", "dashboard");
//! let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let headers = [("Accept", "text/html"), ("Authorization", "Bearer the-user-s-own")];
//! match add_auth.decide(&user, &service, Some("watch=1&add-auth=true&x=%2F"), now)? {
//!     Decision::Inject(injection) => {
//!         assert_eq!(injection.query(), Some("watch=1&x=%2F"));
//!         let upstream: Vec<(&str, &[u8])> = injection.headers(&headers).collect();
//!         assert_eq!(upstream[0], ("Accept", &b"text/html"[..]));
//!         assert_eq!(upstream[1].0, "Authorization");
//!         // What the add-on's sidecar checks:
//!         let token = injection.token();
//!         let validation = Validation::new(issuer, Audience::new("kube-system/dashboard"));
//!         let claims = verify(token.expose_secret(), &keys, &validation, now)?;
//!         assert_eq!(claims.subject(), "jane");
//!     }
//!     Decision::PassThrough => unreachable!("add-auth=true asks for a token"),
//!     Decision::Refuse(refusal) => unreachable!("{refusal}"),
//!     _ => unreachable!(),
//! }
//! // No add-auth=true: the request goes on untouched.
//! let decision = add_auth.decide(&user, &service, Some("add-auth=TRUE"), now)?;
//! assert!(matches!(decision, Decision::PassThrough));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::iter::FusedIterator;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

use crate::sidecar::{is_header_safe, same_name};
use crate::{Audience, BearerToken, MAX_SUBJECT_BYTES, Minter};

/// The query parameter that asks for a token: `add-auth=true`.
pub const ADD_AUTH_PARAMETER: &str = "add-auth";
/// Default rate: requests per [`DEFAULT_RATE_PERIOD`] per user.
pub const DEFAULT_RATE: u32 = 10;
/// Default period of [`DEFAULT_RATE`]: one second.
pub const DEFAULT_RATE_PERIOD: Duration = Duration::from_secs(1);
/// Default burst: requests a user with a full bucket may make at once.
pub const DEFAULT_BURST: u32 = 20;
/// Default number of users whose buckets are tracked.
pub const DEFAULT_USERS_CAPACITY: usize = 4096;
/// Longest spelling of [`ADD_AUTH_PARAMETER`]: every byte `%`-escaped.
const MAX_ESCAPED_KEY: usize = 24;
/// Longest namespace or Service name (a DNS label).
const MAX_LABEL: usize = 63;

/// The user a server or gateway authenticated (Kubernetes' requesting user), in the form the
/// `add-auth` decision takes it.
///
/// A server puts this in a request's extensions (`http::Extensions`) once it has authenticated
/// the caller; the add-auth layer reads it from there. Not to be confused with the add-on
/// side's `k8s_bootstrap::sidecar::AuthenticatedUser`, which the sidecar sets from a verified
/// token. A user name is not a secret, so `Debug` shows it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestUser {
    name: String,
}

impl RequestUser {
    /// The user called `name` (as the server's authenticator named it: for a kubeconfig's
    /// client certificate, the subject's common name).
    #[must_use]
    pub fn new(name: impl Into<String>) -> RequestUser {
        RequestUser { name: name.into() }
    }

    /// The user's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for RequestUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RequestUser").field(&self.name).finish()
    }
}

/// The Service a proxied request is for: the add-on's audience is `<namespace>/<name>`.
///
/// A server puts this in a request's extensions beside [`RequestUser`] once it has
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

/// The `add-auth` decision of a server that authenticates users and proxies their requests to
/// Services (see the [module](self) documentation): a [`Minter`] and a per-user rate limit.
///
/// Decides through `&mut self`; a server shares one behind a lock (each decision is short and
/// never waits on anything).
pub struct AddAuth {
    minter: Minter,
    limiter: Limiter,
}

impl fmt::Debug for AddAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddAuth")
            .field("interval", &self.limiter.interval)
            .field("burst", &self.limiter.burst)
            .field("users_capacity", &self.limiter.capacity)
            .field("users_tracked", &self.limiter.buckets.len())
            .field("tokens_cached", &self.minter.cached())
            .finish_non_exhaustive()
    }
}

impl AddAuth {
    /// Mints with `minter` (its TTL and cache), limiting each user to [`DEFAULT_RATE`] requests
    /// per [`DEFAULT_RATE_PERIOD`], [`DEFAULT_BURST`] at once, [`DEFAULT_USERS_CAPACITY`] users
    /// tracked.
    #[must_use]
    pub fn new(minter: Minter) -> AddAuth {
        let mut limiter = Limiter {
            interval: Duration::ZERO,
            burst: NonZeroU32::MIN,
            tolerance: Duration::ZERO,
            capacity: DEFAULT_USERS_CAPACITY,
            buckets: HashMap::new(),
        };
        limiter.set(
            DEFAULT_RATE_PERIOD
                .checked_div(DEFAULT_RATE)
                .unwrap_or(Duration::ZERO),
            NonZeroU32::new(DEFAULT_BURST).unwrap_or(NonZeroU32::MIN),
        );
        AddAuth { minter, limiter }
    }

    /// Each user may make `requests` requests per `per` on average (one every `per /
    /// requests`). A `per` of zero sets no limit.
    #[must_use]
    pub fn rate(mut self, requests: NonZeroU32, per: Duration) -> AddAuth {
        let burst = self.limiter.burst;
        self.limiter.set(
            per.checked_div(requests.get()).unwrap_or(Duration::ZERO),
            burst,
        );
        self
    }

    /// A user whose bucket is full may make `burst` requests at once.
    #[must_use]
    pub fn burst(mut self, burst: NonZeroU32) -> AddAuth {
        let interval = self.limiter.interval;
        self.limiter.set(interval, burst);
        self
    }

    /// Tracks at most `users` users' buckets (at least one). See the [module](self)
    /// documentation for which one is forgotten when the table is full.
    #[must_use]
    pub fn users_capacity(mut self, users: usize) -> AddAuth {
        self.limiter.capacity = users.max(1);
        self
    }

    /// The minter.
    #[must_use]
    pub fn minter(&self) -> &Minter {
        &self.minter
    }

    /// Number of users whose buckets are tracked now (at most the capacity).
    #[must_use]
    pub fn users_tracked(&self) -> usize {
        self.limiter.buckets.len()
    }

    /// Decides on a request `user` sent to `service` with `query` (the URI's query, without
    /// `?`; `None` when it has none) at `now`. See the [module](self) documentation.
    ///
    /// # Errors
    ///
    /// Only for a request that asks for a token: [`AddAuthError::UserNotHeaderSafe`],
    /// [`AddAuthError::InvalidService`], or [`AddAuthError::Mint`] if signing fails. Never
    /// forward such a request.
    pub fn decide(
        &mut self,
        user: &RequestUser,
        service: &ProxiedService,
        query: Option<&str>,
        now: SystemTime,
    ) -> Result<Decision, AddAuthError> {
        let Some(query) = query else {
            return Ok(Decision::PassThrough);
        };
        let Asked::Yes { others } = asks_for_token(query) else {
            return Ok(Decision::PassThrough);
        };
        let name = user.name();
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        // A user with a bucket was checked when it got one; only valid names get one.
        match self.limiter.check_known(name, since_epoch) {
            Checked::Allowed => {}
            Checked::Refused(retry_after) => {
                return Ok(Decision::Refuse(Refusal { retry_after }));
            }
            Checked::Unknown => {
                if name.is_empty() || name.len() > MAX_SUBJECT_BYTES || !is_header_safe(name) {
                    return Err(AddAuthError::UserNotHeaderSafe);
                }
                self.limiter.insert(name, since_epoch);
            }
        }
        let audience = [service.namespace(), "/", service.name()];
        // A cached token was signed for a valid Service: its key, `<namespace>/<name>` with
        // one `/`, is no other pair's. The Service is checked before a token is signed.
        let (authorization, minted) =
            match self
                .minter
                .cached_with(name, &audience, now, authorization_value)
            {
                Some(value) => (value, false),
                None => {
                    if !is_dns_label(service.namespace()) || !is_dns_label(service.name()) {
                        return Err(AddAuthError::InvalidService);
                    }
                    self.minter
                        .mint_with(name, &audience, now, authorization_value)
                        .map_err(AddAuthError::Mint)?
                }
            };
        Ok(Decision::Inject(Injection {
            authorization,
            query: if others {
                without_add_auth(query)
            } else {
                None
            },
            minted,
        }))
    }
}

/// `Bearer <token>`.
fn authorization_value(token: &BearerToken) -> Zeroizing<String> {
    let token = token.expose_secret();
    let mut value = String::with_capacity(token.len().saturating_add(7));
    value.push_str("Bearer ");
    value.push_str(token);
    Zeroizing::new(value)
}

/// What to do with a proxied request: the outcome of [`AddAuth::decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a request must be forwarded as the decision says"]
pub enum Decision {
    /// The query does not ask for a token: forward the request untouched.
    PassThrough,
    /// Forward the request with the query and headers of the [`Injection`].
    Inject(Injection),
    /// The user is over the rate limit: answer 429 and forward nothing.
    Refuse(Refusal),
}

/// How to rewrite a request that asked for a token. `Debug` never shows the token; equality
/// compares it in constant time.
#[derive(Clone)]
pub struct Injection {
    /// `Bearer <token>`.
    authorization: Zeroizing<String>,
    query: Option<String>,
    minted: bool,
}

impl PartialEq for Injection {
    fn eq(&self, other: &Injection) -> bool {
        let same_token: bool = self
            .authorization
            .as_bytes()
            .ct_eq(other.authorization.as_bytes())
            .into();
        same_token & (self.query == other.query) & (self.minted == other.minted)
    }
}

impl Eq for Injection {}

impl fmt::Debug for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Injection")
            .field("authorization", &"Bearer <redacted>")
            .field("query", &self.query)
            .field("minted", &self.minted)
            .finish()
    }
}

impl Injection {
    /// The query to forward: the request's without any `add-auth` parameter (the others byte
    /// for byte and in order, empty ones dropped); `None` when nothing is left (send no `?`).
    #[must_use]
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// Whether the token was signed for this request (`false`: it came from the cache).
    #[must_use]
    pub fn minted(&self) -> bool {
        self.minted
    }

    /// The token (a credential: never log it).
    #[must_use]
    pub fn token(&self) -> BearerToken {
        BearerToken::new(
            self.authorization
                .strip_prefix("Bearer ")
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// The `Authorization` header value to send, `Bearer <token>` (a credential: never log it).
    #[must_use]
    pub fn expose_authorization(&self) -> &str {
        &self.authorization
    }

    /// The header lines to forward: `lines` (the request's, in order) without any
    /// `Authorization` or `X-Authenticated-User` line ([`is_replaced_header`]), then
    /// `Authorization: Bearer <token>`.
    #[must_use]
    pub fn headers<'a, N, V>(&'a self, lines: &'a [(N, V)]) -> InjectedHeaders<'a, N, V>
    where
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        InjectedHeaders {
            lines: lines.iter(),
            authorization: Some(&self.authorization),
        }
    }

    /// Edits `headers` in place: removes every `Authorization` and `X-Authenticated-User`
    /// ([`is_replaced_header`]), then inserts `authorization: Bearer <token>`, marked
    /// sensitive.
    #[cfg(feature = "http")]
    pub fn apply_to_headers(&self, headers: &mut http::HeaderMap) {
        headers.remove(http::header::AUTHORIZATION);
        if headers.keys().any(|name| is_replaced_header(name.as_str())) {
            let names: Vec<http::HeaderName> = headers
                .keys()
                .filter(|name| is_replaced_header(name.as_str()))
                .cloned()
                .collect();
            for name in names {
                headers.remove(name);
            }
        }
        // A token is base64url and dots, so the value is always valid; were it not, the
        // request would go without one, and the add-on's sidecar would refuse it.
        if let Ok(mut value) = http::HeaderValue::from_str(&self.authorization) {
            value.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, value);
        }
    }

    /// `uri` with its query replaced by [`Injection::query`] (path, scheme and authority kept).
    ///
    /// # Errors
    ///
    /// [`AddAuthError::InvalidUri`] if the result is not a valid URI (it is whenever `uri` is
    /// and the query came from it).
    #[cfg(feature = "http")]
    pub fn apply_to_uri(&self, uri: &http::Uri) -> Result<http::Uri, AddAuthError> {
        let path = uri.path();
        let path_and_query = match &self.query {
            Some(query) => http::uri::PathAndQuery::try_from(format!("{path}?{query}")),
            None => http::uri::PathAndQuery::try_from(path),
        }
        .map_err(|_| AddAuthError::InvalidUri)?;
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = Some(path_and_query);
        http::Uri::from_parts(parts).map_err(|_| AddAuthError::InvalidUri)
    }
}

/// The header lines of an [`Injection`], ending with `Authorization: Bearer <token>`.
#[derive(Debug)]
pub struct InjectedHeaders<'a, N, V> {
    lines: core::slice::Iter<'a, (N, V)>,
    authorization: Option<&'a str>,
}

impl<'a, N: AsRef<str>, V: AsRef<[u8]>> Iterator for InjectedHeaders<'a, N, V> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        for (name, value) in self.lines.by_ref() {
            if !is_replaced_header(name.as_ref()) {
                return Some((name.as_ref(), value.as_ref()));
            }
        }
        self.authorization
            .take()
            .map(|value| ("Authorization", value.as_bytes()))
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> FusedIterator for InjectedHeaders<'_, N, V> {}

/// Whether an injection removes the header `name`: `Authorization` and `X-Authenticated-User`,
/// in any case, `_` read as `-` (`x_authenticated_user`). The user's own credentials never
/// reach an add-on, and neither does an identity the client claims.
#[must_use]
pub fn is_replaced_header(name: &str) -> bool {
    let name = name.as_bytes();
    same_name(name, b"authorization") || same_name(name, b"x-authenticated-user")
}

/// A request refused by the rate limit: answer 429 Too Many Requests with `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    retry_after: Duration,
}

impl Refusal {
    /// The HTTP status to answer with: 429.
    #[must_use]
    pub fn status(&self) -> u16 {
        429
    }

    /// How long until the user's next request can succeed.
    #[must_use]
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// [`Refusal::retry_after`] in whole seconds, rounded up (at least 1): the `Retry-After`
    /// value.
    #[must_use]
    pub fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs();
        let secs = if self.retry_after.subsec_nanos() > 0 {
            secs.saturating_add(1)
        } else {
            secs
        };
        secs.max(1)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "too many add-auth requests for this user: retry after {} s",
            self.retry_after_secs()
        )
    }
}

/// Why [`AddAuth::decide`] could not decide on a request that asked for a token. Never forward
/// such a request. Messages never contain the user's name or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddAuthError {
    /// The user's name cannot be a token's `sub` that the add-on's sidecar hands on as a
    /// header value: empty, too long, a control or non-ASCII character, or a leading or
    /// trailing space.
    #[error("the user's name cannot be sent to an add-on (empty, too long, or not visible ASCII)")]
    UserNotHeaderSafe,
    /// The Service's namespace or name is not a DNS label.
    #[error("the proxied Service's namespace or name is not a DNS label")]
    InvalidService,
    /// The rewritten URI is not valid.
    #[error("the rewritten request URI is not valid")]
    InvalidUri,
    /// Signing the token failed.
    #[error("minting the add-on token failed: {0}")]
    Mint(crate::Error),
}

/// What [`Limiter::check_known`] found.
enum Checked {
    Allowed,
    Refused(Duration),
    Unknown,
}

/// The per-user token buckets, as a generic cell-rate algorithm: each user's theoretical
/// arrival time (`tat`, since the Unix epoch); a bucket is full once `tat <= now`.
struct Limiter {
    /// Time to earn one request back.
    interval: Duration,
    burst: NonZeroU32,
    /// `interval * (burst - 1)`: how far ahead of `now` a user's `tat` may be.
    tolerance: Duration,
    capacity: usize,
    buckets: HashMap<Box<str>, Duration>,
}

impl Limiter {
    fn set(&mut self, interval: Duration, burst: NonZeroU32) {
        self.interval = interval;
        self.burst = burst;
        self.tolerance = interval.saturating_mul(burst.get().saturating_sub(1));
    }

    /// Takes one request from `user`'s bucket at `now`, or tells how long until one is there;
    /// [`Checked::Unknown`] if `user` has no bucket (then [`Limiter::insert`] it).
    fn check_known(&mut self, user: &str, now: Duration) -> Checked {
        let Some(tat) = self.buckets.get_mut(user) else {
            return Checked::Unknown;
        };
        // The most a bucket can owe: what a full one holds.
        let limit = now
            .saturating_add(self.tolerance)
            .saturating_add(self.interval);
        let current = (*tat).clamp(now, limit);
        let owed = current.saturating_sub(now);
        if owed > self.tolerance {
            *tat = current;
            return Checked::Refused(owed.saturating_sub(self.tolerance));
        }
        *tat = current.saturating_add(self.interval);
        Checked::Allowed
    }

    /// Gives `user` (who has none) a full bucket and takes one request from it, making room
    /// first if the table is full.
    fn insert(&mut self, user: &str, now: Duration) {
        if self.buckets.len() >= self.capacity {
            self.evict(now);
        }
        self.buckets
            .insert(Box::from(user), now.saturating_add(self.interval));
    }

    /// Makes room for one user: forgets every full bucket, else the one closest to full.
    fn evict(&mut self, now: Duration) {
        self.buckets.retain(|_, tat| *tat > now);
        if self.buckets.len() >= self.capacity
            && let Some(closest) = self
                .buckets
                .iter()
                .min_by_key(|(_, tat)| **tat)
                .map(|(user, _)| user.clone())
        {
            self.buckets.remove(&closest);
        }
    }
}

/// What a query says about `add-auth` (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// No `add-auth` parameter, or one that is not exactly `true`.
    No,
    /// Every `add-auth` parameter is `true`; `others`: some other non-empty parameter is there.
    Yes { others: bool },
}

/// One pass over `query`'s bytes: each parameter's end, first `=` and any `;` found at once.
fn asks_for_token(query: &str) -> Asked {
    let bytes = query.as_bytes();
    let (mut asked, mut others) = (false, false);
    let mut start = 0;
    while start <= bytes.len() {
        let (mut end, mut eq, mut semicolon) = (start, None, false);
        while let Some(b) = bytes.get(end) {
            match b {
                b'&' => break,
                b'=' if eq.is_none() => eq = Some(end),
                b';' => semicolon = true,
                _ => {}
            }
            end = end.wrapping_add(1);
        }
        let key = bytes.get(start..eq.unwrap_or(end)).unwrap_or_default();
        let value = eq
            .and_then(|eq| bytes.get(eq.wrapping_add(1)..end))
            .unwrap_or_default();
        if is_add_auth_key(key) {
            if semicolon || !decodes_to(value, b"true") {
                return Asked::No;
            }
            asked = true;
        } else if end > start {
            others = true;
        }
        start = end.wrapping_add(1);
    }
    if asked {
        Asked::Yes { others }
    } else {
        Asked::No
    }
}

/// A parameter's key and value: split at the first `=` (no `=`: all key, empty value).
fn split_pair(pair: &[u8]) -> (&[u8], &[u8]) {
    match pair.iter().position(|b| *b == b'=') {
        Some(i) => {
            let (key, value) = pair.split_at(i);
            (key, value.get(1..).unwrap_or_default())
        }
        None => (pair, &[]),
    }
}

fn is_add_auth_key(key: &[u8]) -> bool {
    // The fast path: most keys differ in length from every spelling of `add-auth` (8 bytes
    // plain, up to 24 escaped).
    key.len() >= ADD_AUTH_PARAMETER.len()
        && key.len() <= MAX_ESCAPED_KEY
        && decodes_to(key, ADD_AUTH_PARAMETER.as_bytes())
}

/// Whether `encoded`, percent-decoded as Go's `url.QueryUnescape` does (`+` is a space, `%XX`
/// a byte, any other `%` an error), is `expected`. No allocation.
fn decodes_to(encoded: &[u8], expected: &[u8]) -> bool {
    let mut bytes = encoded.iter().copied();
    let mut expected = expected.iter().copied();
    loop {
        let decoded = match bytes.next() {
            None => return expected.next().is_none(),
            Some(b'+') => b' ',
            Some(b'%') => {
                let (Some(hi), Some(lo)) = (
                    bytes.next().and_then(hex_value),
                    bytes.next().and_then(hex_value),
                ) else {
                    return false;
                };
                hi.wrapping_mul(16) | lo
            }
            Some(b) => b,
        };
        if expected.next() != Some(decoded) {
            return false;
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// `query` without its `add-auth` parameters and empty ones, the others in order; `None` if
/// none is left.
fn without_add_auth(query: &str) -> Option<String> {
    // Allocated at the first parameter kept: none for a query of `add-auth=true` alone.
    let mut out = String::new();
    for pair in query.split('&') {
        if pair.is_empty() || is_add_auth_key(split_pair(pair.as_bytes()).0) {
            continue;
        }
        if out.is_empty() {
            out.reserve_exact(query.len());
        } else {
            out.push('&');
        }
        out.push_str(pair);
    }
    (!out.is_empty()).then_some(out)
}

/// A DNS label (RFC 1123): 1 to 63 lower-case letters, digits and `-`, starting and ending
/// with a letter or digit. What Kubernetes requires of namespaces and Service names.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= MAX_LABEL
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects, reason = "test code")]
mod tests {
    use std::num::NonZeroU32;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::{
        AddAuth, AddAuthError, Decision, Injection, ProxiedService, RequestUser, asks_for_token,
        without_add_auth,
    };
    use crate::{Audience, Issuer, Minter, SigningKey, Validation, verify};

    const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
    const ISSUER: &str = "https://apiserver.example";

    fn t0() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_750_000_000)
    }

    fn add_auth() -> AddAuth {
        let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
        AddAuth::new(Minter::new(key, Issuer::new(ISSUER)))
    }

    fn jane() -> RequestUser {
        RequestUser::new("jane")
    }

    fn dashboard() -> ProxiedService {
        ProxiedService::new("kube-system", "dashboard")
    }

    fn inject(d: Decision) -> Injection {
        match d {
            Decision::Inject(i) => i,
            other => panic!("expected an injection, got {other:?}"),
        }
    }

    fn per_second(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

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
        let user = RequestUser::new("jane");
        assert_eq!(user.name(), "jane");
        assert_eq!(format!("{user:?}"), "RequestUser(\"jane\")");
    }

    /// Which queries ask for a token, read as Go's `url.ParseQuery` reads them.
    #[test]
    fn which_queries_ask_for_a_token() {
        let cases: &[(&str, bool, &str)] = &[
            ("add-auth=true", true, "the parameter"),
            ("watch=1&add-auth=true", true, "among others"),
            ("add-auth=true&add-auth=true", true, "repeated, all true"),
            ("add%2Dauth=true", true, "Go decodes the key"),
            ("add%2dauth=true", true, "lower-case escape"),
            ("add-auth=tru%65", true, "Go decodes the value"),
            ("Add-Auth=true", false, "keys are case-sensitive"),
            ("ADD-AUTH=true", false, "keys are case-sensitive"),
            ("add-auth=TRUE", false, "exactly true, not ParseBool"),
            ("add-auth=True", false, "exactly true, not ParseBool"),
            ("add-auth=1", false, "exactly true, not ParseBool"),
            ("add-auth=t", false, "exactly true, not ParseBool"),
            ("add-auth=false", false, "false"),
            ("add-auth", false, "no value"),
            ("add-auth=", false, "empty value"),
            ("add-auth=true+", false, "a trailing space once decoded"),
            (
                "add-auth=true&add-auth=false",
                false,
                "ambiguous: no credential",
            ),
            (
                "add-auth=false&add-auth=true",
                false,
                "ambiguous: no credential",
            ),
            ("add-auth=true&add-auth", false, "ambiguous: no credential"),
            ("add-auth=true;x=1", false, "Go skips a pair with ;"),
            (
                "add-auth=true&add-auth=%zz",
                false,
                "a bad escape in the value",
            ),
            (
                "add%2auth=true",
                false,
                "a bad escape in the key: not add-auth",
            ),
            ("add-auth%3Dtrue", false, "the = is escaped: a key only"),
            ("addauth=true", false, "another parameter"),
            ("add_auth=true", false, "another parameter"),
            ("x=add-auth=true", false, "a value, not a key"),
            ("", false, "empty"),
        ];
        for (query, asks, why) in cases {
            let asked = matches!(asks_for_token(query), super::Asked::Yes { .. });
            assert_eq!(asked, *asks, "{query:?}: {why}");
        }
    }

    #[test]
    fn the_query_loses_every_add_auth_and_keeps_the_rest() {
        let cases: &[(&str, Option<&str>)] = &[
            ("add-auth=true", None),
            ("a=1&add-auth=true&b=2", Some("a=1&b=2")),
            ("add-auth=true&add%2Dauth=true&x=%2F+y", Some("x=%2F+y")),
            ("&&add-auth=true&&x&", Some("x")),
            ("Add-Auth=true&add-auth=true", Some("Add-Auth=true")),
            ("b=2&a=1&add-auth=true&a=0", Some("b=2&a=1&a=0")),
            ("add%2auth=true&add-auth=true", Some("add%2auth=true")),
        ];
        for (query, rewritten) in cases {
            assert_eq!(without_add_auth(query).as_deref(), *rewritten, "{query:?}");
            let decision = add_auth().decide(&jane(), &dashboard(), Some(query), t0());
            assert_eq!(inject(decision.unwrap()).query(), *rewritten, "{query:?}");
        }
    }

    #[test]
    fn without_add_auth_true_the_request_passes_through() {
        let mut a = add_auth();
        for query in [
            None,
            Some(""),
            Some("add-auth=false"),
            Some("Add-Auth=true"),
        ] {
            let d = a.decide(&jane(), &dashboard(), query, t0()).unwrap();
            assert_eq!(d, Decision::PassThrough, "{query:?}");
        }
        // Nothing was minted or tracked.
        assert_eq!((a.minter().cached(), a.users_tracked()), (0, 0));
    }

    #[test]
    fn the_token_names_the_user_and_the_service_and_lives_a_minute() {
        let mut a = add_auth();
        let keys = a.minter().signing_key().public_key_set().unwrap();
        let injection = inject(
            a.decide(&jane(), &dashboard(), Some("add-auth=true"), t0())
                .unwrap(),
        );
        assert!(injection.minted());
        let token = injection.token();
        assert_eq!(
            injection.expose_authorization(),
            format!("Bearer {}", token.expose_secret())
        );
        let validation =
            Validation::new(Issuer::new(ISSUER), Audience::new("kube-system/dashboard"));
        let claims = verify(token.expose_secret(), &keys, &validation, t0()).unwrap();
        assert_eq!(claims.subject(), "jane");
        assert_eq!(claims.audiences(), ["kube-system/dashboard"]);
        assert_eq!(
            claims.expires_at_unix() - claims.issued_at_unix(),
            60,
            "exp is a minute after iat"
        );
        // Another Service's audience does not accept it.
        let other = Validation::new(Issuer::new(ISSUER), Audience::new("kube-system/other"));
        assert!(verify(token.expose_secret(), &keys, &other, t0()).is_err());
    }

    #[test]
    fn a_cached_token_is_reused_until_half_its_lifetime() {
        let mut a = add_auth();
        let q = Some("add-auth=true");
        let first = inject(a.decide(&jane(), &dashboard(), q, t0()).unwrap());
        let hit = inject(
            a.decide(&jane(), &dashboard(), q, t0() + Duration::from_secs(29))
                .unwrap(),
        );
        assert!(!hit.minted());
        assert_eq!(hit.token(), first.token());
        let fresh = inject(
            a.decide(&jane(), &dashboard(), q, t0() + Duration::from_secs(30))
                .unwrap(),
        );
        assert!(fresh.minted());
        assert_ne!(fresh.token(), first.token());
        // Another user, another Service: another token.
        let other = ProxiedService::new("kube-system", "grafana");
        let o = inject(
            a.decide(&jane(), &other, q, t0() + Duration::from_secs(30))
                .unwrap(),
        );
        assert!(o.minted());
        assert_ne!(o.token(), fresh.token());
    }

    #[test]
    fn client_credentials_and_identity_never_reach_the_add_on() {
        let mut a = add_auth();
        let i = inject(
            a.decide(&jane(), &dashboard(), Some("add-auth=true"), t0())
                .unwrap(),
        );
        let lines = [
            ("Host", "dashboard"),
            ("Authorization", "Bearer the-user-s-own"),
            ("authorization", "Basic amFuZTpwdw=="),
            ("X-Authenticated-User", "admin"),
            ("x_authenticated_user", "admin"),
            ("X-AUTHENTICATED-USER", "admin"),
            ("Accept", "*/*"),
        ];
        let upstream: Vec<(&str, &[u8])> = i.headers(&lines).collect();
        assert_eq!(upstream.len(), 3);
        assert_eq!(upstream[0], ("Host", &b"dashboard"[..]));
        assert_eq!(upstream[1], ("Accept", &b"*/*"[..]));
        assert_eq!(
            upstream[2],
            ("Authorization", i.expose_authorization().as_bytes())
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_header_map_and_uri_are_rewritten_in_place() {
        let mut a = add_auth();
        let uri: http::Uri =
            "https://gw.example/api/v1/namespaces/kube-system/services/dashboard:80/proxy/x?add-auth=true&y=%2F"
                .parse()
                .unwrap();
        let i = inject(a.decide(&jane(), &dashboard(), uri.query(), t0()).unwrap());
        assert_eq!(
            i.apply_to_uri(&uri).unwrap(),
            "https://gw.example/api/v1/namespaces/kube-system/services/dashboard:80/proxy/x?y=%2F"
        );
        let bare: http::Uri = "/proxy/?add-auth=true".parse().unwrap();
        assert_eq!(i.apply_to_uri(&bare).unwrap(), "/proxy/?y=%2F");
        let mut headers = http::HeaderMap::new();
        headers.append("authorization", "Bearer own".parse().unwrap());
        headers.append("authorization", "Basic x".parse().unwrap());
        headers.append("x-authenticated-user", "admin".parse().unwrap());
        headers.append("x_authenticated_user", "admin".parse().unwrap());
        headers.append("accept", "*/*".parse().unwrap());
        i.apply_to_headers(&mut headers);
        assert_eq!(headers.len(), 2);
        assert_eq!(headers["accept"], "*/*");
        assert_eq!(headers["authorization"], i.expose_authorization());
        assert!(headers["authorization"].is_sensitive());
    }

    #[test]
    fn debug_never_shows_the_token() {
        let mut a = add_auth();
        let d = a
            .decide(&jane(), &dashboard(), Some("add-auth=true"), t0())
            .unwrap();
        let token = match &d {
            Decision::Inject(i) => i.token(),
            _ => panic!("expected an injection"),
        };
        let secret = token.expose_secret();
        // Not the token, nor any of its three parts.
        for text in [format!("{d:?}"), format!("{d:#?}"), format!("{a:?}")] {
            assert!(!text.contains(secret), "{text}");
            for part in secret.split('.') {
                assert!(!text.contains(part), "{text}");
            }
        }
        assert!(format!("{d:?}").contains("<redacted>"));
    }

    #[test]
    fn a_user_that_cannot_be_a_header_value_is_refused_with_a_typed_error() {
        let long = "a".repeat(crate::MAX_SUBJECT_BYTES + 1);
        for name in [
            "",
            "ja\nne",
            "ja\rne",
            "jane\u{0}",
            "j\u{7f}ane",
            "jan\u{e9}",
            " jane",
            "jane ",
            long.as_str(),
        ] {
            let user = RequestUser::new(name);
            let mut a = add_auth();
            let err = a
                .decide(&user, &dashboard(), Some("add-auth=true"), t0())
                .unwrap_err();
            assert_eq!(err, AddAuthError::UserNotHeaderSafe, "{name:?}");
            assert!(!err.to_string().contains("ja"), "no name in the message");
            assert_eq!(a.users_tracked(), 0, "{name:?}: not tracked");
            // Without add-auth the request is not this decision's business.
            let pass = a.decide(&user, &dashboard(), Some("x=1"), t0()).unwrap();
            assert_eq!(pass, Decision::PassThrough);
        }
        // Spaces inside a name are fine (a certificate CN may hold one).
        let spaced = RequestUser::new("Jane Doe");
        let d = add_auth().decide(&spaced, &dashboard(), Some("add-auth=true"), t0());
        assert!(matches!(d, Ok(Decision::Inject(_))));
    }

    #[test]
    fn a_service_that_is_not_a_dns_label_is_refused() {
        for (ns, name) in [
            ("", "dashboard"),
            ("kube-system", ""),
            ("kube-system", "dashboard:80"),
            ("kube-system", "Dashboard"),
            ("kube/system", "dashboard"),
            ("kube-system", "-dashboard"),
            ("kube-system", "dash\nboard"),
        ] {
            let err = add_auth()
                .decide(
                    &jane(),
                    &ProxiedService::new(ns, name),
                    Some("add-auth=true"),
                    t0(),
                )
                .unwrap_err();
            assert_eq!(err, AddAuthError::InvalidService, "{ns:?}/{name:?}");
        }
        let max = "a".repeat(63);
        let ok = add_auth().decide(
            &jane(),
            &ProxiedService::new(&max, "s"),
            Some("add-auth=true"),
            t0(),
        );
        assert!(matches!(ok, Ok(Decision::Inject(_))));
        let too_long = "a".repeat(64);
        let err = add_auth().decide(
            &jane(),
            &ProxiedService::new(&too_long, "s"),
            Some("add-auth=true"),
            t0(),
        );
        assert_eq!(err, Err(AddAuthError::InvalidService));
    }

    /// Burst 3, one request a second: three at once, the fourth waits a second; a refused
    /// request costs nothing.
    #[test]
    fn the_rate_limit_is_a_token_bucket_per_user() {
        let mut a = add_auth()
            .rate(per_second(1), Duration::from_secs(1))
            .burst(per_second(3));
        let q = Some("add-auth=true");
        for _ in 0..3 {
            assert!(matches!(
                a.decide(&jane(), &dashboard(), q, t0()),
                Ok(Decision::Inject(_))
            ));
        }
        for _ in 0..5 {
            match a.decide(&jane(), &dashboard(), q, t0()).unwrap() {
                Decision::Refuse(r) => {
                    assert_eq!(r.retry_after(), Duration::from_secs(1));
                    assert_eq!(r.retry_after_secs(), 1);
                    assert_eq!(r.status(), 429);
                }
                other => panic!("{other:?}"),
            }
        }
        // Another user has a bucket of its own.
        let bob = RequestUser::new("bob");
        assert!(matches!(
            a.decide(&bob, &dashboard(), q, t0()),
            Ok(Decision::Inject(_))
        ));
        // Half a second later: half a second more to wait.
        let half = t0() + Duration::from_millis(500);
        match a.decide(&jane(), &dashboard(), q, half).unwrap() {
            Decision::Refuse(r) => {
                assert_eq!(r.retry_after(), Duration::from_millis(500));
                assert_eq!(r.retry_after_secs(), 1, "rounded up");
            }
            other => panic!("{other:?}"),
        }
        let later = t0() + Duration::from_secs(1);
        assert!(matches!(
            a.decide(&jane(), &dashboard(), q, later),
            Ok(Decision::Inject(_))
        ));
        assert!(matches!(
            a.decide(&jane(), &dashboard(), q, later),
            Ok(Decision::Refuse(_))
        ));
        // Pass-through requests are not counted.
        assert_eq!(
            a.decide(&jane(), &dashboard(), None, later).unwrap(),
            Decision::PassThrough
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        // Three a second: a third of a second to wait, written as 1.
        let mut a = add_auth()
            .rate(per_second(3), Duration::from_secs(1))
            .burst(per_second(1));
        let q = Some("add-auth=true");
        assert!(matches!(
            a.decide(&jane(), &dashboard(), q, t0()),
            Ok(Decision::Inject(_))
        ));
        let Ok(Decision::Refuse(r)) = a.decide(&jane(), &dashboard(), q, t0()) else {
            panic!("expected a refusal");
        };
        assert!(r.retry_after() > Duration::ZERO && r.retry_after() < Duration::from_secs(1));
        assert_eq!(r.retry_after_secs(), 1);
        assert_eq!(
            r.to_string(),
            "too many add-auth requests for this user: retry after 1 s"
        );
        // One a minute: 60.
        let mut slow = add_auth()
            .rate(per_second(1), Duration::from_secs(60))
            .burst(per_second(1));
        assert!(matches!(
            slow.decide(&jane(), &dashboard(), q, t0()),
            Ok(Decision::Inject(_))
        ));
        let Ok(Decision::Refuse(r)) =
            slow.decide(&jane(), &dashboard(), q, t0() + Duration::from_millis(1))
        else {
            panic!("expected a refusal");
        };
        assert_eq!(r.retry_after_secs(), 60);
    }

    #[test]
    fn a_clock_that_steps_back_never_refuses_for_longer_than_a_full_bucket() {
        let mut a = add_auth()
            .rate(per_second(1), Duration::from_secs(1))
            .burst(per_second(2));
        let q = Some("add-auth=true");
        for _ in 0..2 {
            assert!(matches!(
                a.decide(&jane(), &dashboard(), q, t0()),
                Ok(Decision::Inject(_))
            ));
        }
        let back = t0() - Duration::from_secs(3600);
        match a.decide(&jane(), &dashboard(), q, back).unwrap() {
            Decision::Refuse(r) => assert!(r.retry_after() <= Duration::from_secs(1), "{r}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            a.decide(&jane(), &dashboard(), q, back + Duration::from_secs(1)),
            Ok(Decision::Inject(_))
        ));
        // Before the Unix epoch: no panic.
        let _ = a.decide(
            &jane(),
            &dashboard(),
            q,
            UNIX_EPOCH - Duration::from_secs(5),
        );
    }

    /// A flood of new user names neither grows the table past its capacity nor resets a
    /// limited user's bucket.
    #[test]
    fn a_flood_of_names_cannot_reset_a_limited_user() {
        let mut a = add_auth()
            .rate(per_second(1), Duration::from_secs(10))
            .burst(per_second(2))
            .users_capacity(8);
        let q = Some("add-auth=true");
        for _ in 0..2 {
            assert!(matches!(
                a.decide(&jane(), &dashboard(), q, t0()),
                Ok(Decision::Inject(_))
            ));
        }
        assert!(matches!(
            a.decide(&jane(), &dashboard(), q, t0()),
            Ok(Decision::Refuse(_))
        ));
        for i in 0..200 {
            let now = t0() + Duration::from_millis(i);
            let user = RequestUser::new(format!("flood-{i}"));
            assert!(matches!(
                a.decide(&user, &dashboard(), q, now),
                Ok(Decision::Inject(_))
            ));
            assert!(a.users_tracked() <= 8);
            assert!(
                matches!(
                    a.decide(&jane(), &dashboard(), q, now),
                    Ok(Decision::Refuse(_))
                ),
                "jane's bucket was reset after {i} new names"
            );
        }
        assert_eq!(a.users_tracked(), 8);
        // Full buckets are forgotten first: once every bucket has refilled, one sweep empties
        // the table but for the newcomer.
        let much_later = t0() + Duration::from_secs(3600);
        let newcomer = RequestUser::new("newcomer");
        for i in 0..7 {
            let user = RequestUser::new(format!("late-{i}"));
            let _ = a.decide(&user, &dashboard(), q, much_later);
        }
        let _ = a.decide(&newcomer, &dashboard(), q, much_later);
        assert!(a.users_tracked() <= 8);
    }

    #[test]
    fn a_zero_period_sets_no_limit() {
        let mut a = add_auth()
            .rate(per_second(1), Duration::ZERO)
            .burst(per_second(1));
        for _ in 0..100 {
            assert!(matches!(
                a.decide(&jane(), &dashboard(), Some("add-auth=true"), t0()),
                Ok(Decision::Inject(_))
            ));
        }
    }
}
