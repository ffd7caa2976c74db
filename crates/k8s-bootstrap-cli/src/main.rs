//! `k8s-bootstrap`: kubeadm's bootstrap-token commands (`token create|list|delete|generate`),
//! CA pins (`pin`) and the discovery half of `kubeadm join` (`join`), over the k8s-bootstrap
//! drivers. With the `loopback-server` feature, also `serve-loopback` (the API server double)
//! and `demo` (the whole flow against it).
//!
//! Exit codes: 0 on success, 1 on a runtime failure (one `error: …` line on stderr naming the
//! step; with `--log-format json`, a JSON log line whose message it is), 2 on a usage error
//! (clap's, or a flag, value or path refused before any work).

mod args;
mod completion;
#[cfg(feature = "controllers")]
mod controllers_cmd;
#[cfg(feature = "loopback-server")]
mod demo;
mod error;
#[cfg(feature = "sidecar")]
mod forward_proxy;
mod join;
mod kubeconfig;
mod node_certificates_cmd;
mod output;
mod pin;
mod progress;
mod signals;
mod token_cmd;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command, LogFormat};
use crate::error::CliError;

#[tokio::main]
async fn main() -> ExitCode {
    let mut cli = Cli::try_parse().unwrap_or_else(|e| args::without_misleading_tip(e).exit());
    if let Err(e) = cli.hoist_cluster_args() {
        e.exit();
    }
    init_tracing(
        &log_filter(cli.verbose, cli.command.is_service()),
        cli.log_format,
    );
    let format = cli.log_format;
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string().replace(['\n', '\r'], " ");
            match format {
                LogFormat::Text => eprintln!("error: {message}"),
                // A log collector reading JSON lines gets the reason the service stopped as
                // one more of them.
                LogFormat::Json => eprintln!("{}", json_error(&message)),
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// The failure as a JSON log line, shaped as the subscriber's (timestamp, level, fields,
/// target), whatever the filter.
fn json_error(message: &str) -> String {
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::{FormatTime as _, SystemTime};
    let mut timestamp = String::new();
    let _ = SystemTime.format_time(&mut Writer::new(&mut timestamp));
    serde_json::json!({
        "timestamp": timestamp,
        "level": "ERROR",
        "fields": { "message": format!("error: {message}") },
        "target": "k8s_bootstrap",
    })
    .to_string()
}

async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Token(token) => token_cmd::run(token.command).await,
        Command::Pin(args) => pin::run(&args),
        Command::Join(args) => join::run(&args).await,
        Command::NodeCertificates(args) => node_certificates_cmd::run(&args).await,
        #[cfg(feature = "controllers")]
        Command::Controllers(args) => controllers_cmd::run(&args).await,
        #[cfg(feature = "sidecar")]
        Command::ForwardProxy(args) => forward_proxy::run(&args).await,
        #[cfg(feature = "loopback-server")]
        Command::ServeLoopback(args) => demo::serve(&args).await,
        #[cfg(feature = "loopback-server")]
        Command::Demo(args) => demo::run(&args).await,
        Command::Completion(args) => completion::completion(&args),
        Command::Manpage(args) => completion::manpage(&args),
    }
}

/// The default filter of a service (`controllers`, `forward-proxy`, `serve-loopback`) without
/// `-v`: its own events at info (addresses, configuration, leadership, actions, shutdown), and
/// the warnings and errors of the crates under it (kube's watch failures, hyper's).
const SERVICE_FILTER: &str = "warn,k8s_bootstrap=info,loopback_apiserver=info";

/// The log filter: `RUST_LOG` when set (it overrides `-v` too), else by `-v` (`info`, `debug`
/// with `-vv`, `trace` beyond, for every crate); without either, [`SERVICE_FILTER`] for a
/// service and nothing for the other commands, which say what they do on stdout and stderr
/// themselves.
fn log_filter(verbose: u8, service: bool) -> String {
    match std::env::var("RUST_LOG") {
        Ok(s) if !s.is_empty() => s,
        _ => match verbose {
            0 if service => SERVICE_FILTER,
            0 => "off",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }
        .to_owned(),
    }
}

/// Tracing to stderr through `filter`: text (colored on a terminal, unless `NO_COLOR` is set)
/// or one JSON object per line.
fn init_tracing(filter: &str, format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(filter))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => {
            let color = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            builder.with_ansi(color).try_init()
        }
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}
