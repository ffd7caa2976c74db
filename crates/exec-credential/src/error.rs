//! The crate's error type.

use std::time::{Duration, SystemTime};

use crate::stderr::StderrSummary;

/// Everything that can go wrong in this crate.
///
/// Messages follow client-go's wording where client-go has one. No message ever contains a
/// token, a client key or plugin output; values taken from untrusted input are bounded and
/// escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `apiVersion` of an exec configuration or of an `ExecCredential` is not one this crate
    /// knows.
    #[error("exec plugin: invalid apiVersion {0:?}")]
    InvalidApiVersion(String),

    /// A required field of the kubeconfig `user.exec` stanza is missing.
    #[error("{field} must be specified for {user} to use exec authentication plugin")]
    MissingField {
        /// `command`, `apiVersion`, `interactiveMode` or `env variable name`.
        field: &'static str,
        /// The kubeconfig user name.
        user: String,
    },

    /// `interactiveMode` holds a value other than `Never`, `IfAvailable` or `Always`.
    #[error("invalid interactiveMode for {user}: {mode:?}")]
    InvalidInteractiveMode {
        /// The kubeconfig user name.
        user: String,
        /// The rejected value (bounded).
        mode: String,
    },

    /// The plugin cannot run with the configured interactive mode (client-go's
    /// `exec plugin cannot support interactive mode: ...`).
    #[error("exec plugin cannot support interactive mode: {reason}")]
    Interactive {
        /// `standard input is not a terminal`, `standard input is unavailable[: <message>]` or
        /// `unknown interactiveMode: "<mode>"`.
        reason: String,
    },

    /// The plugin policy refuses the command.
    #[error("{0}")]
    PolicyDenied(String),

    /// A kuberc file could not be read as kubectl reads it (the reason never quotes the file).
    #[error("kuberc: {0}")]
    InvalidKuberc(String),

    /// The command was not found (a `PATH` lookup failed).
    ///
    /// `install_hint` holds client-go's help text and the sanitised install hint when the rate
    /// limit (10 per hour) allowed showing it.
    #[error("exec: executable {command} not found{}", install_hint.as_deref().unwrap_or(""))]
    PluginNotFound {
        /// The command as configured.
        command: String,
        /// Help text and sanitised install hint, already formatted (starts with two newlines).
        install_hint: Option<String>,
    },

    /// The plugin could not be started for another reason (permission denied, a missing
    /// absolute path, ...).
    #[error("exec: {message}")]
    SpawnFailed {
        /// The command as configured.
        command: String,
        /// The operating-system error (bounded; it never contains plugin output).
        message: String,
    },

    /// The plugin exited with a non-zero status.
    ///
    /// The captured stderr summary is kept out of `Display` and `Debug` (a failing plugin may
    /// print a secret); read it with [`StderrSummary::as_str`].
    #[error("exec: executable {command} failed with exit code {code}")]
    PluginFailed {
        /// The command as configured.
        command: String,
        /// The exit code.
        code: i32,
        /// A bounded, sanitised summary of what the plugin wrote to stderr, if it was captured.
        stderr: StderrSummary,
    },

    /// The plugin was ended by a signal.
    #[error("exec: executable {command} was terminated by signal {signal}")]
    PluginKilled {
        /// The command as configured.
        command: String,
        /// The signal number.
        signal: i32,
        /// A bounded, sanitised summary of stderr, if it was captured.
        stderr: StderrSummary,
    },

    /// The plugin did not finish within the time the caller was told to allow.
    #[error("exec: executable {command} did not finish within {timeout:?}")]
    PluginTimedOut {
        /// The command as configured.
        command: String,
        /// The time allowed.
        timeout: Duration,
    },

    /// The plugin's stdout (or a `KUBERNETES_EXEC_INFO` value) is larger than the limit.
    #[error("output larger than the limit of {limit} bytes")]
    OutputTooLarge {
        /// The limit in bytes.
        limit: usize,
    },

    /// The plugin's stdout (or a `KUBERNETES_EXEC_INFO` value) is not a decodable
    /// `ExecCredential`.
    #[error("decoding stdout: {0}")]
    Decode(DecodeError),

    /// `kind` is missing or is not `ExecCredential`.
    #[error("decoding stdout: kind must be \"ExecCredential\"")]
    WrongKind,

    /// The `apiVersion` of a decoded `ExecCredential` is not one this crate knows. The value is
    /// not shown: it is the plugin's (or the client's) text.
    #[error(
        "decoding stdout: apiVersion is not a client.authentication.k8s.io version this client reads"
    )]
    UnsupportedApiVersion,

    /// `apiVersion` is missing from an `ExecCredential`.
    #[error("decoding stdout: apiVersion is missing")]
    MissingApiVersion,

    /// The plugin answered in another version than the configured one.
    #[error(
        "exec plugin is configured to use API version {configured}, plugin returned version {returned}"
    )]
    ApiVersionMismatch {
        /// The configured version.
        configured: String,
        /// The version in the plugin's output (bounded and escaped).
        returned: String,
    },

    /// `status` is missing or `null`.
    #[error("exec plugin didn't return a status field")]
    MissingStatus,

    /// Neither a token nor a certificate/key pair.
    #[error("exec plugin didn't return a token or cert/key pair")]
    NoCredential,

    /// Only one half of the certificate/key pair.
    #[error("exec plugin returned only certificate or key, not both")]
    PartialKeyPair,

    /// `status.expirationTimestamp` is not an RFC 3339 time as Go parses it.
    #[error("invalid expirationTimestamp: {reason}")]
    InvalidExpiration {
        /// Why (never the input).
        reason: String,
    },

    /// The client certificate or key is unusable.
    #[error("failed parsing client key/certificate: {reason}")]
    InvalidKeyPair {
        /// Why (never key material).
        reason: String,
    },

    /// The first certificate does not parse as X.509.
    #[error("failed parsing client leaf certificate: {reason}")]
    InvalidLeafCertificate {
        /// Why (never certificate bytes).
        reason: String,
    },

    /// A plugin run is needed, but the last one failed too recently: the authenticator waits
    /// between failed runs (see
    /// [`ExecAuthenticator::set_failure_backoff`](crate::ExecAuthenticator::set_failure_backoff)).
    #[error("exec plugin failed {failures} time(s) in a row; next run allowed in {retry_in:?}")]
    RunBackoff {
        /// Consecutive failed runs.
        failures: u32,
        /// When the next run may start.
        retry_at: SystemTime,
        /// How long that is after the `now` of the call that was refused.
        retry_in: Duration,
    },

    /// The output handed back does not belong to the run the state machine is waiting for.
    #[error("no plugin run with this id is in flight")]
    UnknownRun,

    /// A credential cache entry was written for other identity inputs.
    #[error("credential cache entry belongs to another identity")]
    CacheKeyMismatch,
}

/// Why plugin output did not decode. Carries the position and a redacted reason; the input
/// itself is never included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub(crate) format: &'static str,
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) reason: String,
}

impl DecodeError {
    /// `"JSON"` or `"YAML"`; `"JSON or YAML"` when the output is not an object in either (a
    /// plugin that printed a message, or nothing).
    #[must_use]
    pub fn format(&self) -> &'static str {
        self.format
    }
    /// 1-based line (0 when unknown).
    #[must_use]
    pub fn line(&self) -> usize {
        self.line
    }
    /// 1-based column (0 when unknown).
    #[must_use]
    pub fn column(&self) -> usize {
        self.column
    }
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid {}: {}", self.format, self.reason)?;
        if self.line > 0 {
            write!(f, " at line {} column {}", self.line, self.column)?;
        }
        Ok(())
    }
}

/// At most `max` characters of `s`, debug-escaped, for echoing untrusted values in errors.
pub(crate) fn bounded(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// Messages this crate's own deserialisers produce. They hold no input, so a decode error may
/// repeat them.
const OWN_MESSAGES: &[&str] = &[
    "invalid type: string, expected an object",
    "invalid type: bytes, expected an object",
    "invalid type: boolean, expected an object",
    "invalid type: integer, expected an object",
    "invalid type: number, expected an object",
    "invalid type: null, expected an object",
    "invalid type: sequence, expected an object",
    "certificate-authority-data is not valid base64",
];

/// Field names of the wire types: a duplicate-field message may name one of these.
const FIELD_NAMES: &[&str] = &[
    "kind",
    "apiVersion",
    "spec",
    "status",
    "cluster",
    "interactive",
    "expirationTimestamp",
    "token",
    "clientCertificateData",
    "clientKeyData",
    "server",
    "tls-server-name",
    "insecure-skip-tls-verify",
    "certificate-authority-data",
    "proxy-url",
    "disable-compression",
    "config",
    "version",
    "key",
    "credential",
];

/// A JSON decode error reduced to its position and a category. serde's messages quote input
/// (`invalid type: integer `123`, expected a string`, string values in `invalid value`), so the
/// message is never kept: only this crate's own fixed messages and duplicate-field messages for
/// known field names are recognised, and rebuilt from static text.
pub(crate) fn sanitize_json_error(e: &serde_json::Error) -> DecodeError {
    use serde_json::error::Category;
    let reason = match e.classify() {
        Category::Io => "read error".to_owned(),
        Category::Syntax => "syntax error".to_owned(),
        Category::Eof => "unexpected end of input".to_owned(),
        Category::Data => {
            let text = e.to_string();
            let message = match text.rfind(" at line ") {
                Some(i) => text.get(..i).unwrap_or(""),
                None => text.as_str(),
            };
            if let Some(own) = OWN_MESSAGES.iter().find(|m| **m == message) {
                (*own).to_owned()
            } else if let Some(field) = message
                .strip_prefix("duplicate field `")
                .and_then(|rest| rest.strip_suffix('`'))
                .and_then(|name| FIELD_NAMES.iter().find(|f| **f == name))
            {
                format!("duplicate field `{field}`")
            } else {
                "wrong type or value".to_owned()
            }
        }
    };
    DecodeError {
        format: "JSON",
        line: e.line(),
        column: e.column(),
        reason,
    }
}
