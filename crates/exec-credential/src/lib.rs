#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod api_version;
mod authenticator;
mod cache;
mod cluster;
mod credential;
mod error;
mod exec_config;
mod hint;
mod issued;
mod keypair;
mod policy;
mod rfc3339;
mod run;
mod secret;
mod stderr;
mod wire;

pub use api_version::{ApiVersion, GROUP, KIND};
pub use authenticator::{
    Action, CredentialState, DEFAULT_FAILURE_BACKOFF, DEFAULT_FAILURE_BACKOFF_MAX,
    DEFAULT_INTERACTIVE_TIMEOUT, DEFAULT_STALE_CREDENTIAL_REUSE, DEFAULT_TIMEOUT,
    ExecAuthenticator, INSTALL_HINT_PER_HOUR,
};
pub use cache::{CacheEntry, CacheKey, CacheKeyBuilder};
pub use cluster::{CLUSTER_EXTENSION_KEY, Cluster};
pub use credential::{
    ExecCredential, ExecCredentialSpec, ExecCredentialStatus, MAX_EXEC_INFO_BYTES,
    MAX_PLUGIN_OUTPUT_BYTES,
};
pub use error::{DecodeError, Error};
pub use exec_config::{ExecConfig, ExecEnvVar, InteractiveMode};
pub use hint::{NOT_FOUND_HELP, sanitize_install_hint};
pub use issued::{ClientIdentity, Credential, CredentialId};
pub use policy::{MAX_KUBERC_BYTES, PluginPolicy};
pub use run::{PluginRun, RunId, RunResult, Stdin, StdinMode};
pub use secret::{ClientKey, Token};
pub use stderr::{MAX_STDERR_LINE, STDERR_SUMMARY_BYTES, StderrLines, StderrSummary};
