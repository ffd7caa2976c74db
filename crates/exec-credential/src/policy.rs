//! Which commands a kubeconfig may run.

use std::path::PathBuf;

use crate::error::{Error, bounded};

/// The largest kuberc text [`PluginPolicy::from_kuberc_yaml`] reads.
pub const MAX_KUBERC_BYTES: usize = 1024 * 1024;

/// A policy for the commands exec configurations may run: kubectl's kuberc
/// `credentialPluginPolicy` and `credentialPluginAllowlist` (KEP-3104), for programs that load
/// kubeconfigs they do not fully trust. A kubeconfig `exec` stanza is code execution: set a
/// policy whenever the kubeconfig comes from elsewhere.
///
/// Two ways to check a command:
///
/// * [`check_resolved`](Self::check_resolved) decides as kubectl v1.37 does, with a `PATH`
///   lookup the caller supplies (this crate does no file system access): an entry matches the
///   command as configured, or after both are resolved (entry `aws` admits command
///   `/usr/local/bin/aws` when the lookup finds `aws` there, and the other way round). A listed
///   command passes without any lookup, so a listed path that does not exist passes and then
///   fails to start; an unlisted command that cannot be resolved is refused. When the match
///   needed the lookup, the resolved path is the one to run. Give
///   [`ExecAuthenticator::set_path_resolver`](crate::ExecAuthenticator::set_path_resolver) the
///   lookup to have the authenticator decide this way.
/// * [`check`](Self::check) is stricter: it compares the command string with the entries and
///   nothing else, so entry `aws` admits the bare command `aws` (looked up in `PATH` when it
///   runs) but never `/usr/local/bin/aws`, and entry `/usr/local/bin/aws` never admits `aws`.
///   The authenticator uses it when no lookup is set.
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
    /// [`Error::PolicyDenied`] with kubectl's messages for an empty list, an empty entry
    /// (numbered from 1), or an entry that is not a normalised path (`a/../b`, `./a`, `a/`,
    /// `a//b`; the message shows the normalised form).
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
                return Err(Error::PolicyDenied(format!(
                    "misconfigured credential plugin allowlist: empty allowlist entry #{}",
                    i.saturating_add(1)
                )));
            }
            let cleaned = go_clean(e);
            if cleaned != *e {
                return Err(Error::PolicyDenied(format!(
                    "non-normalized file path: {:?} vs {:?}",
                    bounded(e, 256),
                    bounded(&cleaned, 256)
                )));
            }
        }
        Ok(PluginPolicy::Allowlist(entries))
    }

    /// The policy a kuberc file states: `credentialPluginPolicy` (`""`, `AllowAll`, `DenyAll`
    /// or `Allowlist`) and `credentialPluginAllowlist` (`None` when the field is absent; the
    /// entries' `name` values otherwise), validated as kubectl validates them.
    ///
    /// # Errors
    ///
    /// [`Error::PolicyDenied`] with kubectl's messages: a list given with a policy other than
    /// `Allowlist`, `Allowlist` without a list, an unknown policy, or a list
    /// [`allowlist`](Self::allowlist) refuses.
    pub fn from_kuberc(
        policy: &str,
        allowlist: Option<Vec<String>>,
    ) -> Result<PluginPolicy, Error> {
        match (policy, allowlist) {
            ("" | "AllowAll" | "DenyAll", Some(_)) => Err(Error::PolicyDenied(format!(
                "misconfigured credential plugin allowlist: plugin policy is {policy:?} but allowlist is non-nil"
            ))),
            ("" | "AllowAll", None) => Ok(PluginPolicy::AllowAll),
            ("DenyAll", None) => Ok(PluginPolicy::DenyAll),
            ("Allowlist", None) => Err(Error::PolicyDenied(
                "credential plugin policy set to \"Allowlist\", but allowlist is unspecified"
                    .to_owned(),
            )),
            ("Allowlist", Some(entries)) => PluginPolicy::allowlist(entries),
            (other, _) => Err(Error::PolicyDenied(format!(
                "unknown plugin policy: {:?}",
                bounded(other, 64)
            ))),
        }
    }

    /// The policy of a kuberc file's text, read as kubectl v1.37 reads it: the first YAML
    /// document of kind `Preference` in `kubectl.config.k8s.io/v1beta1` gives
    /// `credentialPluginPolicy` and `credentialPluginAllowlist` (entries `{name: ...}`),
    /// validated by [`from_kuberc`](Self::from_kuberc); a `v1alpha1` preference has no policy
    /// (everything is allowed), and so has an empty file. Documents of other kinds or versions
    /// are skipped.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKuberc`] when the text is not YAML or holds no preference document
    /// (kubectl: `no valid preferences found`); otherwise as [`from_kuberc`](Self::from_kuberc).
    pub fn from_kuberc_yaml(text: &str) -> Result<PluginPolicy, Error> {
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_reader_input_bytes: Some(MAX_KUBERC_BYTES),
                max_depth: 32,
                max_nodes: 100_000,
                max_aliases: 0,
                max_anchors: 0,
                max_documents: 64,
                max_merge_keys: 0,
            },
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            with_snippet: false,
        };
        let no_preferences = || Error::InvalidKuberc("no valid preferences found".to_owned());
        // The YAML error text may quote the file; keep none of it.
        let documents: Vec<serde_json::Value> =
            serde_saphyr::from_multiple_with_options(text, options)
                .map_err(|_| no_preferences())?;
        let documents: Vec<&serde_json::Value> =
            documents.iter().filter(|d| !d.is_null()).collect();
        if documents.is_empty() {
            return Ok(PluginPolicy::AllowAll);
        }
        for doc in documents {
            if doc.get("kind").and_then(serde_json::Value::as_str) != Some("Preference") {
                continue;
            }
            match doc.get("apiVersion").and_then(serde_json::Value::as_str) {
                Some("kubectl.config.k8s.io/v1alpha1") => return Ok(PluginPolicy::AllowAll),
                Some("kubectl.config.k8s.io/v1beta1") => {}
                _ => continue,
            }
            let policy = match doc.get("credentialPluginPolicy") {
                None | Some(serde_json::Value::Null) => "",
                Some(serde_json::Value::String(p)) => p.as_str(),
                Some(_) => return Err(no_preferences()),
            };
            let allowlist = match doc.get("credentialPluginAllowlist") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::Array(entries)) => Some(
                    entries
                        .iter()
                        .map(|e| match e.get("name") {
                            None | Some(serde_json::Value::Null) => Ok(String::new()),
                            Some(serde_json::Value::String(name)) => Ok(name.clone()),
                            Some(_) => Err(no_preferences()),
                        })
                        .collect::<Result<Vec<String>, Error>>()?,
                ),
                Some(_) => return Err(no_preferences()),
            };
            return PluginPolicy::from_kuberc(policy, allowlist);
        }
        Err(no_preferences())
    }

    /// Whether `command` may run, comparing strings only (see the type's documentation).
    ///
    /// # Errors
    ///
    /// [`Error::PolicyDenied`]: `plugin "<cmd>" not allowed: policy set to "DenyAll"` or
    /// `plugin path "<cmd>" is not permitted by the credential plugin allowlist`.
    pub fn check(&self, command: &str) -> Result<(), Error> {
        match self {
            PluginPolicy::AllowAll => Ok(()),
            PluginPolicy::DenyAll => Err(deny_all(command)),
            PluginPolicy::Allowlist(entries) => {
                if entries.iter().any(|e| e == command) {
                    Ok(())
                } else {
                    Err(not_permitted(command))
                }
            }
        }
    }

    /// Whether `command` may run, decided as kubectl v1.37 decides, with `resolve` as the
    /// `PATH` lookup (Go's `exec.LookPath`: a bare name is searched in `PATH`; a name with a
    /// separator is returned as it is if it names an executable file; `None` when there is
    /// none). Returns the path to run when the decision resolved the command (run that path,
    /// so that the program checked is the program run), `None` to run the command as
    /// configured.
    ///
    /// One difference: kubectl compares the normalised form of the command with the entries
    /// (`./aws` with `aws`); here the command must equal an entry as written, or match after
    /// resolution. Commands from a kubeconfig are normal already once
    /// [`ExecConfig::resolve_relative_to`](crate::ExecConfig::resolve_relative_to) has made
    /// relative paths absolute, as kubectl's loader does.
    ///
    /// # Errors
    ///
    /// [`Error::PolicyDenied`]: `plugin "<cmd>" not allowed: policy set to "DenyAll"`;
    /// `plugin path "<cmd>" cannot be resolved for credential plugin allowlist check: exec:
    /// "<cmd>": executable file not found in $PATH` (for a bare name; for a path the reason
    /// reads `stat <cmd>: no such file or directory`, which Go reports only when the file does
    /// not exist); `plugin path "<resolved>" is not permitted by the credential plugin
    /// allowlist`.
    pub fn check_resolved<R>(&self, command: &str, mut resolve: R) -> Result<Option<PathBuf>, Error>
    where
        R: FnMut(&str) -> Option<PathBuf>,
    {
        let entries = match self {
            PluginPolicy::AllowAll => return Ok(None),
            PluginPolicy::DenyAll => return Err(deny_all(command)),
            PluginPolicy::Allowlist(entries) => entries,
        };
        if entries.iter().any(|e| e == command) {
            return Ok(None);
        }
        let Some(resolved) = resolve(command) else {
            let shown = bounded(command, 256);
            let reason = if command.contains('/') {
                format!("stat {shown}: no such file or directory")
            } else {
                "executable file not found in $PATH".to_owned()
            };
            return Err(Error::PolicyDenied(format!(
                "plugin path {shown:?} cannot be resolved for credential plugin allowlist check: exec: {shown:?}: {reason}"
            )));
        };
        let matches_entry = entries
            .iter()
            .any(|e| std::path::Path::new(e) == resolved.as_path());
        if matches_entry
            || entries
                .iter()
                .any(|e| resolve(e).is_some_and(|p| p == resolved))
        {
            return Ok(Some(resolved));
        }
        Err(not_permitted(&resolved.to_string_lossy()))
    }
}

fn deny_all(command: &str) -> Error {
    Error::PolicyDenied(format!(
        "plugin {:?} not allowed: policy set to \"DenyAll\"",
        bounded(&go_clean(command), 256)
    ))
}

fn not_permitted(path: &str) -> Error {
    Error::PolicyDenied(format!(
        "plugin path {:?} is not permitted by the credential plugin allowlist",
        bounded(path, 256)
    ))
}

/// Go's `filepath.Clean` for `/`-separated paths: removes empty and `.` elements, resolves `..`
/// lexically, and returns `.` for an empty result.
pub(crate) fn go_clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for element in p.split('/') {
        match element {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
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

    #[test]
    fn go_clean_matches_filepath_clean() {
        for (input, want) in [
            ("", "."),
            (".", "."),
            ("./a", "a"),
            ("a/", "a"),
            ("a//b", "a/b"),
            ("a/../b", "b"),
            ("../a", "../a"),
            ("a/../..", ".."),
            ("/..", "/"),
            ("/../a", "/a"),
            ("/usr/bin/../bin/aws", "/usr/bin/aws"),
            ("/", "/"),
            ("//a", "/a"),
        ] {
            assert_eq!(go_clean(input), want, "{input:?}");
        }
    }
}
