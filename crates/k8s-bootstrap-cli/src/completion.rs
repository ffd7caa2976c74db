//! `k8s-bootstrap completion <shell>` and `k8s-bootstrap manpage`: shell completions and a man
//! page generated from the command line's own definition (clap_complete, clap_mangen), so they
//! never disagree with `--help`.

use std::io::Write as _;

use clap::CommandFactory as _;

use crate::args::{Cli, CompletionArgs};
use crate::error::CliError;

/// The binary's name, as completions register it.
const NAME: &str = "k8s-bootstrap";

/// Prints the completion script for the shell.
pub(crate) fn completion(args: &CompletionArgs) -> Result<(), CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), NAME, &mut out);
    write_stdout(&out)
}

/// Prints the man page (roff, section 1).
pub(crate) fn manpage() -> Result<(), CliError> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(CliError::Stdout)?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
}
