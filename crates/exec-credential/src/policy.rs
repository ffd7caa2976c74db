//! Which commands a kubeconfig may run.

use crate::error::{Error, bounded};

/// A policy for the commands exec configurations may run, in the spirit of kubectl's kuberc
/// `credentialPluginPolicy` (KEP-3104), for programs that load kubeconfigs they do not fully
/// trust. A kubeconfig `exec` stanza is code execution: set a policy whenever the kubeconfig
/// comes from elsewhere.
///
/// Matching is on the command string as configured (after
/// [`ExecConfig::resolve_relative_to`](crate::ExecConfig::resolve_relative_to)), without any
/// `PATH` lookup: an allow-list entry `aws` permits the bare command `aws` (which the caller
/// looks up in `PATH`), and never `/tmp/evil/aws`; an entry `/usr/local/bin/aws` permits only
/// that path. client-go additionally matches `PATH`-resolved paths; this crate does no file
/// system access, so callers that want that add the resolved paths to the list themselves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PluginPolicy {
    /// Every command may run (client-go's default).
    #[default]
    AllowAll,
    /// No command may run.
    DenyAll,
    /// Only the listed commands may run. Build with [`PluginPolicy::allowlist`].
    Allowlist(Vec<String>),
}

impl PluginPolicy {
    /// An allow-list policy.
    ///
    /// # Errors
    ///
    /// [`Error::PolicyDenied`] with client-go's messages for an empty list, an empty entry, or
    /// an entry that is not a normalised path (`a/../b`, `./a`, trailing `/`).
    pub fn allowlist<I, S>(entries: I) -> Result<PluginPolicy, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let entries: Vec<String> = entries.into_iter().map(Into::into).collect();
        if entries.is_empty() {
            return Err(Error::PolicyDenied(
                "credential plugin policy set to \"Allowlist\", but allowlist is empty; use \"DenyAll\" policy instead"
                    .to_owned(),
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            if e.is_empty() {
                return Err(Error::PolicyDenied(format!("empty allowlist entry #{i}")));
            }
            if !is_normalized(e) {
                return Err(Error::PolicyDenied(format!(
                    "non-normalized file path: {:?}",
                    bounded(e, 256)
                )));
            }
        }
        Ok(PluginPolicy::Allowlist(entries))
    }

    /// Whether `command` may run.
    ///
    /// # Errors
    ///
    /// [`Error::PolicyDenied`]: `plugin "<cmd>" not allowed: policy set to "DenyAll"` or
    /// `plugin path "<cmd>" is not permitted by the credential plugin allowlist`.
    pub fn check(&self, command: &str) -> Result<(), Error> {
        match self {
            PluginPolicy::AllowAll => Ok(()),
            PluginPolicy::DenyAll => Err(Error::PolicyDenied(format!(
                "plugin {:?} not allowed: policy set to \"DenyAll\"",
                bounded(command, 256)
            ))),
            PluginPolicy::Allowlist(entries) => {
                if entries.iter().any(|e| e == command) {
                    Ok(())
                } else {
                    Err(Error::PolicyDenied(format!(
                        "plugin path {:?} is not permitted by the credential plugin allowlist",
                        bounded(command, 256)
                    )))
                }
            }
        }
    }
}

/// `filepath.Clean(p) == p`, lexically.
fn is_normalized(p: &str) -> bool {
    if p.len() > 1 && p.ends_with('/') {
        return false;
    }
    if p.contains("//") {
        return false;
    }
    !p.split('/')
        .enumerate()
        .any(|(i, c)| c == "." || c == ".." && i > 0 || (c.is_empty() && i > 0))
        && !p.starts_with("./")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_rules() {
        let p = PluginPolicy::allowlist(["aws", "/usr/local/bin/kubelogin"]).unwrap();
        assert!(p.check("aws").is_ok());
        assert!(p.check("/usr/local/bin/kubelogin").is_ok());
        assert!(p.check("/tmp/evil/aws").is_err());
        assert!(p.check("kubelogin").is_err());
        assert!(p.check("./aws").is_err());
        assert!(PluginPolicy::allowlist(Vec::<String>::new()).is_err());
        assert!(PluginPolicy::allowlist([""]).is_err());
        assert!(PluginPolicy::allowlist(["/usr/bin/../bin/aws"]).is_err());
        assert!(PluginPolicy::allowlist(["./aws"]).is_err());
        assert_eq!(
            PluginPolicy::DenyAll.check("aws").unwrap_err().to_string(),
            "plugin \"aws\" not allowed: policy set to \"DenyAll\""
        );
        assert!(PluginPolicy::AllowAll.check("/anything").is_ok());
    }
}
