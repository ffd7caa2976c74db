//! `k8s-bootstrap completion <shell>` and `k8s-bootstrap manpage`: shell completions and man
//! pages generated from the command line's own definition (clap_complete, clap_mangen), so they
//! never disagree with `--help`.

use std::io::Write as _;
use std::path::Path;

use clap::CommandFactory as _;

use crate::args::{Cli, CompletionArgs, ManpageArgs};
use crate::error::CliError;

/// The binary's name, as completions register it.
const NAME: &str = "k8s-bootstrap";

/// Prints the completion script for the shell.
pub(crate) fn completion(args: &CompletionArgs) -> Result<(), CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), NAME, &mut out);
    if args.shell == clap_complete::Shell::Bash {
        out = bash_case_labels(&String::from_utf8_lossy(&out)).into_bytes();
    }
    write_stdout(&out)
}

/// The bash script's `case` labels spelled as its dispatch loop spells the state it sets.
///
/// clap_complete (4.6.11, the newest release) escapes a hyphenated binary name's `-` as `__`
/// where the loop sets the state (`k8s__bootstrap__subcmd__join`) but as `__subcmd__` in the
/// labels that state is matched against (`k8s__subcmd__bootstrap__subcmd__join`), so no label
/// matches and nothing past the first word completes. A release that spells both alike leaves
/// nothing here to replace.
fn bash_case_labels(script: &str) -> String {
    const SEP: &str = "__subcmd__";
    let wrong = format!("{}{SEP}", NAME.replace('-', SEP));
    let right = format!("{}{SEP}", NAME.replace('-', "__"));
    script.replace(&wrong, &right)
}

/// Prints the page of the command named (the top-level page when none is), or writes every
/// command's page into `--dir`.
pub(crate) fn manpage(args: &ManpageArgs) -> Result<(), CliError> {
    let root = command_for_pages();
    if let Some(dir) = &args.dir {
        return write_pages(&root, dir, args.force);
    }
    let mut cmd = &root;
    for (i, name) in args.command.iter().enumerate() {
        let Some(sub) = cmd.find_subcommand(name) else {
            let typed = args.command.get(..=i).unwrap_or_default().join(" ");
            let known: Vec<&str> = cmd.get_subcommands().map(clap::Command::get_name).collect();
            let mut manpage = root.find_subcommand("manpage").unwrap_or(&root).clone();
            manpage
                .error(
                    clap::error::ErrorKind::InvalidSubcommand,
                    format!(
                        "manpage: no command '{typed}' (commands here: {})",
                        known.join(", ")
                    ),
                )
                .exit();
        };
        cmd = sub;
    }
    let mut out = Vec::new();
    page(cmd).render(&mut out).map_err(CliError::Stdout)?;
    write_stdout(&out)
}

/// The command line as the pages show it: built (so each subcommand knows its full name), and
/// without clap's `help` subcommand at any level, which has no page of its own.
fn command_for_pages() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut cmd = without_help(Cli::command());
    cmd.build();
    cmd
}

fn page(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone())
}

/// Writes the page of `root` and of every subcommand under it into `dir` (the ones each
/// SUBCOMMANDS section names), printing each path written. Without `force`, a page already
/// there is refused before any is written.
fn write_pages(root: &clap::Command, dir: &Path, force: bool) -> Result<(), CliError> {
    let dir_error = |path: &Path, source| CliError::ManpageDir {
        path: path.to_owned(),
        source,
    };
    let mut pages = Vec::new();
    let mut pending = vec![root];
    while let Some(cmd) = pending.pop() {
        pending.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()));
        let man = page(cmd);
        let mut roff = Vec::new();
        man.render(&mut roff).map_err(CliError::Stdout)?;
        pages.push((dir.join(man.get_filename()), roff));
    }
    pages.sort();
    if !force && let Some((path, _)) = pages.iter().find(|(p, _)| p.symlink_metadata().is_ok()) {
        return Err(CliError::ManpageExists { path: path.clone() });
    }
    std::fs::create_dir_all(dir).map_err(|e| dir_error(dir, e))?;
    for (path, roff) in pages {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(!force)
            .create(force)
            .truncate(force)
            .open(&path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(CliError::ManpageExists { path });
            }
            Err(e) => return Err(dir_error(&path, e)),
        };
        file.write_all(&roff)
            .and_then(|()| file.flush())
            .map_err(|e| dir_error(&path, e))?;
        write_stdout(format!("{}\n", path.display()).as_bytes())?;
    }
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
}
