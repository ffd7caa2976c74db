//! The sidecar proxy decision, sans-IO: headers and time in, forward-or-reject out.

use core::fmt;
use core::hash::{BuildHasherDefault, Hasher};
use core::iter::FusedIterator;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

use crate::claims::unix_seconds;
use crate::{Error, KeySet, Validation, verify};

/// The header carrying the verified user to the add-on.
pub const AUTHENTICATED_USER_HEADER: &str = "X-Authenticated-User";
/// Maximum total size of the request headers (names, values and 4 bytes per line).
pub const MAX_REQUEST_HEADER_BYTES: usize = 64 * 1024;
/// Maximum number of request header lines.
pub const MAX_REQUEST_HEADERS: usize = 256;
/// Default capacity of the verified-token cache.
pub const DEFAULT_VERIFIED_CACHE: usize = 4096;
/// Shards of the verified-token cache: requests on different shards never wait for each other.
const CACHE_SHARDS: usize = 16;

/// [`AUTHENTICATED_USER_HEADER`] in lower case (as `http` spells header names).
const USER_HEADER_LOWER: &str = "x-authenticated-user";

/// Identity headers that other authenticating proxies, kube-apiserver's front proxy and
/// Kubernetes impersonation use, removed from every forwarded request by default (in any case,
/// `_` read as `-`; a trailing `*` matches every name that starts with the rest): a client
/// could otherwise claim any identity to an add-on that reads or passes one of them on.
///
/// * `X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-*`: kube-apiserver's
///   request-header (front-proxy) authentication; `X-Remote-Groups`: kube-rbac-proxy's groups
///   header;
/// * `Impersonate-*`: Kubernetes impersonation (`Impersonate-User`, `-Group`, `-Uid`,
///   `-Extra-*`);
/// * `X-Forwarded-User`, `X-Forwarded-Email`, `X-Forwarded-Groups`,
///   `X-Forwarded-Preferred-Username`, `X-Auth-Request-*`: oauth2-proxy and nginx
///   `auth_request` set-ups;
/// * `Remote-User`: the CGI-style name several authenticating proxies set.
///
/// [`Sidecar::strip_headers`] adds more. The only identity header an add-on behind the sidecar
/// can trust is [`AUTHENTICATED_USER_HEADER`].
pub const STRIPPED_IDENTITY_HEADERS: [&str; 12] = [
    "X-Remote-User",
    "X-Remote-Uid",
    "X-Remote-Group",
    "X-Remote-Groups",
    "X-Remote-Extra-*",
    "Impersonate-*",
    "X-Forwarded-User",
    "X-Forwarded-Email",
    "X-Forwarded-Groups",
    "X-Forwarded-Preferred-Username",
    "X-Auth-Request-*",
    "Remote-User",
];

/// The hop-by-hop headers (RFC 9110 §7.6.1, with `Proxy-Connection` and the proxy
/// authentication fields), lower case: they concern one connection, and a proxy forwards them
/// in neither direction. `Connection` may name more. The sidecar decision removes them, and
/// every header `Connection` names, from requests (any case, `_` for `-`);
/// `remove_hop_by_hop` (feature `http`) does it for a response a proxy passes on.
pub const HOP_BY_HOP_HEADERS: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Removes from `headers` what concerns only the connection they came on: every
/// [`HOP_BY_HOP_HEADERS`] name and every header `Connection` names. What a proxy does to the
/// upstream's response before passing it on: the client's connection has its own
/// (`Connection: close` from the upstream must not close it), and the proxy's HTTP library
/// frames the body for the client itself. Requests get the same through [`Sidecar::decide`].
#[cfg(feature = "http")]
pub fn remove_hop_by_hop(headers: &mut http::HeaderMap) {
    // Only names present are removed, each found once: the listed ones in one pass over the
    // names (usually there is none: no allocation, no removal, and no `Connection` either),
    // then each `Connection` token by one look-up (linear in the tokens, without building a
    // name for a token that names nothing: nginx sends `Connection: keep-alive` without a
    // `Keep-Alive` header). A `Connection` value that is not visible ASCII names nothing.
    let mut going: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| HOP_BY_HOP_HEADERS.contains(&name.as_str()))
        .cloned()
        .collect();
    for token in headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
    {
        if headers.contains_key(token)
            && let Ok(name) = http::HeaderName::from_bytes(token.as_bytes())
        {
            going.push(name);
        }
    }
    for name in going {
        headers.remove(name);
    }
}

/// The decision a sidecar proxy in front of an add-on takes for one request.
///
/// For each request, [`Sidecar::decide`] takes the header list (moved in, never copied) and
/// `now` and returns [`Decision::Forward`] with the headers to send upstream, or
/// [`Decision::Reject`] (answer 403 and forward nothing): a rejected request has no headers to
/// forward. With the `http` feature, `Sidecar::decide_header_map` edits an `http::HeaderMap`
/// in place instead (and empties it on rejection). Rules:
///
/// * every client-supplied `X-Authenticated-User`, in any case and with `_` for `-`, is removed
///   on every path, and so is every `Authorization` header;
/// * the other identity headers of [`STRIPPED_IDENTITY_HEADERS`] (`X-Remote-User`,
///   `Impersonate-*`, `X-Forwarded-User`, ...), and those added with
///   [`Sidecar::strip_headers`], are removed too, in any case and with `_` for `-`;
/// * hop-by-hop headers, `Connection` and every header `Connection` names are removed *before*
///   `X-Authenticated-User` is added, so no `Connection` header can strip it;
/// * exactly one `Authorization` header, `Bearer` in any case, exactly one space, then a token68
///   value and nothing else;
/// * the token passes [`verify`](crate::verify) with the configured keys and [`Validation`];
/// * its `sub` must be visible ASCII (spaces allowed inside) to become a header value;
/// * the header list is bounded ([`MAX_REQUEST_HEADER_BYTES`], [`MAX_REQUEST_HEADERS`]);
/// * every header name is an RFC 9110 token (no spaces, tabs, NUL or other separators), and no
///   name other than the look-alikes above reads as `X-Authenticated-User` once only its letters
///   and digits are kept (`x.authenticated.user`, `XAuthenticatedUser`): such a request is
///   rejected, since an upstream server may fold such names onto the identity header.
///
/// A bounded cache keyed by SHA-256 of the token remembers verified tokens until `exp` (plus
/// leeway), so repeated requests skip the signature check. Tokens are never stored.
///
/// A `Sidecar` is `Send + Sync` and decides through `&self`: share one (for example in an
/// `Arc`) between all of a proxy's threads and tasks, without a lock around it. The cache is
/// split into shards, each behind its own short-lived lock that is never held while a signature
/// is checked.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use addon_jwt::{Audience, Decision, Issuer, Minter, Sidecar, SigningKey, Validation};
/// let pem = "-----BEGIN PRIVATE KEY-----\n\
/// MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
/// -----END PRIVATE KEY-----\n";
/// let key = SigningKey::from_pkcs8_pem(pem)?;
/// let sidecar = Sidecar::new(
///     key.public_key_set()?,
///     Validation::new(Issuer::new("https://apiserver.example"), Audience::new("kube-system/dashboard")),
/// );
/// let mut minter = Minter::new(key, Issuer::new("https://apiserver.example"));
/// let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// let token = minter.mint("jane", &Audience::new("kube-system/dashboard"), now)?;
/// let auth = format!("Bearer {}", token.expose_secret());
/// let request = [
///     ("Host", "dashboard"),
///     ("Authorization", auth.as_str()),
///     ("x_authenticated_user", "admin"), // spoofed: removed
/// ];
/// match sidecar.decide(request, now) {
///     Decision::Forward(fwd) => {
///         assert_eq!(fwd.user(), "jane");
///         let upstream: Vec<(&str, &[u8])> = fwd.headers().collect();
///         assert_eq!(upstream, [("Host", &b"dashboard"[..]), ("X-Authenticated-User", b"jane")]);
///     }
///     Decision::Reject(r) => panic!("rejected: {r}"),
///     _ => unreachable!(),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Sidecar {
    keys: KeySet,
    validation: Validation,
    /// Capacity of each shard (the total capacity split evenly, rounded up).
    shard_capacity: usize,
    shards: [Mutex<Shard>; CACHE_SHARDS],
    /// Names removed besides the default ones ([`Sidecar::strip_headers`]).
    stripped: Vec<StrippedName>,
}

/// A header name [`Sidecar::strip_headers`] added: lower case, `-` for `_`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StrippedName {
    name: Box<[u8]>,
    /// The name ended in `*`: every name starting with `name` matches.
    prefix: bool,
}

impl StrippedName {
    fn matches(&self, name: &[u8]) -> bool {
        if self.prefix {
            name.get(..self.name.len())
                .is_some_and(|head| same_name(head, &self.name))
        } else {
            same_name(name, &self.name)
        }
    }
}

/// One shard of the verified-token cache.
type Shard = HashMap<[u8; 32], Verified, BuildHasherDefault<DigestHasher>>;

impl Clone for Sidecar {
    /// A sidecar with the same keys, policy and capacity, and a copy of the cache.
    fn clone(&self) -> Sidecar {
        Sidecar {
            keys: self.keys.clone(),
            validation: self.validation.clone(),
            shard_capacity: self.shard_capacity,
            shards: core::array::from_fn(|i| {
                Mutex::new(
                    self.shards
                        .get(i)
                        .map(|s| lock(s).clone())
                        .unwrap_or_default(),
                )
            }),
            stripped: self.stripped.clone(),
        }
    }
}

/// Locks a shard; a panic in another thread while it held the lock leaves a valid map.
fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Clone)]
struct Verified {
    user: Arc<str>,
    /// The same user as a header value, shared by every request that hits this entry.
    #[cfg(feature = "http")]
    value: http::HeaderValue,
    /// `exp + leeway` in Unix seconds: from then on the token is expired.
    until: i128,
}

/// The outcome of [`Sidecar::decide`]: `N` and `V` are the name and value types of the header
/// list that was passed in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "a request may only be forwarded with the headers of `Decision::Forward`"]
pub enum Decision<N, V> {
    /// Forward the request upstream with these headers.
    Forward(Forward<N, V>),
    /// Answer 403 and forward nothing.
    Reject(Rejection),
}

/// The headers to forward: the request's end-to-end header lines (moved in from the request,
/// in order) without `Authorization`, any client `X-Authenticated-User`, the other identity
/// headers the sidecar strips ([`STRIPPED_IDENTITY_HEADERS`], [`Sidecar::strip_headers`]),
/// hop-by-hop or `Connection`-named headers, then exactly one `X-Authenticated-User: <sub>`.
///
/// Only a [`Decision::Forward`] holds one. The removed lines are dropped when the decision is
/// made; this value never holds the bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward<N, V> {
    user: Arc<str>,
    lines: Vec<(N, V)>,
}

impl<N: AsRef<str>, V: AsRef<[u8]>> Forward<N, V> {
    /// The verified user (`sub`).
    #[must_use]
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The header list to send upstream, in request order, ending with
    /// `X-Authenticated-User: <sub>`.
    #[must_use]
    pub fn headers(&self) -> ForwardHeaders<'_, N, V> {
        ForwardHeaders {
            lines: self.lines.iter(),
            user: Some(&self.user),
        }
    }

    /// Takes the end-to-end lines (without `X-Authenticated-User`) and the verified user: send
    /// the lines, then `X-Authenticated-User` ([`AUTHENTICATED_USER_HEADER`]) with the user.
    #[must_use]
    pub fn into_parts(self) -> (Vec<(N, V)>, Arc<str>) {
        (self.lines, self.user)
    }

    /// The header list as a new [`http::HeaderMap`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if a name or value is not valid for `http` (it cannot be when the
    /// lines came from a `HeaderMap`).
    #[cfg(feature = "http")]
    pub fn to_header_map(&self) -> Result<http::HeaderMap, Error> {
        let mut map = http::HeaderMap::with_capacity(self.lines.len().saturating_add(1));
        for (name, value) in self.headers() {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::InvalidInput("header name"))?;
            let value = http::HeaderValue::from_bytes(value)
                .map_err(|_| Error::InvalidInput("header value"))?;
            map.append(name, value);
        }
        Ok(map)
    }
}

/// The header lines of a [`Forward`], as `(name, value)`, ending with `X-Authenticated-User`.
#[derive(Debug)]
pub struct ForwardHeaders<'a, N, V> {
    lines: core::slice::Iter<'a, (N, V)>,
    user: Option<&'a str>,
}

impl<'a, N: AsRef<str>, V: AsRef<[u8]>> Iterator for ForwardHeaders<'a, N, V> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self.lines.next() {
            Some((name, value)) => Some((name.as_ref(), value.as_ref())),
            None => self
                .user
                .take()
                .map(|user| (AUTHENTICATED_USER_HEADER, user.as_bytes())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self
            .lines
            .len()
            .saturating_add(usize::from(self.user.is_some()));
        (n, Some(n))
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> ExactSizeIterator for ForwardHeaders<'_, N, V> {}

impl<N: AsRef<str>, V: AsRef<[u8]>> FusedIterator for ForwardHeaders<'_, N, V> {}

/// Why a request was rejected. `Display` is safe to log: it never contains the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    reason: RejectReason,
}

impl Rejection {
    /// The HTTP status to answer with: 403 Forbidden.
    #[must_use]
    pub fn status(&self) -> u16 {
        403
    }

    /// The reason.
    #[must_use]
    pub fn reason(&self) -> &RejectReason {
        &self.reason
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "forbidden: {}", self.reason)
    }
}

impl std::error::Error for Rejection {}

/// The reason for a [`Rejection`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectReason {
    /// No `Authorization` header.
    MissingAuthorization,
    /// More than one `Authorization` header.
    MultipleAuthorization,
    /// `Authorization` is not `Bearer`, one space and a token68 value.
    MalformedAuthorization,
    /// The header list exceeds [`MAX_REQUEST_HEADER_BYTES`] or [`MAX_REQUEST_HEADERS`].
    HeadersTooLarge,
    /// A header name is not an RFC 9110 token (a space, tab, NUL or other separator, or empty),
    /// or reads as `X-Authenticated-User` with only its letters and digits kept without being
    /// one of the spellings that are removed (`x.authenticated.user`, `xauthenticateduser`).
    InvalidHeaderName,
    /// The token failed verification.
    InvalidToken(Error),
    /// The token's `sub` cannot be sent as a header value (control or non-ASCII characters,
    /// leading or trailing space).
    SubjectNotHeaderSafe,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::MissingAuthorization => f.write_str("no authorization header"),
            RejectReason::MultipleAuthorization => {
                f.write_str("more than one authorization header")
            }
            RejectReason::MalformedAuthorization => {
                f.write_str("authorization header is not a single bearer token")
            }
            RejectReason::HeadersTooLarge => f.write_str("request headers too large"),
            RejectReason::InvalidHeaderName => {
                f.write_str("a header name is not a token or imitates the identity header")
            }
            RejectReason::InvalidToken(e) => write!(f, "invalid token: {e}"),
            RejectReason::SubjectNotHeaderSafe => {
                f.write_str("token subject is not a safe header value")
            }
        }
    }
}

impl Sidecar {
    /// A sidecar accepting tokens verified with `keys` under `validation`, with a cache of
    /// [`DEFAULT_VERIFIED_CACHE`] tokens.
    #[must_use]
    pub fn new(keys: KeySet, validation: Validation) -> Sidecar {
        Sidecar {
            keys,
            validation,
            shard_capacity: DEFAULT_VERIFIED_CACHE.div_ceil(CACHE_SHARDS),
            shards: Default::default(),
            stripped: Vec::new(),
        }
    }

    /// Also removes these headers from every forwarded request, besides
    /// [`STRIPPED_IDENTITY_HEADERS`] (which are always removed): names in any case, `_` read as
    /// `-`, a trailing `*` matching every name that starts with the rest (`X-Tenant-*`). For the
    /// identity headers an add-on or its libraries read besides `X-Authenticated-User`.
    ///
    /// Each request's header names are compared with these (a length check first), so keep
    /// the list short.
    ///
    /// ```
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// # use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation, Decision};
    /// # let pem = "-----BEGIN PRIVATE KEY-----\n\
    /// # MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
    /// # -----END PRIVATE KEY-----\n";
    /// # let key = SigningKey::from_pkcs8_pem(pem)?;
    /// # let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// # let keys = key.public_key_set()?;
    /// # let token = Minter::new(key, Issuer::new("iss")).mint("jane", &Audience::new("dash"), now)?;
    /// let sidecar = Sidecar::new(keys, Validation::new(Issuer::new("iss"), Audience::new("dash")))
    ///     .strip_headers(["X-WebAuth-User", "X-Tenant-*"])?;
    /// let auth = format!("Bearer {}", token.expose_secret());
    /// let request = [
    ///     ("authorization", auth.as_str()),
    ///     ("x-webauth-user", "admin"),   // added above: removed
    ///     ("x_tenant_id", "other"),      // added above: removed
    ///     ("x-remote-user", "admin"),    // removed by default
    ///     ("impersonate-group", "system:masters"), // removed by default
    ///     ("accept", "text/html"),
    /// ];
    /// let Decision::Forward(fwd) = sidecar.decide(request, now) else { panic!() };
    /// let names: Vec<&str> = fwd.headers().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["accept", "X-Authenticated-User"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if a name (without its trailing `*`) is empty or not an RFC 9110
    /// token.
    pub fn strip_headers<I, S>(mut self, names: I) -> Result<Sidecar, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for name in names {
            let name = name.as_ref();
            let (name, prefix) = match name.strip_suffix('*') {
                Some(head) => (head, true),
                None => (name, false),
            };
            if !is_token(name.as_bytes()) {
                return Err(Error::InvalidInput("header name to strip"));
            }
            let folded: Box<[u8]> = name
                .bytes()
                .map(|b| {
                    if b == b'_' {
                        b'-'
                    } else {
                        b.to_ascii_lowercase()
                    }
                })
                .collect();
            let entry = StrippedName {
                name: folded,
                prefix,
            };
            if !self.stripped.contains(&entry) {
                self.stripped.push(entry);
            }
        }
        Ok(self)
    }

    /// Whether a forwarded request loses the header `name`, whatever `Connection` says:
    /// credentials, identity headers, hop-by-hop headers.
    fn strips(&self, name: &[u8]) -> bool {
        is_always_dropped(name)
            || is_default_identity(name)
            || self.stripped.iter().any(|s| s.matches(name))
    }

    /// Sets the verified-token cache capacity (0 disables it). The cache is split into 16
    /// shards of `capacity / 16` entries (rounded up), so it may hold up to 15 more.
    #[must_use]
    pub fn cache_capacity(mut self, capacity: usize) -> Sidecar {
        self.shard_capacity = capacity.div_ceil(CACHE_SHARDS);
        for shard in &mut self.shards {
            shard
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
        self
    }

    /// Number of cached verified tokens.
    #[must_use]
    pub fn cached(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// Decides on a request given its header lines as name/value pairs, at `now`.
    ///
    /// The lines are moved into the decision, not copied: [`Decision::Forward`] hands back the
    /// ones to forward (see [`Forward::headers`] and [`Forward::into_parts`]); on
    /// [`Decision::Reject`] they are dropped. Borrowed lines work too, e.g.
    /// `map.iter().map(|(n, v)| (n.as_str(), v.as_bytes()))` for an `http::HeaderMap`.
    pub fn decide<I, N, V>(&self, headers: I, now: SystemTime) -> Decision<N, V>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        match self.decide_lines(headers, now) {
            Ok(forward) => Decision::Forward(forward),
            Err(reason) => Decision::Reject(Rejection { reason }),
        }
    }

    /// Decides on a request given its [`http::HeaderMap`], at `now`, editing the map in place
    /// (what a proxy built on `hyper` wants): on success every `Authorization`, client
    /// `X-Authenticated-User`, hop-by-hop and `Connection`-named header has been removed and
    /// then `x-authenticated-user: <sub>` inserted, and the verified user is returned.
    ///
    /// On rejection the map is emptied, so a request sent upstream by mistake carries neither
    /// the credential nor any identity. Read what you want to log before calling.
    ///
    /// ```
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// # use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation};
    /// # let pem = "-----BEGIN PRIVATE KEY-----\n\
    /// # MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
    /// # -----END PRIVATE KEY-----\n";
    /// # let key = SigningKey::from_pkcs8_pem(pem)?;
    /// # let sidecar = Sidecar::new(key.public_key_set()?, Validation::new(Issuer::new("iss"), Audience::new("dash")));
    /// # let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// # let token = Minter::new(key, Issuer::new("iss")).mint("jane", &Audience::new("dash"), now)?;
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("authorization", format!("Bearer {}", token.expose_secret()).parse()?);
    /// headers.insert("x-authenticated-user", "admin".parse()?); // spoofed: removed
    /// headers.insert("accept", "text/html".parse()?);
    /// let user = sidecar.decide_header_map(&mut headers, now)?;
    /// assert_eq!(&*user, "jane");
    /// assert_eq!(headers.len(), 2);
    /// assert_eq!(headers["x-authenticated-user"], "jane");
    /// assert!(headers.get("authorization").is_none());
    ///
    /// headers.insert("authorization", "Bearer forged".parse()?);
    /// assert!(sidecar.decide_header_map(&mut headers, now).is_err()); // answer 403
    /// assert!(headers.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The [`Rejection`] (answer 403), as for [`Sidecar::decide`].
    #[cfg(feature = "http")]
    pub fn decide_header_map(
        &self,
        headers: &mut http::HeaderMap,
        now: SystemTime,
    ) -> Result<Arc<str>, Rejection> {
        let decided = self
            .map_token(headers)
            .and_then(|token| self.verified(token, now, read_entry));
        self.finish_map(headers, decided)
    }

    /// [`Sidecar::decide_header_map`] when deciding needs no signature check: the token is one
    /// this sidecar verified and still remembers at `now`, or the request is refused before any
    /// check (no or several `Authorization` headers, not a bearer token, headers too large, a
    /// look-alike identity header). `None` when the token would have to be verified first;
    /// `headers` are then left as they were.
    ///
    /// For servers that give requests from known callers priority over those that cost a
    /// signature check (see `is_cached`), deciding each request with one cache look-up:
    /// decide at once when this returns a decision, else wait for a verification slot and call
    /// [`Sidecar::decide_header_map`].
    ///
    /// ```
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// # use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation};
    /// # let pem = "-----BEGIN PRIVATE KEY-----\n\
    /// # MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
    /// # -----END PRIVATE KEY-----\n";
    /// # let key = SigningKey::from_pkcs8_pem(pem)?;
    /// # let sidecar = Sidecar::new(key.public_key_set()?, Validation::new(Issuer::new("iss"), Audience::new("dash")));
    /// # let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// # let token = Minter::new(key, Issuer::new("iss")).mint("jane", &Audience::new("dash"), now)?;
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("authorization", format!("Bearer {}", token.expose_secret()).parse()?);
    /// assert!(sidecar.decide_header_map_if_cached(&mut headers, now).is_none(), "not verified yet");
    /// assert_eq!(headers.len(), 1, "left as it was");
    ///
    /// let mut again = headers.clone();
    /// sidecar.decide_header_map(&mut headers, now)?; // verifies, and remembers the token
    /// let user = sidecar.decide_header_map_if_cached(&mut again, now).expect("cached")?;
    /// assert_eq!(&*user, "jane");
    /// assert_eq!(again["x-authenticated-user"], "jane");
    ///
    /// let mut none = http::HeaderMap::new();
    /// assert!(matches!(sidecar.decide_header_map_if_cached(&mut none, now), Some(Err(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// `Some(Err(_))`: the [`Rejection`] (answer 403), with `headers` emptied, as for
    /// [`Sidecar::decide_header_map`].
    #[cfg(feature = "http")]
    pub fn decide_header_map_if_cached(
        &self,
        headers: &mut http::HeaderMap,
        now: SystemTime,
    ) -> Option<Result<Arc<str>, Rejection>> {
        let decided = match self.map_token(headers) {
            Ok(token) => Ok(self.lookup(
                &token_digest(token.as_bytes()),
                unix_seconds(now),
                read_entry,
            )?),
            Err(reason) => Err(reason),
        };
        Some(self.finish_map(headers, decided))
    }

    /// Removes from a forwarded request's trailer section every field that must not reach the
    /// upstream as a trailer: each field a header line of that name would lose (the rules of
    /// [`Sidecar::decide`]: credentials, identity headers and those of
    /// [`Sidecar::strip_headers`], hop-by-hop headers), each look-alike of
    /// [`AUTHENTICATED_USER_HEADER`] (which would refuse a header section), and each field
    /// RFC 9110 §6.5.1 keeps out of trailers ([`FORBIDDEN_TRAILERS`]: framing, routing,
    /// authentication, request modifiers, `Content-*`). A proxy calls it on the trailers of a
    /// request the sidecar forwarded, so that identity never arrives after the body.
    ///
    /// ```
    /// # use addon_jwt::{Audience, Issuer, KeySet, Sidecar, Validation};
    /// let sidecar = Sidecar::new(KeySet::new(), Validation::new(Issuer::new("iss"), Audience::new("dash")));
    /// let mut trailers = http::HeaderMap::new();
    /// trailers.insert("x-authenticated-user", "system:admin".parse()?);
    /// trailers.insert("impersonate-user", "system:admin".parse()?);
    /// trailers.insert("content-length", "99".parse()?);
    /// trailers.insert("x-checksum", "c0ffee".parse()?);
    /// sidecar.decide_trailers(&mut trailers);
    /// assert_eq!(trailers.len(), 1);
    /// assert_eq!(trailers["x-checksum"], "c0ffee");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "http")]
    pub fn decide_trailers(&self, trailers: &mut http::HeaderMap) {
        let going: Vec<http::HeaderName> = trailers
            .keys()
            .filter(|name| {
                let name = name.as_str().as_bytes();
                self.strips(name) || imitates_identity(name) || is_forbidden_trailer(name)
            })
            .cloned()
            .collect();
        for name in going {
            trailers.remove(name);
        }
    }

    fn decide_lines<I, N, V>(
        &self,
        headers: I,
        now: SystemTime,
    ) -> Result<Forward<N, V>, RejectReason>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let headers = headers.into_iter();
        let mut lines: Vec<(N, V)> =
            Vec::with_capacity(headers.size_hint().0.min(MAX_REQUEST_HEADERS));
        let mut total: usize = 0;
        let mut authorization: Option<usize> = None;
        let mut multiple = false;
        let mut connection = false;
        for (name, value) in headers {
            if lines.len() >= MAX_REQUEST_HEADERS {
                return Err(RejectReason::HeadersTooLarge);
            }
            let n = name.as_ref();
            total = total
                .saturating_add(n.len())
                .saturating_add(value.as_ref().len())
                .saturating_add(4);
            if total > MAX_REQUEST_HEADER_BYTES {
                return Err(RejectReason::HeadersTooLarge);
            }
            if !is_token(n.as_bytes()) || imitates_identity(n.as_bytes()) {
                return Err(RejectReason::InvalidHeaderName);
            }
            if n.eq_ignore_ascii_case("authorization") {
                multiple |= authorization.is_some();
                authorization = Some(lines.len());
            } else if n.eq_ignore_ascii_case("connection") {
                connection = true;
            }
            lines.push((name, value));
        }
        if multiple {
            return Err(RejectReason::MultipleAuthorization);
        }
        let value = authorization
            .and_then(|i| lines.get(i))
            .ok_or(RejectReason::MissingAuthorization)?;
        let token = bearer_token(value.1.as_ref()).ok_or(RejectReason::MalformedAuthorization)?;
        let user = self.verified(token, now, |v| Arc::clone(&v.user))?;

        // Which lines go upstream: decided on all of them first (Connection may name any),
        // then the others are dropped in one pass.
        let mut keep = [0u64; MAX_REQUEST_HEADERS.div_ceil(64)];
        for (i, (name, _)) in lines.iter().enumerate() {
            let name = name.as_ref().as_bytes();
            let dropped = self.strips(name)
                || (connection
                    && named_by_connection(
                        name,
                        lines
                            .iter()
                            .filter(|(n, _)| n.as_ref().eq_ignore_ascii_case("connection"))
                            .map(|(_, v)| v.as_ref()),
                    ));
            if !dropped && let Some(word) = keep.get_mut(i / 64) {
                *word |= 1 << (i % 64);
            }
        }
        let mut i: usize = 0;
        lines.retain(|_| {
            let kept = keep.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
            i = i.wrapping_add(1);
            kept
        });
        Ok(Forward { user, lines })
    }

    /// The bearer token of `headers`, after every rule that needs no signature check.
    #[cfg(feature = "http")]
    fn map_token<'h>(&self, headers: &'h http::HeaderMap) -> Result<&'h str, RejectReason> {
        if headers.len() > MAX_REQUEST_HEADERS {
            return Err(RejectReason::HeadersTooLarge);
        }
        let total = headers.iter().fold(0usize, |total, (name, value)| {
            total
                .saturating_add(name.as_str().len())
                .saturating_add(value.len())
                .saturating_add(4)
        });
        if total > MAX_REQUEST_HEADER_BYTES {
            return Err(RejectReason::HeadersTooLarge);
        }
        // `http` only builds token names; the look-alikes of the identity header remain.
        if headers
            .keys()
            .any(|n| imitates_identity(n.as_str().as_bytes()))
        {
            return Err(RejectReason::InvalidHeaderName);
        }
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let value = values.next().ok_or(RejectReason::MissingAuthorization)?;
        if values.next().is_some() {
            return Err(RejectReason::MultipleAuthorization);
        }
        bearer_token(value.as_bytes()).ok_or(RejectReason::MalformedAuthorization)
    }

    /// Applies a decision to `headers`: on success the headers that must not reach the add-on
    /// are removed and the user's added; on rejection the map is emptied.
    #[cfg(feature = "http")]
    fn finish_map(
        &self,
        headers: &mut http::HeaderMap,
        decided: Result<(Arc<str>, http::HeaderValue), RejectReason>,
    ) -> Result<Arc<str>, Rejection> {
        let (user, value) = match decided {
            Ok(entry) => entry,
            Err(reason) => {
                headers.clear();
                return Err(Rejection { reason });
            }
        };
        self.strip_request_headers(headers);
        headers.insert(http::HeaderName::from_static(USER_HEADER_LOWER), value);
        Ok(user)
    }

    /// Removes from a request's headers every line [`Sidecar::decide`] removes from a request
    /// it forwards: `Authorization`, every client-supplied [`AUTHENTICATED_USER_HEADER`], the
    /// [`STRIPPED_IDENTITY_HEADERS`] and those of [`Sidecar::strip_headers`] (any case, `_`
    /// for `-`), the hop-by-hop headers and every header `Connection` names. Nothing is
    /// verified and no identity is added: for a proxy that authenticates requests another way
    /// (a `TokenReview`, say) and sets identity headers of its own afterwards, so that the
    /// client's copies of them never reach the upstream.
    ///
    /// ```
    /// # use addon_jwt::{Audience, Issuer, KeySet, Sidecar, Validation};
    /// let rule = Sidecar::new(KeySet::new(), Validation::new(Issuer::new("iss"), Audience::new("dash")))
    ///     .strip_headers(["X-Remote-Groups"])?;
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("x-remote-user", "system:admin".parse()?);
    /// headers.insert("x_remote_groups", "system:masters".parse()?);
    /// headers.insert("authorization", "Bearer abc".parse()?);
    /// headers.insert("accept", "text/plain".parse()?);
    /// rule.strip_request_headers(&mut headers);
    /// assert_eq!(headers.len(), 1);
    /// assert_eq!(headers["accept"], "text/plain");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "http")]
    pub fn strip_request_headers(&self, headers: &mut http::HeaderMap) {
        // Every header to remove, found before anything is removed (Connection may name any).
        // Listed names are removed by their static spelling; others (look-alikes, names
        // Connection lists) by a clone of the map's name. A few slots on the stack, a vector
        // beyond them: a usual request allocates nothing here.
        let mut slots: [Option<Victim>; 8] = Default::default();
        let mut more: Vec<Victim> = Vec::new();
        let connection = headers.contains_key(http::header::CONNECTION);
        for name in headers.keys() {
            let bytes = name.as_str().as_bytes();
            let dropped = self.strips(bytes)
                || (connection
                    && named_by_connection(
                        bytes,
                        headers
                            .get_all(http::header::CONNECTION)
                            .iter()
                            .map(http::HeaderValue::as_bytes),
                    ));
            if dropped {
                let victim = match LISTED.iter().find(|l| **l == name.as_str()) {
                    Some(listed) => Victim::Listed(listed),
                    None => Victim::Named(name.clone()),
                };
                match slots.iter_mut().find(|s| s.is_none()) {
                    Some(slot) => *slot = Some(victim),
                    None => more.push(victim),
                }
            }
        }
        for victim in slots.into_iter().flatten().chain(more) {
            match victim {
                Victim::Listed(name) => headers.remove(name),
                Victim::Named(name) => headers.remove(name),
            };
        }
    }

    /// Whether `authorization` (an `Authorization` header value, `Bearer <token>` with the
    /// scheme in any case) carries a token this sidecar has verified and still remembers at
    /// `now`, so that deciding on it costs no signature check. Nothing is verified or cached
    /// here, and a `true` does not decide the request (the other rules still apply).
    ///
    /// For proxies that give such requests priority over tokens that need verifying, so a
    /// flood of forged tokens cannot delay callers already known.
    ///
    /// ```
    /// # use std::time::{Duration, UNIX_EPOCH};
    /// # use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation};
    /// # let pem = "-----BEGIN PRIVATE KEY-----\n\
    /// # MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
    /// # -----END PRIVATE KEY-----\n";
    /// # let key = SigningKey::from_pkcs8_pem(pem)?;
    /// # let sidecar = Sidecar::new(key.public_key_set()?, Validation::new(Issuer::new("iss"), Audience::new("dash")));
    /// # let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// # let token = Minter::new(key, Issuer::new("iss")).mint("jane", &Audience::new("dash"), now)?;
    /// let auth = format!("Bearer {}", token.expose_secret());
    /// assert!(!sidecar.is_cached(auth.as_bytes(), now), "never verified yet");
    /// assert!(matches!(sidecar.decide([("authorization", auth.as_str())], now), addon_jwt::Decision::Forward(_)));
    /// assert!(sidecar.is_cached(auth.as_bytes(), now));
    /// assert!(sidecar.is_cached(auth.replace("Bearer", "bEARER").as_bytes(), now));
    /// assert!(!sidecar.is_cached(auth.as_bytes(), now + Duration::from_secs(86_400)), "expired");
    /// assert!(!sidecar.is_cached(b"Bearer forged", now));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn is_cached(&self, authorization: &[u8], now: SystemTime) -> bool {
        let Some((scheme, token)) = authorization.split_at_checked(7) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"bearer ") || token.len() > crate::MAX_TOKEN_BYTES {
            return false;
        }
        self.lookup(&token_digest(token), unix_seconds(now), |_| ())
            .is_some()
    }

    /// Looks `token` up in the cache (a hit while `now < exp + leeway`), else verifies it and
    /// caches the result; `read` takes what the caller needs from the entry.
    fn verified<R>(
        &self,
        token: &str,
        now: SystemTime,
        read: impl Fn(&Verified) -> R,
    ) -> Result<R, RejectReason> {
        let digest = token_digest(token.as_bytes());
        match self.lookup(&digest, unix_seconds(now), &read) {
            Some(hit) => Ok(hit),
            None => self.verify_and_remember(token, &digest, now, read),
        }
    }

    /// The cache entry for `digest` while `now_s < exp + leeway`, read by `read`; an expired
    /// entry is removed.
    fn lookup<R>(
        &self,
        digest: &[u8; 32],
        now_s: i128,
        read: impl FnOnce(&Verified) -> R,
    ) -> Option<R> {
        let mut cache = lock(self.shard(digest)?);
        let hit = cache.get(digest)?;
        if now_s < hit.until {
            return Some(read(hit));
        }
        cache.remove(digest);
        None
    }

    /// Verifies `token` (whose SHA-256 is `digest`) and caches the result; `read` takes what
    /// the caller needs from the entry.
    fn verify_and_remember<R>(
        &self,
        token: &str,
        digest: &[u8; 32],
        now: SystemTime,
        read: impl FnOnce(&Verified) -> R,
    ) -> Result<R, RejectReason> {
        let now_s = unix_seconds(now);
        // Verified without holding a lock: other requests on this shard go on meanwhile.
        let claims =
            verify(token, &self.keys, &self.validation, now).map_err(RejectReason::InvalidToken)?;
        let user = claims.subject();
        if !is_header_safe(user) {
            return Err(RejectReason::SubjectNotHeaderSafe);
        }
        let until = i128::from(claims.expires_at_unix())
            .saturating_add(i128::from(self.validation.leeway_duration().as_secs()));
        let verified = Verified {
            user: Arc::from(user),
            #[cfg(feature = "http")]
            value: http::HeaderValue::from_str(user)
                .map_err(|_| RejectReason::SubjectNotHeaderSafe)?,
            until,
        };
        let out = read(&verified);
        if let Some(shard) = self.shard(digest).filter(|_| self.shard_capacity > 0) {
            let mut cache = lock(shard);
            if cache.len() >= self.shard_capacity {
                cache.retain(|_, v| now_s < v.until);
            }
            if cache.len() >= self.shard_capacity
                && let Some(first) = cache.iter().min_by_key(|(_, v)| v.until).map(|(k, _)| *k)
            {
                cache.remove(&first);
            }
            cache.insert(*digest, verified);
        }
        Ok(out)
    }

    /// The cache shard of `digest`: its last byte picks it (the first eight are the hash
    /// within it).
    fn shard(&self, digest: &[u8; 32]) -> Option<&Mutex<Shard>> {
        let [.., last] = digest;
        self.shards.get(usize::from(*last) % CACHE_SHARDS)
    }
}

/// What the `http` decisions take from a cache entry: the user, and the same as a header
/// value.
#[cfg(feature = "http")]
fn read_entry(v: &Verified) -> (Arc<str>, http::HeaderValue) {
    (Arc::clone(&v.user), v.value.clone())
}

/// The cache key of a token: its SHA-256.
fn token_digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// A header `decide_header_map` removes.
#[cfg(feature = "http")]
enum Victim {
    /// One of [`LISTED`], by its static name (no clone of the map's name).
    Listed(&'static str),
    Named(http::HeaderName),
}

/// The names [`is_always_dropped`] matches, and the exact names of
/// [`STRIPPED_IDENTITY_HEADERS`] and of Kubernetes impersonation, in the lower case `http`
/// uses: removed by their static spelling (no clone of the map's name).
#[cfg(feature = "http")]
const LISTED: [&str; 23] = [
    "authorization",
    USER_HEADER_LOWER,
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "x-remote-user",
    "x-remote-uid",
    "x-remote-group",
    "x-remote-groups",
    "impersonate-user",
    "impersonate-group",
    "impersonate-uid",
    "x-forwarded-user",
    "x-forwarded-email",
    "x-forwarded-groups",
    "x-forwarded-preferred-username",
    "remote-user",
];

/// The verified-token cache's hasher. Its keys are SHA-256 digests of tokens that passed
/// verification: uniformly distributed and not chosen by a client, so their first eight bytes
/// serve as the hash (SipHash would only add work to every request).
#[derive(Debug, Default, Clone, Copy)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(head) = bytes.first_chunk::<8>() {
            self.0 ^= u64::from_le_bytes(*head);
        }
    }

    fn write_usize(&mut self, _: usize) {}
}

/// Fields never forwarded in a request's trailer section (RFC 9110 §6.5.1: their meaning is
/// needed before the content, or they route, authenticate or frame the message), lower case;
/// a trailing `*` matches every name that starts with the rest. `Sidecar::decide_trailers`
/// (feature `http`) removes them (in any case, `_` for `-`) besides what a header line of the
/// name would lose.
pub const FORBIDDEN_TRAILERS: [&str; 24] = [
    // Framing.
    "content-length",
    "transfer-encoding",
    "trailer",
    "te",
    "connection",
    // Routing.
    "host",
    "forwarded",
    "via",
    "x-forwarded-*",
    "max-forwards",
    // Authentication and state.
    "authorization",
    "proxy-authorization",
    "cookie",
    "www-authenticate",
    "proxy-authenticate",
    // Request modifiers: controls and conditionals.
    "expect",
    "cache-control",
    "pragma",
    "range",
    "if-*",
    "upgrade",
    // The content's format, and anything else of the content's own.
    "content-*",
    // The identity the sidecar sets.
    USER_HEADER_LOWER,
    "keep-alive",
];

/// Whether `name` is one of [`FORBIDDEN_TRAILERS`] (any case, `_` for `-`).
#[cfg(feature = "http")]
fn is_forbidden_trailer(name: &[u8]) -> bool {
    FORBIDDEN_TRAILERS
        .iter()
        .any(|listed| match listed.strip_suffix('*') {
            Some(prefix) => name
                .get(..prefix.len())
                .is_some_and(|head| same_name(head, prefix.as_bytes())),
            None => same_name(name, listed.as_bytes()),
        })
}

/// Removed from every forwarded request: any client `X-Authenticated-User` look-alike,
/// `Authorization` and the [`HOP_BY_HOP_HEADERS`], in any case and with `_` for `-`.
fn is_always_dropped(name: &[u8]) -> bool {
    // `same_name` compares lengths first: most request headers are none of these and cost a
    // length comparison each.
    HOP_BY_HOP_HEADERS
        .iter()
        .chain(&["authorization", USER_HEADER_LOWER])
        .any(|n| same_name(name, n.as_bytes()))
}

/// Whether `name` is one of [`STRIPPED_IDENTITY_HEADERS`] (any case, `_` for `-`).
fn is_default_identity(name: &[u8]) -> bool {
    // By length first, as in `is_always_dropped`; the prefixes need at least 12 bytes. No
    // allocation, and a few byte comparisons for a name that is none of these.
    let any = |names: &[&str]| names.iter().any(|n| same_name(name, n.as_bytes()));
    let exact = match name.len() {
        11 => any(&["remote-user"]),
        12 => any(&["x-remote-uid"]),
        13 => any(&["x-remote-user"]),
        14 => any(&["x-remote-group"]),
        15 => any(&["x-remote-groups"]),
        16 => any(&["x-forwarded-user"]),
        17 => any(&["x-forwarded-email"]),
        18 => any(&["x-forwarded-groups"]),
        30 => any(&["x-forwarded-preferred-username"]),
        _ => false,
    };
    let starts = |prefix: &str| {
        name.get(..prefix.len())
            .is_some_and(|head| same_name(head, prefix.as_bytes()))
    };
    // The prefixes by their first letter: most names start with neither.
    let prefixed = name.len() >= 12
        && match name.first().map(u8::to_ascii_lowercase) {
            Some(b'i') => starts("impersonate-"),
            Some(b'x') => starts("x-remote-extra-") || starts("x-auth-request-"),
            _ => false,
        };
    exact || prefixed
}

/// An RFC 9110 §5.6.2 token: one or more of `!#$%&'*+-.^_`|~`, digits and letters.
fn is_token(name: &[u8]) -> bool {
    !name.is_empty()
        && name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
}

/// Whether `name` reads as `X-Authenticated-User` once only its letters and digits are kept, in
/// any case, without being one of the spellings [`is_always_dropped`] removes (`-` or `_`
/// between the words): `x.authenticated.user`, `XAuthenticatedUser`, `x-authenticated~user`.
fn imitates_identity(name: &[u8]) -> bool {
    const FOLDED: &[u8] = b"xauthenticateduser";
    if name.len() < FOLDED.len() {
        return false;
    }
    let mut kept = name
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(u8::to_ascii_lowercase);
    let folds = FOLDED.iter().all(|c| kept.next() == Some(*c)) && kept.next().is_none();
    folds && !same_name(name, USER_HEADER_LOWER.as_bytes())
}

/// Whether one of the `Connection` header values names `name` (comma-separated tokens,
/// optional whitespace).
fn named_by_connection<'v>(name: &[u8], mut values: impl Iterator<Item = &'v [u8]>) -> bool {
    values.any(|value| {
        value.split(|b| *b == b',').any(|token| {
            let token = token.trim_ascii();
            !token.is_empty() && same_name(name, token)
        })
    })
}

/// Header-name equality ignoring ASCII case and reading `_` as `-`, so look-alike names
/// (`X_Authenticated_User`) compare equal.
pub(crate) fn same_name(name: &[u8], other: &[u8]) -> bool {
    let fold = |b: u8| if b == b'_' { b'-' } else { b }.to_ascii_lowercase();
    name.len() == other.len()
        && name
            .iter()
            .zip(other)
            .fold(true, |same, (a, b)| same & (fold(*a) == fold(*b)))
}

/// `Bearer` (any case), exactly one space, then a token68 value (RFC 7235 §2.1) and nothing else.
fn bearer_token(value: &[u8]) -> Option<&str> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    // Padding is a suffix of `=`; before it, token68 characters only, at least one. The check
    // has no early exit, so it runs over whole words (the token is on every request).
    let body_len = rest.iter().rposition(|b| *b != b'=')?.checked_add(1)?;
    let body = rest.get(..body_len)?;
    if body
        .iter()
        .fold(0u8, |bad, b| bad | u8::from(!is_token68(*b)))
        != 0
    {
        return None;
    }
    core::str::from_utf8(rest).ok()
}

/// A token68 character before the padding: `ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/"`.
/// Comparisons without branches, so checking a whole token vectorises.
fn is_token68(b: u8) -> bool {
    ((b | 0x20).wrapping_sub(b'a') < 26)
        | (b.wrapping_sub(b'0') < 10)
        | (b == b'-')
        | (b == b'.')
        | (b == b'_')
        | (b == b'~')
        | (b == b'+')
        | (b == b'/')
}

pub(crate) fn is_header_safe(user: &str) -> bool {
    !user.starts_with(' ')
        && !user.ends_with(' ')
        && user.bytes().all(|b| (0x20..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_token(b"Bearer abc.def.ghi"), Some("abc.def.ghi"));
        assert_eq!(bearer_token(b"bearer abc"), Some("abc"));
        assert_eq!(bearer_token(b"BEARER abc"), Some("abc"));
        assert_eq!(bearer_token(b"Bearer abc=="), Some("abc=="));
        for b in 0..=u8::MAX {
            let listed = b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
            assert_eq!(is_token68(b), listed, "{b:#x}");
        }
        for bad in [
            &b"Bearer  abc"[..],
            b"Bearer\tabc",
            b"Bearer abc extra",
            b"Bearer",
            b"Bearer ",
            b"Basic abc",
            b"Bearer a, Bearer b",
            b"Bearer ab=c",
            b"Bearer =",
            b"Bearer abc\r\nX: y",
            b"Bearerabc",
        ] {
            assert_eq!(
                bearer_token(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// A request's trailers lose every field a header line of the name would lose, the
    /// look-alikes of the identity header and the fields RFC 9110 keeps out of trailers, in
    /// any case and with `_` for `-`; the others stay.
    #[cfg(feature = "http")]
    #[test]
    fn request_trailers_lose_identity_framing_and_routing() {
        use crate::{Audience, Issuer};
        let sidecar = Sidecar::new(
            KeySet::new(),
            Validation::new(Issuer::new("iss"), Audience::new("dash")),
        )
        .strip_headers(["X-Tenant", "X-Org-*"])
        .unwrap();
        let mut trailers = http::HeaderMap::new();
        for name in [
            "x-authenticated-user",
            "x_authenticated_user",
            "x.authenticated.user",
            "xauthenticateduser",
            "impersonate-user",
            "impersonate-extra-scopes",
            "x-remote-user",
            "x-remote-extra-a",
            "x-forwarded-user",
            "x-forwarded-for",
            "remote-user",
            "x-tenant",
            "x-org-id",
            "content-length",
            "content-type",
            "content-encoding",
            "transfer-encoding",
            "host",
            "authorization",
            "proxy-authorization",
            "cookie",
            "connection",
            "trailer",
            "te",
            "expect",
            "range",
            "if-match",
            "max-forwards",
            "cache-control",
            "x-checksum",
            "grpc-status",
        ] {
            trailers.append(name, http::HeaderValue::from_static("system:admin"));
        }
        sidecar.decide_trailers(&mut trailers);
        let mut kept: Vec<&str> = trailers.keys().map(http::HeaderName::as_str).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["grpc-status", "x-checksum"]);
    }

    /// A response passed on loses `Connection`, what it names and the other hop-by-hop
    /// headers, and keeps the rest; a response without any is left as it is.
    #[cfg(feature = "http")]
    #[test]
    fn hop_by_hop_headers_leave_a_response() {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "text/plain".parse().unwrap());
        headers.insert("x-kept", "1".parse().unwrap());
        let untouched = headers.clone();
        remove_hop_by_hop(&mut headers);
        assert_eq!(headers, untouched);

        headers.insert("connection", "close, X-Per-Hop".parse().unwrap());
        headers.append("connection", "x-other".parse().unwrap());
        headers.insert("x-per-hop", "1".parse().unwrap());
        headers.insert("x-other", "1".parse().unwrap());
        for name in HOP_BY_HOP_HEADERS.iter().skip(1) {
            headers.insert(*name, "1".parse().unwrap());
        }
        remove_hop_by_hop(&mut headers);
        assert_eq!(headers, untouched);

        // Tokens that are no header name (blanks inside, quotes, a slash, empty, longer than
        // any name may be) name nothing, and cost no panic.
        let long = "x".repeat(70_000);
        let odd = format!("a b, \"q\", , x/y, {}, {long}", "y".repeat(100));
        headers.insert("connection", odd.parse().unwrap());
        headers.insert("te", "trailers".parse().unwrap());
        remove_hop_by_hop(&mut headers);
        assert_eq!(headers, untouched);
    }

    #[test]
    fn look_alike_names_compare_equal() {
        assert!(same_name(b"X_Authenticated_User", b"x-authenticated-user"));
        assert!(same_name(b"x-AUTHENTICATED-user", b"x-authenticated-user"));
        assert!(!same_name(
            b"x-authenticated-users",
            b"x-authenticated-user"
        ));
        assert!(!same_name(b"x-authenticated-use", b"x-authenticated-user"));
    }

    #[test]
    fn always_dropped_covers_every_listed_name_and_look_alike() {
        for name in HOP_BY_HOP_HEADERS
            .iter()
            .chain(&["authorization", USER_HEADER_LOWER])
        {
            assert!(is_always_dropped(name.as_bytes()), "{name}");
            let upper = name.to_ascii_uppercase().replace('-', "_");
            assert!(is_always_dropped(upper.as_bytes()), "{upper}");
        }
        for kept in [
            "host",
            "accept",
            "x-authenticated-users",
            "authorizations",
            "t",
            "",
        ] {
            assert!(!is_always_dropped(kept.as_bytes()), "{kept}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn listed_names_are_the_stripped_ones() {
        for name in HOP_BY_HOP_HEADERS
            .iter()
            .chain(&["authorization", USER_HEADER_LOWER])
        {
            assert!(LISTED.contains(name), "{name}");
        }
        for name in LISTED {
            assert_eq!(name, name.to_ascii_lowercase());
            assert!(
                is_always_dropped(name.as_bytes()) || is_default_identity(name.as_bytes()),
                "{name}"
            );
        }
    }

    /// `is_default_identity` matches exactly the documented list, in every spelling.
    #[test]
    fn default_identity_names_are_the_documented_ones() {
        for listed in STRIPPED_IDENTITY_HEADERS {
            let (name, prefix) = match listed.strip_suffix('*') {
                Some(head) => (head.to_owned() + "anything", true),
                None => (listed.to_owned(), false),
            };
            for spelling in [
                name.clone(),
                name.to_ascii_lowercase(),
                name.to_ascii_uppercase().replace('-', "_"),
            ] {
                assert!(is_default_identity(spelling.as_bytes()), "{spelling}");
            }
            assert!(
                !is_default_identity(format!("x{name}").as_bytes()),
                "x{name}"
            );
            // A letter more or less is another name, unless that one is listed too
            // (`X-Remote-Group` and `X-Remote-Groups`).
            let listed = |n: &str| {
                STRIPPED_IDENTITY_HEADERS
                    .iter()
                    .any(|l| l.eq_ignore_ascii_case(n))
            };
            if !prefix {
                let longer = format!("{name}s");
                if !listed(&longer) {
                    assert!(!is_default_identity(longer.as_bytes()), "{longer}");
                }
                let shorter = name.get(..name.len() - 1).unwrap();
                if !listed(shorter) {
                    assert!(!is_default_identity(shorter.as_bytes()), "{shorter}");
                }
            }
        }
        for kept in [
            "impersonate",
            "x-remote-extra",
            "x-auth-request",
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-remote-addr",
            "remote-addr",
            "accept",
        ] {
            assert!(!is_default_identity(kept.as_bytes()), "{kept}");
        }
    }

    #[test]
    fn header_safety() {
        assert!(is_header_safe("system:serviceaccount:ns:name"));
        assert!(is_header_safe("Jane Doe"));
        for bad in ["a\r\nX-Admin: 1", "a\0", "d\u{e9}faut", " a", "a ", "a\t"] {
            assert!(!is_header_safe(bad), "{bad:?}");
        }
    }
}
