//! Token usages.

use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::error::shown;

/// What a token may be used for (`usage-bootstrap-<usage>` = `true`).
///
/// ```
/// use bootstrap_token::Usage;
/// assert_eq!("signing".parse::<Usage>()?, Usage::Signing);
/// assert_eq!(Usage::Authentication.data_key(), "usage-bootstrap-authentication");
/// assert!("Signing".parse::<Usage>().is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "&'static str")]
#[non_exhaustive]
pub enum Usage {
    /// `signing`: the bootstrap signer signs `cluster-info` with this token.
    Signing,
    /// `authentication`: the token authenticates to the API server.
    Authentication,
}

impl Usage {
    /// The known usages, in Kubernetes' order.
    pub const ALL: [Usage; 2] = [Usage::Signing, Usage::Authentication];

    /// The usage name (`signing`, `authentication`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Usage::Signing => "signing",
            Usage::Authentication => "authentication",
        }
    }

    /// The Secret data key enabling this usage.
    #[must_use]
    pub const fn data_key(self) -> &'static str {
        match self {
            Usage::Signing => crate::USAGE_SIGNING_KEY,
            Usage::Authentication => crate::USAGE_AUTHENTICATION_KEY,
        }
    }
}

impl FromStr for Usage {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "signing" => Ok(Usage::Signing),
            "authentication" => Ok(Usage::Authentication),
            other => Err(Error::InvalidUsage {
                usages: shown_plain(other),
            }),
        }
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `s` shortened to at most 300 bytes, unquoted when short and printable.
pub(crate) fn shown_plain(s: &str) -> String {
    if s.len() <= 300 && !s.chars().any(char::is_control) {
        s.to_owned()
    } else {
        shown(s)
    }
}

impl TryFrom<String> for Usage {
    type Error = Error;

    fn try_from(s: String) -> Result<Self, Error> {
        s.parse()
    }
}

impl From<Usage> for &'static str {
    fn from(u: Usage) -> Self {
        u.as_str()
    }
}
