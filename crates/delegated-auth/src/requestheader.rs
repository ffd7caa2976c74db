//! Front-proxy (requestheader) authentication: the API server's aggregation layer, or another
//! authenticating proxy, presents a client certificate signed by the requestheader CA and
//! names the user in headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-<key>`,
//! `X-Remote-Uid`). Read as `k8s.io/apiserver`'s requestheader authenticator reads them.
//!
//! Such headers are believed only from a client whose certificate passed
//! [`FrontProxyAuthenticator::authenticate`]; from any request they must be removed
//! ([`RequestHeaderConfig::remove_identity_headers`]) before the request goes on, so that a
//! client without that certificate can never name a user.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::error::Error;
use crate::user::UserInfo;
use crate::x509::ClientCa;

/// The most header names or prefixes of each kind a configuration holds.
pub const MAX_CONFIGURED_HEADERS: usize = 32;

const WHAT: &str = "front-proxy headers";

/// Which headers carry the user: the `--requestheader-*-headers` flags of kube-apiserver,
/// matched without regard to case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    username_headers: Vec<String>,
    uid_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_header_prefixes: Vec<String>,
}

impl RequestHeaderConfig {
    /// A configuration with these header names (each trimmed of surrounding white space), as
    /// `k8s.io/apiserver`'s `New` takes them; no UID headers.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] when a name is empty once trimmed, is not a valid header name, or
    /// there are more than [`MAX_CONFIGURED_HEADERS`] of a kind.
    pub fn new<S: AsRef<str>>(
        username_headers: &[S],
        group_headers: &[S],
        extra_header_prefixes: &[S],
    ) -> Result<RequestHeaderConfig, Error> {
        Ok(RequestHeaderConfig {
            username_headers: trim_headers(username_headers)?,
            uid_headers: Vec::new(),
            group_headers: trim_headers(group_headers)?,
            extra_header_prefixes: trim_headers(extra_header_prefixes)?,
        })
    }

    /// The configuration kube-apiserver is usually given (kubeadm's flags):
    /// `X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-`.
    #[must_use]
    pub fn kube_apiserver_defaults() -> RequestHeaderConfig {
        RequestHeaderConfig {
            username_headers: vec!["X-Remote-User".to_owned()],
            uid_headers: vec!["X-Remote-Uid".to_owned()],
            group_headers: vec!["X-Remote-Group".to_owned()],
            extra_header_prefixes: vec!["X-Remote-Extra-".to_owned()],
        }
    }

    /// The same, with UID headers (`--requestheader-uid-headers`).
    ///
    /// # Errors
    ///
    /// As [`RequestHeaderConfig::new`].
    pub fn with_uid_headers<S: AsRef<str>>(
        mut self,
        uid_headers: &[S],
    ) -> Result<RequestHeaderConfig, Error> {
        self.uid_headers = trim_headers(uid_headers)?;
        Ok(self)
    }

    /// The user named by `headers` (name, value pairs in the order received; a header sent
    /// twice appears twice), or `None` when no username header has a non-empty value:
    /// - the name: the first value of the first username header (in configured order) whose
    ///   first value is not empty;
    /// - the UID: likewise from the UID headers;
    /// - the groups: every non-empty value of every group header, by configured header, then
    ///   in order received;
    /// - the extra: for each prefix in order, every header that starts with it (any case), under
    ///   the rest of its name lowercased, then percent-decoded (`%2F` is `/`); a rest that does
    ///   not decode to UTF-8 is kept as it is (lowercased).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] when a value that would be read is not UTF-8.
    pub fn user_from_headers<N, V>(&self, headers: &[(N, V)]) -> Result<Option<UserInfo>, Error>
    where
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let Some(name) = first_value(headers, &self.username_headers)? else {
            return Ok(None);
        };
        let uid = first_value(headers, &self.uid_headers)?;
        let mut groups = Vec::new();
        for configured in &self.group_headers {
            for (n, v) in headers {
                if n.as_ref().eq_ignore_ascii_case(configured.as_bytes()) && !v.as_ref().is_empty()
                {
                    groups.push(utf8(v.as_ref())?.to_owned());
                }
            }
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for prefix in &self.extra_header_prefixes {
            for (n, v) in headers {
                let Some(rest) = strip_prefix_ignore_case(n.as_ref(), prefix.as_bytes()) else {
                    continue;
                };
                let key = unescape_extra_key(&rest.to_ascii_lowercase());
                extra
                    .entry(key)
                    .or_default()
                    .push(utf8(v.as_ref())?.to_owned());
            }
        }
        Ok(Some(UserInfo {
            name,
            uid,
            groups,
            extra,
        }))
    }

    /// Whether `name` is one of the identity headers (a username, UID or group header, or a
    /// header that starts with an extra prefix), compared without regard to case.
    #[must_use]
    pub fn is_identity_header(&self, name: &[u8]) -> bool {
        self.username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers)
            .any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
            || self
                .extra_header_prefixes
                .iter()
                .any(|p| strip_prefix_ignore_case(name, p.as_bytes()).is_some())
    }

    /// Removes every identity header from `headers`, as `ClearAuthenticationHeaders` does
    /// after a front-proxy authentication. Call it on every request, authenticated by the
    /// front proxy or not: headers from any other client are then never believed by anything
    /// behind.
    pub fn remove_identity_headers<N, V>(&self, headers: &mut Vec<(N, V)>)
    where
        N: AsRef<[u8]>,
    {
        headers.retain(|(n, _)| !self.is_identity_header(n.as_ref()));
    }
}

/// Front-proxy authentication: the requestheader CA, the common names it may sign for the
/// proxy (`requestheader-allowed-names`; empty for any), and the headers.
#[derive(Debug, Clone)]
pub struct FrontProxyAuthenticator {
    ca: ClientCa,
    allowed_names: Vec<String>,
    headers: RequestHeaderConfig,
}

impl FrontProxyAuthenticator {
    /// An authenticator trusting `ca` for the names in `allowed_names` (every name the CA
    /// signs when empty, as Kubernetes), reading `headers`.
    #[must_use]
    pub fn new(
        ca: ClientCa,
        allowed_names: Vec<String>,
        headers: RequestHeaderConfig,
    ) -> FrontProxyAuthenticator {
        FrontProxyAuthenticator {
            ca,
            allowed_names,
            headers,
        }
    }

    /// The header configuration (to [remove](RequestHeaderConfig::remove_identity_headers)
    /// the identity headers from every request).
    #[must_use]
    pub fn headers(&self) -> &RequestHeaderConfig {
        &self.headers
    }

    /// The user a request names, as `k8s.io/apiserver`'s requestheader authenticator decides:
    /// no client certificate is no user of this kind (`Ok(None)`); a chain that does not
    /// verify against the requestheader CA at `now`, or whose common name is not allowed, is
    /// an error; otherwise the user the headers name ([`RequestHeaderConfig::user_from_headers`]),
    /// `Ok(None)` when they name none.
    ///
    /// # Errors
    ///
    /// [`Error::Certificate`] when the chain does not verify; [`Error::NotAllowedName`] when
    /// its common name is not an allowed name; [`Error::Invalid`] as
    /// [`RequestHeaderConfig::user_from_headers`].
    pub fn authenticate<C, N, V>(
        &self,
        chain: &[C],
        headers: &[(N, V)],
        now: SystemTime,
    ) -> Result<Option<UserInfo>, Error>
    where
        C: AsRef<[u8]>,
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if chain.is_empty() {
            return Ok(None);
        }
        let cert = self.ca.verify(chain, now)?;
        if !self.allowed_names.is_empty() {
            let cn = cert.common_name().unwrap_or_default();
            if !self.allowed_names.iter().any(|a| a == cn) {
                return Err(Error::NotAllowedName);
            }
        }
        self.headers.user_from_headers(headers)
    }
}

fn trim_headers<S: AsRef<str>>(names: &[S]) -> Result<Vec<String>, Error> {
    if names.len() > MAX_CONFIGURED_HEADERS {
        return Err(Error::Invalid {
            what: "requestheader configuration",
            reason: "too many header names",
        });
    }
    names
        .iter()
        .map(|n| {
            let n = n.as_ref().trim();
            if n.is_empty() {
                return Err(Error::Invalid {
                    what: "requestheader configuration",
                    reason: "empty header name",
                });
            }
            if !n.bytes().all(is_token_char) {
                return Err(Error::Invalid {
                    what: "requestheader configuration",
                    reason: "not a valid header name",
                });
            }
            Ok(n.to_owned())
        })
        .collect()
}

/// RFC 9110 `tchar`.
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn first_value<N, V>(headers: &[(N, V)], names: &[String]) -> Result<Option<String>, Error>
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    for configured in names {
        // Go's Header.Get: the first value of that header only.
        let first = headers
            .iter()
            .find(|(n, _)| n.as_ref().eq_ignore_ascii_case(configured.as_bytes()));
        if let Some((_, v)) = first
            && !v.as_ref().is_empty()
        {
            return Ok(Some(utf8(v.as_ref())?.to_owned()));
        }
    }
    Ok(None)
}

fn utf8(v: &[u8]) -> Result<&str, Error> {
    core::str::from_utf8(v).map_err(|_| Error::Invalid {
        what: WHAT,
        reason: "a value is not UTF-8",
    })
}

fn strip_prefix_ignore_case<'a>(name: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = name.split_at_checked(prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
}

/// Go's `url.PathUnescape` of an extra key: `%XX` decoded; on a malformed escape or a result
/// that is not UTF-8, the key as it came.
fn unescape_extra_key(key: &[u8]) -> String {
    let raw = || String::from_utf8_lossy(key).into_owned();
    let mut out = Vec::with_capacity(key.len());
    let mut i = key.iter();
    while let Some(&b) = i.next() {
        if b == b'%' {
            let (Some(h), Some(l)) = (i.next().and_then(hex), i.next().and_then(hex)) else {
                return raw();
            };
            out.push(h << 4 | l);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| raw())
}

fn hex(b: &u8) -> Option<u8> {
    char::from(*b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
