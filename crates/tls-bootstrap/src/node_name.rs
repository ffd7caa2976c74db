//! Node names.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The prefix of a node's user name and certificate common name (`system:node:<nodeName>`).
pub const NODE_USER_PREFIX: &str = "system:node:";

/// The group every node belongs to, and the only organization a node client certificate may
/// carry.
pub const NODES_GROUP: &str = "system:nodes";

/// The longest node name Kubernetes accepts (a DNS-1123 subdomain).
pub const MAX_NODE_NAME_LEN: usize = 253;

/// A node name: a DNS-1123 subdomain (lowercase letters, digits, `-` and `.`, at most 253
/// characters, each dot-separated label starting and ending with a letter or digit), as
/// Kubernetes requires of `Node` object names.
///
/// ```
/// # fn main() -> Result<(), tls_bootstrap::Error> {
/// let name: tls_bootstrap::NodeName = "worker-1.example".parse()?;
/// assert_eq!(name.user_name(), "system:node:worker-1.example");
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeName(String);

impl NodeName {
    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The node's user name and certificate common name, `system:node:<name>`.
    pub fn user_name(&self) -> String {
        format!("{NODE_USER_PREFIX}{}", self.0)
    }

    /// The node name inside a `system:node:<name>` user name or common name, if it is one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidNodeName`] when the prefix is missing or the rest is not a node name.
    pub fn from_user_name(user: &str) -> Result<NodeName, Error> {
        user.strip_prefix(NODE_USER_PREFIX)
            .ok_or(Error::InvalidNodeName {
                reason: "does not start with system:node:",
            })?
            .parse()
    }
}

impl FromStr for NodeName {
    type Err = Error;

    fn from_str(s: &str) -> Result<NodeName, Error> {
        validate(s)?;
        Ok(NodeName(s.to_owned()))
    }
}

impl TryFrom<String> for NodeName {
    type Error = Error;

    fn try_from(s: String) -> Result<NodeName, Error> {
        validate(&s)?;
        Ok(NodeName(s))
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeName({:?})", self.0)
    }
}

fn validate(s: &str) -> Result<(), Error> {
    let invalid = |reason| Err(Error::InvalidNodeName { reason });
    if s.is_empty() {
        return invalid("empty");
    }
    if s.len() > MAX_NODE_NAME_LEN {
        return invalid("longer than 253 characters");
    }
    for label in s.split('.') {
        let bytes = label.as_bytes();
        let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
            return invalid("empty label");
        };
        if !first.is_ascii_lowercase() && !first.is_ascii_digit()
            || !last.is_ascii_lowercase() && !last.is_ascii_digit()
        {
            return invalid("a label must start and end with a lowercase letter or digit");
        }
        if !bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        {
            return invalid("only lowercase letters, digits, '-' and '.' are allowed");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dns_subdomains() {
        for ok in [
            "a",
            "worker-1",
            "node.example.com",
            "1-2.3",
            &"a".repeat(253),
        ] {
            assert!(ok.parse::<NodeName>().is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_others() {
        for bad in [
            "",
            "Worker",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            "a_b",
            "a b",
            "a,O=system:masters",
            &"a".repeat(254),
        ] {
            assert!(bad.parse::<NodeName>().is_err(), "{bad}");
        }
    }

    #[test]
    fn user_names() {
        let n: NodeName = "w".parse().unwrap();
        assert_eq!(n.user_name(), "system:node:w");
        assert_eq!(NodeName::from_user_name("system:node:w").unwrap(), n);
        assert!(NodeName::from_user_name("system:nodes:w").is_err());
        assert!(NodeName::from_user_name("system:node:").is_err());
    }
}
