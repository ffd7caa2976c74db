//! An on-disk credential cache format for plugin authors (the file I/O is the caller's).

use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};

use crate::credential::ExecCredential;
use crate::error::{Error, sanitize_json_error};

/// Largest cache entry [`CacheEntry::from_json`] reads (1 MiB).
const MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// A cache key: SHA-256 over every identity input, each length-prefixed and named, so two
/// different identities never share an entry (unlike caches keyed on a subset of inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 32]);

/// Builds a [`CacheKey`] from named parts. Order matters; names keep parts from running into
/// each other.
#[derive(Debug, Clone, Default)]
pub struct CacheKeyBuilder(Sha256);

impl CacheKey {
    /// A key over the request a plugin received (its `apiVersion` and the whole
    /// `spec.cluster`: server, TLS settings, CA data, proxy, extension config; not
    /// `interactive`), the plugin's own arguments, and any further identity inputs the plugin
    /// uses (environment values, user name, scopes, ...) as `(name, value)` pairs.
    #[must_use]
    pub fn for_request(
        request: &ExecCredential,
        args: &[String],
        extra: &[(&str, &str)],
    ) -> CacheKey {
        let mut b = CacheKey::builder()
            .part("format", b"exec-credential-cache/v1")
            .part("apiVersion", request.api_version().as_str().as_bytes());
        let cluster = request
            .cluster()
            .map(|c| serde_json::to_vec(c).unwrap_or_default())
            .unwrap_or_default();
        b = b.part("cluster", &cluster);
        b = b.part("argc", args.len().to_string().as_bytes());
        for a in args {
            b = b.part("arg", a.as_bytes());
        }
        for (name, value) in extra {
            b = b.part(name, value.as_bytes());
        }
        b.finish()
    }

    /// An empty builder.
    #[must_use]
    pub fn builder() -> CacheKeyBuilder {
        CacheKeyBuilder::default()
    }

    /// Lowercase hex, 64 characters; suitable as a file name.
    #[must_use]
    pub fn to_hex(&self) -> String {
        use core::fmt::Write as _;
        let mut s = String::with_capacity(64);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

impl CacheKeyBuilder {
    /// Adds a named part.
    #[must_use]
    pub fn part(mut self, name: &str, value: &[u8]) -> CacheKeyBuilder {
        for field in [name.as_bytes(), value] {
            self.0.update((field.len() as u64).to_be_bytes());
            self.0.update(field);
        }
        self
    }

    /// The key.
    #[must_use]
    pub fn finish(self) -> CacheKey {
        CacheKey(self.0.finalize().into())
    }
}

/// One cached plugin response, stored with its key so that a file written for another
/// identity (a renamed or copied file, a hash-prefix collision in a shorter file name) is
/// rejected. Write it with owner-only permissions (0600) and an atomic rename; the
/// `exec-plugin` example shows how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    key: CacheKey,
    response: ExecCredential,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct WireEntry {
    version: u32,
    key: String,
    credential: ExecCredential,
}

impl CacheEntry {
    /// An entry holding `response` (a plugin response with a `status`).
    #[must_use]
    pub fn new(key: CacheKey, response: ExecCredential) -> CacheEntry {
        CacheEntry { key, response }
    }

    /// The stored response.
    #[must_use]
    pub fn response(&self) -> &ExecCredential {
        &self.response
    }

    /// The response if it is still usable: it has a status, and either no expiry or an expiry
    /// at least `min_remaining` after `now` (so a client does not receive a credential that
    /// expires in flight).
    #[must_use]
    pub fn fresh_response(
        &self,
        now: SystemTime,
        min_remaining: Duration,
    ) -> Option<&ExecCredential> {
        let status = self.response.status()?;
        match status.expiration() {
            None => Some(&self.response),
            Some(exp) => {
                let deadline = now.checked_add(min_remaining)?;
                (deadline <= exp).then_some(&self.response)
            }
        }
    }

    /// The file contents (JSON; it contains the credential, so protect the file).
    #[must_use]
    pub fn to_json(&self) -> String {
        let wire = WireEntry {
            version: 1,
            key: self.key.to_hex(),
            credential: self.response.clone(),
        };
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Reads an entry written by [`to_json`](Self::to_json) and checks it belongs to `key`.
    ///
    /// # Errors
    ///
    /// [`Error::OutputTooLarge`], [`Error::Decode`] for a damaged file,
    /// [`Error::CacheKeyMismatch`] for an entry of another identity or format version.
    pub fn from_json(bytes: &[u8], key: &CacheKey) -> Result<CacheEntry, Error> {
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(Error::OutputTooLarge {
                limit: MAX_ENTRY_BYTES,
            });
        }
        let wire: WireEntry =
            serde_json::from_slice(bytes).map_err(|e| Error::Decode(sanitize_json_error(&e)))?;
        if wire.version != 1 || wire.key != key.to_hex() {
            return Err(Error::CacheKeyMismatch);
        }
        Ok(CacheEntry {
            key: *key,
            response: wire.credential,
        })
    }
}
