//! Reading JSON from the network: bounded in size, errors without the input.

use serde::de::DeserializeOwned;

use crate::error::Error;

/// Parses `bytes` (at most `max` bytes) as `T`. A parse error keeps only its position:
/// serde's messages can quote the input.
pub(crate) fn from_slice<T: DeserializeOwned>(
    what: &'static str,
    max: usize,
    bytes: &[u8],
) -> Result<T, Error> {
    if bytes.len() > max {
        return Err(Error::TooLarge { what, limit: max });
    }
    serde_json::from_slice(bytes).map_err(|e| Error::Json {
        what,
        line: e.line(),
        column: e.column(),
    })
}

/// Checks an object's `apiVersion` and `kind` when present (a review answer may leave them
/// out, as some webhooks do).
pub(crate) fn check_type(
    what: &'static str,
    api_version: Option<&str>,
    kind: Option<&str>,
    want_version: &str,
    want_kind: &str,
) -> Result<(), Error> {
    if api_version.is_some_and(|v| v != want_version) {
        return Err(Error::Invalid {
            what,
            reason: "unexpected apiVersion",
        });
    }
    if kind.is_some_and(|k| k != want_kind) {
        return Err(Error::Invalid {
            what,
            reason: "unexpected kind",
        });
    }
    Ok(())
}
