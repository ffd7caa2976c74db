//! `k8s-bootstrap`: kubeadm's bootstrap-token commands (`token create|list|delete|generate`),
//! CA pins (`pin`) and the discovery half of `kubeadm join` (`join`), over the k8s-bootstrap
//! drivers. With the `loopback-server` feature, also `serve-loopback` (the API server double)
//! and `demo` (the whole flow against it).
//!
//! Exit codes: 0 on success, 1 on a runtime failure (one `error: …` line on stderr naming the
//! step), 2 on a usage error (clap's, or a flag, value or path refused before any work).

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
mod output;
mod pin;
mod progress;
#[cfg(any(
    feature = "controllers",
    feature = "sidecar",
    feature = "loopback-server"
))]
mod signals;
mod token_cmd;

use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::error::CliError;

#[tokio::main]
async fn main() -> ExitCode {
    let mut cli = Cli::try_parse().unwrap_or_else(|e| args::without_misleading_tip(e).exit());
    if let Err(e) = cli.hoist_cluster_args() {
        e.exit();
    }
    init_tracing(cli.verbose);
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string().replace(['\n', '\r'], " ");
            eprintln!("error: {message}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Token(token) => token_cmd::run(token.command).await,
        Command::Pin(args) => pin::run(&args),
        Command::Join(args) => join::run(&args).await,
        #[cfg(feature = "controllers")]
        Command::Controllers(args) => controllers_cmd::run(&args).await,
        #[cfg(feature = "sidecar")]
        Command::ForwardProxy(args) => forward_proxy::run(&args).await,
        #[cfg(feature = "loopback-server")]
        Command::ServeLoopback(args) => demo::serve(&args).await,
        #[cfg(feature = "loopback-server")]
        Command::Demo(args) => demo::run(&args).await,
        Command::Completion(args) => completion::completion(&args),
        Command::Manpage => completion::manpage(),
    }
}

/// Tracing to stderr: `RUST_LOG` when set, else off without `-v`, `info` with `-v`, `debug`
/// with `-vv`, `trace` beyond.
fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(s) if !s.is_empty() => EnvFilter::new(s),
        _ => EnvFilter::new(match verbose {
            0 => "off",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
