//! The kubeconfig `user.exec` stanza.

use core::fmt;
use core::str::FromStr;
use std::path::Path;

use crate::api_version::ApiVersion;
use crate::error::{Error, bounded};
use crate::wire::{empty_as_null, null_as_default, null_tolerant_vec};

/// `interactiveMode`: whether and how a plugin may use stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InteractiveMode {
    /// `Never`: stdin is never attached.
    Never,
    /// `IfAvailable`: stdin is attached when it is a terminal and the embedding program has not
    /// marked it unavailable.
    IfAvailable,
    /// `Always`: the plugin needs a terminal; running it without one is an error.
    Always,
}

impl InteractiveMode {
    /// The kubeconfig spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            InteractiveMode::Never => "Never",
            InteractiveMode::IfAvailable => "IfAvailable",
            InteractiveMode::Always => "Always",
        }
    }
}

impl fmt::Display for InteractiveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InteractiveMode {
    type Err = Error;

    /// Parses `Never`, `IfAvailable` or `Always` (case-sensitive).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInteractiveMode`] (with an empty user name) for anything else.
    fn from_str(s: &str) -> Result<InteractiveMode, Error> {
        match s {
            "Never" => Ok(InteractiveMode::Never),
            "IfAvailable" => Ok(InteractiveMode::IfAvailable),
            "Always" => Ok(InteractiveMode::Always),
            other => Err(Error::InvalidInteractiveMode {
                user: String::new(),
                mode: bounded(other, 64),
            }),
        }
    }
}

/// One `env` entry of the exec stanza.
///
/// Kubeconfigs sometimes pass secrets this way (access keys, client secrets), so `Debug` prints
/// the name and hides the value.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ExecEnvVar {
    /// `name` (required).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// `value`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub value: String,
}

impl fmt::Debug for ExecEnvVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecEnvVar")
            .field("name", &self.name)
            .field("value", &REDACTED)
            .finish()
    }
}

/// What `Debug` prints instead of a plugin argument or environment value (client-go's
/// placeholder).
pub(crate) const REDACTED: &str = "--- REDACTED ---";

/// `Debug` of plugin arguments: `[]`, or `["--- REDACTED ---"]` for any number of arguments, as
/// client-go prints them.
pub(crate) struct RedactedArgs<'a>(pub(crate) &'a [String]);

impl fmt::Debug for RedactedArgs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        if !self.0.is_empty() {
            list.entry(&REDACTED);
        }
        list.finish()
    }
}

impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecConfig")
            .field("command", &self.command)
            .field("args", &RedactedArgs(&self.args))
            .field("env", &self.env)
            .field("api_version", &self.api_version)
            .field("install_hint", &self.install_hint)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("interactive_mode", &self.interactive_mode)
            .finish()
    }
}

impl ExecEnvVar {
    /// An entry.
    #[must_use]
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> ExecEnvVar {
        ExecEnvVar {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// The kubeconfig `users[].user.exec` stanza (client-go's `ExecConfig`).
///
/// Deserialise it from the kubeconfig (any serde format), then call
/// [`ExecConfig::apply_defaults`] and [`ExecConfig::validate`] as client-go's loader does.
/// `interactiveMode` is kept as written so that validation can report client-go's messages.
///
/// As Go's `encoding/json` does, a JSON `null` reads as the field's zero value, for every field
/// and for each `args` and `env` element; `kubectl config view -o json` writes `"args": null` and
/// `"env": null` for a stanza without them. `Serialize` writes the stanza as kubectl does:
/// `command`, `args` and `env` (`null` when empty), `apiVersion` and `installHint` (omitted when
/// empty), `provideClusterInfo` (always), `interactiveMode` (omitted when empty).
///
/// `Debug` does not show argument or `env` values, which often carry secrets
/// (`--client-secret=…`): as client-go's `ExecConfig.String`, non-empty `args` print as
/// `["--- REDACTED ---"]`, and each `env` entry shows its name with the value
/// `--- REDACTED ---`.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `command`: a bare name (looked up in `PATH` by the caller), an absolute path, or a
    /// relative path (see [`ExecConfig::resolve_relative_to`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub command: String,
    /// `args` (written as `null` when empty, as Go writes a nil slice).
    #[serde(
        default,
        deserialize_with = "null_tolerant_vec",
        serialize_with = "empty_as_null"
    )]
    pub args: Vec<String>,
    /// `env`: added to the plugin's environment after the host's, so they override it
    /// (written as `null` when empty, as Go writes a nil slice).
    #[serde(
        default,
        deserialize_with = "null_tolerant_vec",
        serialize_with = "empty_as_null"
    )]
    pub env: Vec<ExecEnvVar>,
    /// `apiVersion`: the `ExecCredential` version to speak.
    #[serde(
        default,
        rename = "apiVersion",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    /// `installHint`: shown when the command is not found (sanitised first).
    #[serde(
        default,
        rename = "installHint",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub install_hint: String,
    /// `provideClusterInfo`: send `spec.cluster` to the plugin.
    #[serde(
        default,
        rename = "provideClusterInfo",
        deserialize_with = "null_as_default"
    )]
    pub provide_cluster_info: bool,
    /// `interactiveMode`: `Never`, `IfAvailable` or `Always`; empty when not set.
    #[serde(
        default,
        rename = "interactiveMode",
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub interactive_mode: String,
}

impl ExecConfig {
    /// A configuration running `command` and speaking `api_version`, with `interactiveMode`
    /// set.
    #[must_use]
    pub fn new(
        command: impl Into<String>,
        api_version: ApiVersion,
        interactive_mode: InteractiveMode,
    ) -> ExecConfig {
        ExecConfig {
            command: command.into(),
            api_version: api_version.as_str().to_owned(),
            interactive_mode: interactive_mode.as_str().to_owned(),
            ..ExecConfig::default()
        }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<String>) -> ExecConfig {
        self.args.push(arg.into());
        self
    }

    /// Adds an `env` entry.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> ExecConfig {
        self.env.push(ExecEnvVar::new(name, value));
        self
    }

    /// Sets `provideClusterInfo`.
    #[must_use]
    pub fn provide_cluster_info(mut self, provide: bool) -> ExecConfig {
        self.provide_cluster_info = provide;
        self
    }

    /// Sets `installHint`.
    #[must_use]
    pub fn install_hint(mut self, hint: impl Into<String>) -> ExecConfig {
        self.install_hint = hint.into();
        self
    }

    /// The defaulting client-go's kubeconfig loader applies: an empty `interactiveMode` becomes
    /// `IfAvailable` for `…/v1beta1` (and the removed `…/v1alpha1`), and stays empty for `…/v1`,
    /// where it is required.
    pub fn apply_defaults(&mut self) {
        if self.interactive_mode.is_empty()
            && matches!(
                self.api_version.as_str(),
                "client.authentication.k8s.io/v1beta1" | "client.authentication.k8s.io/v1alpha1"
            )
        {
            self.interactive_mode = InteractiveMode::IfAvailable.as_str().to_owned();
        }
    }

    /// client-go's kubeconfig validation of the stanza for user `user`, with its messages; as in
    /// client-go it runs after [`apply_defaults`](Self::apply_defaults). The first problem is
    /// reported (client-go lists them all).
    ///
    /// # Errors
    ///
    /// [`Error::MissingField`] for a missing `command`, `apiVersion`, env variable name, or
    /// `interactiveMode` (required for every `apiVersion`; the defaulting supplies it only for
    /// exactly `client.authentication.k8s.io/v1beta1` and `…/v1alpha1`);
    /// [`Error::InvalidInteractiveMode`] for an unknown mode.
    pub fn validate(&self, user: &str) -> Result<(), Error> {
        let user = bounded(user, 256);
        let missing = |field| Error::MissingField {
            field,
            user: user.clone(),
        };
        if self.command.is_empty() {
            return Err(missing("command"));
        }
        if self.api_version.is_empty() {
            return Err(missing("apiVersion"));
        }
        if self.env.iter().any(|v| v.name.is_empty()) {
            return Err(missing("env variable name"));
        }
        match self.interactive_mode.as_str() {
            // Required whatever the apiVersion: only the defaulting fills it in (for exactly
            // `…/v1beta1` and `…/v1alpha1`), so a misspelled version is caught here.
            "" => return Err(missing("interactiveMode")),
            "Never" | "IfAvailable" | "Always" => {}
            other => {
                return Err(Error::InvalidInteractiveMode {
                    user,
                    mode: bounded(other, 64),
                });
            }
        }
        Ok(())
    }

    /// The kubeconfig loader's path resolution: a relative `command` that contains a path
    /// separator is made absolute against `kubeconfig_dir` (the directory of the kubeconfig
    /// file it came from). Bare names (looked up in `PATH`) and absolute paths are unchanged.
    pub fn resolve_relative_to(&mut self, kubeconfig_dir: &Path) {
        let command = Path::new(&self.command);
        let has_separator = self.command.contains('/') || self.command.contains('\\');
        if has_separator && command.is_relative() {
            self.command = clean_join(kubeconfig_dir, command);
        }
    }
}

/// `filepath.Join(dir, rel)`: joins and removes `.` and `..` components lexically.
fn clean_join(dir: &Path, rel: &Path) -> String {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in dir.join(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_commands() {
        let dir = Path::new("/etc/kube");
        for (cmd, want) in [
            ("plugin", "plugin"),
            ("./plugin", "/etc/kube/plugin"),
            ("../bin/plugin", "/etc/bin/plugin"),
            ("bin/plugin", "/etc/kube/bin/plugin"),
            ("/usr/bin/plugin", "/usr/bin/plugin"),
        ] {
            let mut c = ExecConfig::new(cmd, ApiVersion::V1, InteractiveMode::Never);
            c.resolve_relative_to(dir);
            assert_eq!(c.command, want);
        }
    }
}
