//! The sidecar proxy decision, sans-IO: headers and time in, forward-or-reject out.

use core::fmt;
use std::collections::HashMap;
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

/// Hop-by-hop headers (RFC 9110 §7.6.1) that are never forwarded.
const HOP_BY_HOP: [&str; 9] = [
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

/// The decision a sidecar proxy in front of an add-on takes for one request.
///
/// For each request, [`Sidecar::decide`] takes the header list and `now` and returns
/// [`Decision::Forward`] with the headers to send upstream, or [`Decision::Reject`] (answer 403
/// and forward nothing). Rules:
///
/// * every client-supplied `X-Authenticated-User`, in any case and with `_` for `-`, is removed
///   on every path, and so is every `Authorization` header;
/// * hop-by-hop headers, `Connection` and every header `Connection` names are removed *before*
///   `X-Authenticated-User` is added, so no `Connection` header can strip it;
/// * exactly one `Authorization` header, `Bearer` in any case, exactly one space, then a token68
///   value and nothing else;
/// * the token passes [`verify`](crate::verify) with the configured keys and [`Validation`];
/// * its `sub` must be visible ASCII (spaces allowed inside) to become a header value;
/// * the header list is bounded ([`MAX_REQUEST_HEADER_BYTES`], [`MAX_REQUEST_HEADERS`]).
///
/// A bounded cache keyed by SHA-256 of the token remembers verified tokens until `exp` (plus
/// leeway), so repeated requests skip the signature check. Tokens are never stored.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use addon_jwt::{Decision, Minter, Sidecar, SigningKey, Validation};
/// let pem = "-----BEGIN PRIVATE KEY-----\n\
/// MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
/// -----END PRIVATE KEY-----\n";
/// let key = SigningKey::from_pkcs8_pem(pem)?;
/// let mut sidecar = Sidecar::new(
///     key.public_key_set()?,
///     Validation::new("kube-system/dashboard", "https://apiserver.example"),
/// );
/// let mut minter = Minter::new(key, "https://apiserver.example");
/// let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// let token = minter.mint("jane", "kube-system/dashboard", now)?;
/// let auth = format!("Bearer {}", token.expose_secret());
/// let request = [
///     ("Host", "dashboard"),
///     ("Authorization", auth.as_str()),
///     ("x_authenticated_user", "admin"), // spoofed: removed
/// ];
/// match sidecar.decide(request, now) {
///     Decision::Forward(fwd) => {
///         assert_eq!(fwd.user(), "jane");
///         assert_eq!(fwd.headers().len(), 2); // Host and X-Authenticated-User: jane
///     }
///     Decision::Reject(r) => panic!("rejected: {r}"),
///     _ => unreachable!(),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sidecar {
    keys: KeySet,
    validation: Validation,
    capacity: usize,
    cache: HashMap<[u8; 32], Verified>,
}

#[derive(Debug, Clone)]
struct Verified {
    user: String,
    /// `exp + leeway` in Unix seconds: from then on the token is expired.
    until: i128,
}

/// The outcome of [`Sidecar::decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Forward the request upstream with these headers.
    Forward(Forward),
    /// Answer 403 and forward nothing.
    Reject(Rejection),
}

/// The headers to forward: the request's end-to-end headers without `Authorization` or any
/// client `X-Authenticated-User`, plus exactly one `X-Authenticated-User: <sub>` at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    user: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Forward {
    /// The verified user (`sub`).
    #[must_use]
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The header list to send upstream, in request order, ending with `X-Authenticated-User`.
    #[must_use]
    pub fn headers(&self) -> &[(String, Vec<u8>)] {
        &self.headers
    }

    /// Takes the header list.
    #[must_use]
    pub fn into_headers(self) -> Vec<(String, Vec<u8>)> {
        self.headers
    }

    /// The header list as an [`http::HeaderMap`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if a name or value is not valid for `http` (it cannot be when the
    /// decision was made from a `HeaderMap`).
    #[cfg(feature = "http")]
    pub fn to_header_map(&self) -> Result<http::HeaderMap, Error> {
        let mut map = http::HeaderMap::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Error::InvalidInput("header name"))?;
            let value = http::HeaderValue::from_bytes(value)
                .map_err(|_| Error::InvalidInput("header value"))?;
            map.append(name, value);
        }
        Ok(map)
    }
}

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
            capacity: DEFAULT_VERIFIED_CACHE,
            cache: HashMap::new(),
        }
    }

    /// Sets the verified-token cache capacity (0 disables it).
    #[must_use]
    pub fn cache_capacity(mut self, capacity: usize) -> Sidecar {
        self.capacity = capacity;
        self.cache.clear();
        self
    }

    /// Number of cached verified tokens.
    #[must_use]
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Decides on a request given its header list as name/value pairs, at `now`.
    pub fn decide<I, N, V>(&mut self, headers: I, now: SystemTime) -> Decision
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        match self.decide_inner(headers, now) {
            Ok(forward) => Decision::Forward(forward),
            Err(reason) => Decision::Reject(Rejection { reason }),
        }
    }

    /// Decides on a request given its [`http::HeaderMap`], at `now`.
    #[cfg(feature = "http")]
    pub fn decide_header_map(&mut self, headers: &http::HeaderMap, now: SystemTime) -> Decision {
        self.decide(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())), now)
    }

    fn decide_inner<I, N, V>(
        &mut self,
        headers: I,
        now: SystemTime,
    ) -> Result<Forward, RejectReason>
    where
        I: IntoIterator<Item = (N, V)>,
        N: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut total: usize = 0;
        let mut lines: Vec<(N, V)> = Vec::new();
        for (name, value) in headers {
            if lines.len() >= MAX_REQUEST_HEADERS {
                return Err(RejectReason::HeadersTooLarge);
            }
            total = total
                .saturating_add(name.as_ref().len())
                .saturating_add(value.as_ref().len())
                .saturating_add(4);
            if total > MAX_REQUEST_HEADER_BYTES {
                return Err(RejectReason::HeadersTooLarge);
            }
            lines.push((name, value));
        }

        let mut authorization: Option<&[u8]> = None;
        let mut connection_named: Vec<String> = Vec::new();
        for (name, value) in &lines {
            let name = name.as_ref();
            if name.eq_ignore_ascii_case("authorization") {
                if authorization.is_some() {
                    return Err(RejectReason::MultipleAuthorization);
                }
                authorization = Some(value.as_ref());
            } else if name.eq_ignore_ascii_case("connection") {
                for token in value.as_ref().split(|b| *b == b',') {
                    let token = String::from_utf8_lossy(token).trim().to_ascii_lowercase();
                    if !token.is_empty() {
                        connection_named.push(token);
                    }
                }
            }
        }
        let authorization = authorization.ok_or(RejectReason::MissingAuthorization)?;
        let token = bearer_token(authorization).ok_or(RejectReason::MalformedAuthorization)?;
        let user = self.verified_user(token, now)?;

        let mut forward: Vec<(String, Vec<u8>)> = Vec::with_capacity(lines.len().saturating_add(1));
        for (name, value) in &lines {
            let name = name.as_ref();
            if same_name(name, "x-authenticated-user")
                || same_name(name, "authorization")
                || HOP_BY_HOP.iter().any(|h| same_name(name, h))
                || connection_named.iter().any(|c| same_name(name, c))
            {
                continue;
            }
            forward.push((name.to_owned(), value.as_ref().to_vec()));
        }
        forward.push((
            AUTHENTICATED_USER_HEADER.to_owned(),
            user.as_bytes().to_vec(),
        ));
        Ok(Forward {
            user,
            headers: forward,
        })
    }

    fn verified_user(&mut self, token: &str, now: SystemTime) -> Result<String, RejectReason> {
        let now_s = unix_seconds(now);
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = self.cache.get(&digest) {
            if now_s < hit.until {
                return Ok(hit.user.clone());
            }
            self.cache.remove(&digest);
        }
        let claims =
            verify(token, &self.keys, &self.validation, now).map_err(RejectReason::InvalidToken)?;
        let user = claims.subject();
        if !is_header_safe(user) {
            return Err(RejectReason::SubjectNotHeaderSafe);
        }
        if self.capacity > 0 {
            if self.cache.len() >= self.capacity {
                self.cache.retain(|_, v| now_s < v.until);
            }
            if self.cache.len() >= self.capacity {
                if let Some(first) = self
                    .cache
                    .iter()
                    .min_by_key(|(_, v)| v.until)
                    .map(|(k, _)| *k)
                {
                    self.cache.remove(&first);
                }
            }
            let until = i128::from(claims.expires_at_unix())
                .saturating_add(i128::from(self.validation.leeway_duration().as_secs()));
            self.cache.insert(
                digest,
                Verified {
                    user: user.to_owned(),
                    until,
                },
            );
        }
        Ok(user.to_owned())
    }
}

/// Header-name equality ignoring ASCII case and reading `_` as `-`, so look-alike names
/// (`X_Authenticated_User`) compare equal.
fn same_name(name: &str, other: &str) -> bool {
    let fold = |b: u8| {
        if b == b'_' {
            b'-'
        } else {
            b.to_ascii_lowercase()
        }
    };
    name.len() == other.len()
        && name
            .bytes()
            .zip(other.bytes())
            .all(|(a, b)| fold(a) == fold(b))
}

/// `Bearer` (any case), exactly one space, then a token68 value (RFC 7235 §2.1) and nothing else.
fn bearer_token(value: &[u8]) -> Option<&str> {
    let scheme = value.get(..7)?;
    let rest = value.get(7..)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") || rest.is_empty() {
        return None;
    }
    let body_len = rest.iter().position(|b| *b == b'=').unwrap_or(rest.len());
    let (body, pad) = rest.split_at_checked(body_len)?;
    let token68 = |b: &u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(b);
    if body.is_empty() || !body.iter().all(token68) || !pad.iter().all(|b| *b == b'=') {
        return None;
    }
    core::str::from_utf8(rest).ok()
}

fn is_header_safe(user: &str) -> bool {
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

    #[test]
    fn look_alike_names_compare_equal() {
        assert!(same_name("X_Authenticated_User", "x-authenticated-user"));
        assert!(same_name("x-AUTHENTICATED-user", "x-authenticated-user"));
        assert!(!same_name("x-authenticated-users", "x-authenticated-user"));
        assert!(!same_name("x-authenticated-use", "x-authenticated-user"));
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
