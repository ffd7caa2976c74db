//! `auth-extra-groups` entries and `GetGroups`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::constants::BOOTSTRAP_DEFAULT_GROUP;
use crate::error::shown;

const GROUP_PREFIX: &str = "system:bootstrappers:";

/// One `auth-extra-groups` entry: `\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`.
///
/// `system:bootstrappers` itself is not a valid extra group (the pattern needs at least one more
/// character after the prefix).
///
/// ```
/// use bootstrap_token::ExtraGroup;
/// let g: ExtraGroup = "system:bootstrappers:kubeadm:default-node-token".parse()?;
/// assert_eq!(g.as_str(), "system:bootstrappers:kubeadm:default-node-token");
/// assert!("system:masters".parse::<ExtraGroup>().is_err());
/// assert!("system:bootstrappers".parse::<ExtraGroup>().is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ExtraGroup(String);

impl ExtraGroup {
    /// The group name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `s` matches the group pattern.
    #[must_use]
    pub fn is_valid(s: &str) -> bool {
        let Some(rest) = s.strip_prefix(GROUP_PREFIX) else {
            return false;
        };
        let bytes = rest.as_bytes();
        let Some((&last, body)) = bytes.split_last() else {
            return false;
        };
        body.len() <= 255
            && (last.is_ascii_lowercase() || last.is_ascii_digit())
            && body
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
    }
}

impl FromStr for ExtraGroup {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        if Self::is_valid(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(Error::InvalidGroup { group: shown(s) })
        }
    }
}

impl fmt::Display for ExtraGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ExtraGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ExtraGroup").field(&self.0).finish()
    }
}

impl AsRef<str> for ExtraGroup {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The groups an `auth-extra-groups` value grants, with cluster-bootstrap's `GetGroups`
/// semantics: `system:bootstrappers` always present; the value split on `,` without trimming;
/// every entry validated; the result sorted by byte value and deduplicated. An empty value gives
/// just the default group.
///
/// ```
/// use bootstrap_token::parse_groups;
/// assert_eq!(
///     parse_groups(b"system:bootstrappers:b,system:bootstrappers:a,system:bootstrappers:b")?,
///     ["system:bootstrappers", "system:bootstrappers:a", "system:bootstrappers:b"],
/// );
/// assert_eq!(parse_groups(b"")?, ["system:bootstrappers"]);
/// assert!(parse_groups(b"system:bootstrappers:a,").is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidGroup`] naming the first entry that does not match the group pattern.
pub fn parse_groups(value: &[u8]) -> Result<Vec<String>, Error> {
    Ok(groups_cow(value)?
        .into_iter()
        .map(Cow::into_owned)
        .collect())
}

/// `parse_groups` with the default group borrowed: one allocation fewer on the hot path.
pub(crate) fn groups_cow(value: &[u8]) -> Result<Vec<Cow<'static, str>>, Error> {
    if value.is_empty() {
        return Ok(vec![Cow::Borrowed(BOOTSTRAP_DEFAULT_GROUP)]);
    }
    let parts = value
        .iter()
        .filter(|&&b| b == b',')
        .count()
        .saturating_add(1);
    let mut groups: Vec<Cow<'static, str>> = Vec::with_capacity(parts.saturating_add(1));
    groups.push(Cow::Borrowed(BOOTSTRAP_DEFAULT_GROUP));
    for part in value.split(|&b| b == b',') {
        match std::str::from_utf8(part) {
            Ok(s) if ExtraGroup::is_valid(s) => groups.push(Cow::Owned(s.to_owned())),
            Ok(s) => return Err(Error::InvalidGroup { group: shown(s) }),
            Err(_) => {
                return Err(Error::InvalidGroup {
                    group: shown(&String::from_utf8_lossy(part)),
                });
            }
        }
    }
    // Every extra group sorts after the default group (it is a strict extension of it).
    if let Some(extra) = groups.get_mut(1..) {
        extra.sort_unstable();
    }
    groups.dedup();
    Ok(groups)
}

impl TryFrom<String> for ExtraGroup {
    type Error = Error;

    fn try_from(s: String) -> Result<Self, Error> {
        if Self::is_valid(&s) {
            Ok(Self(s))
        } else {
            Err(Error::InvalidGroup { group: shown(&s) })
        }
    }
}

impl From<ExtraGroup> for String {
    fn from(g: ExtraGroup) -> Self {
        g.0
    }
}
