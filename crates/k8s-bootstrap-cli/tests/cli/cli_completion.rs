//! `completion` and `manpage` as a user meets them: each completion script is run in its shell
//! (bash always; zsh and fish when installed, else the test says it skipped them) and what it
//! completes is asserted, past the first word too; `manpage --dir` writes a page for every
//! page the pages name, and each page holds its command's flags.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code fails loudly, and a wall-clock deadline bounds the shells it runs"
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Whether `program` runs here.
fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` to its end, killing it (and failing) if it takes over a minute.
fn output_within_a_minute(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} ran over a minute: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Calls the function `complete -p` registers for k8s-bootstrap as bash's programmable
/// completion does (COMP_WORDS, COMP_CWORD, and the command, word and previous word as
/// arguments), and prints COMPREPLY one word a line.
const BASH_DRIVER: &str = r#"
source "$1" || exit 3
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
spec=$(complete -p k8s-bootstrap) || exit 4
fn=${spec#*-F }
fn=${fn%% *}
"$fn" k8s-bootstrap "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;

/// Starts an interactive zsh on a pseudo-terminal (zsh/zpty) with the completion function in
/// its fpath and compinit run, types the line and a Tab, and records every match the
/// completion system adds (compadd, wrapped) in `$2/matches`. Each wait is bounded (30 s).
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 3
dir=$1 out=$2 line=$3
wait_for() {
  local chunk i
  for i in {1..600}; do
    [[ -e $1 ]] && return 0
    zpty -rt z chunk || sleep 0.05
  done
  print -u2 "timed out waiting for $1"
  return 1
}
zpty z zsh -f -i
zpty -w z "bindkey -e; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D; compadd() { if (( \${argv[(I)-[OAD]]} )); then builtin compadd \"\$@\"; return; fi; local -a m; builtin compadd -A m \"\$@\"; print -rl -- \$m >> ${(q)out}/matches; builtin compadd \"\$@\"; }; : > ${(q)out}/ready"
wait_for $out/ready || exit 4
zpty -w -n z "$line"$'\t'
zpty -w -n z $'\x15'
zpty -w z ": > ${(q)out}/done"
wait_for $out/done || exit 5
zpty -d z
"#;

/// What `shell` offers to complete the last of `words` (after the script `completion <shell>`
/// prints is loaded), sorted; `None`, with a note, when the shell is not installed.
fn complete(shell: &str, words: &[&str]) -> Option<BTreeSet<String>> {
    if !installed(shell) {
        println!("skipped: {shell} is not installed, its completion is not run");
        return None;
    }
    let script = run(&["completion", shell]);
    assert!(script.status.success(), "{}", stderr(&script));
    let dir = tempfile::tempdir().unwrap();
    let line = words.join(" ");
    let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    let matches = match shell {
        "bash" => {
            let path = dir.path().join("k8s-bootstrap.bash");
            std::fs::write(&path, &script.stdout).unwrap();
            let mut cmd = Command::new("bash");
            cmd.args(["--norc", "--noprofile", "-c", BASH_DRIVER, "bash"])
                .arg(&path)
                .args(&words);
            stdout(&output_within_a_minute(cmd))
        }
        "zsh" => {
            let functions = dir.path().join("functions");
            let out = dir.path().join("out");
            std::fs::create_dir(&functions).unwrap();
            std::fs::create_dir(&out).unwrap();
            std::fs::write(functions.join("_k8s-bootstrap"), &script.stdout).unwrap();
            let mut cmd = Command::new("zsh");
            cmd.args(["-f", "-c", ZSH_DRIVER, "zsh"])
                .arg(&functions)
                .arg(&out)
                .arg(&line);
            output_within_a_minute(cmd);
            std::fs::read_to_string(out.join("matches")).unwrap_or_default()
        }
        "fish" => {
            let path = dir.path().join("k8s-bootstrap.fish");
            std::fs::write(&path, &script.stdout).unwrap();
            let mut cmd = Command::new("fish");
            cmd.args([
                "--no-config",
                "-c",
                "source $argv[1]; and complete -C $argv[2]",
            ])
            .arg(&path)
            .arg(&line);
            // `word<TAB>description` lines.
            stdout(&output_within_a_minute(cmd))
                .lines()
                .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => unreachable!("{shell}"),
    };
    Some(
        matches
            .lines()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

fn set(words: &[&str]) -> BTreeSet<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// `token cr<TAB>` completes to `create`, and a subcommand's own flags complete after it
/// (`join --discovery-t<TAB>`, a hyphenated subcommand's values): the bash script of
/// clap_complete 4.6.11 completed only the first word for a hyphenated binary name.
#[test]
fn completion_completes_subcommands_and_their_flags_in_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let Some(token) = complete(shell, &["k8s-bootstrap", "token", "cr"]) else {
            continue;
        };
        assert_eq!(token, set(&["create"]), "{shell}: token cr<TAB>");

        let join = complete(shell, &["k8s-bootstrap", "join", "--discovery-t"]).unwrap();
        assert_eq!(
            join,
            set(&[
                "--discovery-timeout",
                "--discovery-token",
                "--discovery-token-ca-cert-hash",
                "--discovery-token-unsafe-skip-ca-verification",
            ]),
            "{shell}: join --discovery-t<TAB>"
        );

        let create = complete(shell, &["k8s-bootstrap", "token", "create", "--t"]).unwrap();
        assert_eq!(create, set(&["--ttl"]), "{shell}: token create --t<TAB>");

        if cfg!(feature = "sidecar") {
            let values = complete(
                shell,
                &["k8s-bootstrap", "forward-proxy", "--key-reload-failure", ""],
            )
            .unwrap();
            assert_eq!(
                values,
                set(&["fail-closed", "keep"]),
                "{shell}: forward-proxy --key-reload-failure <TAB>"
            );
        }
    }
}

/// The pages a roff page names as `k8s-bootstrap-...(1)` in its SUBCOMMANDS section.
fn pages_named(roff: &str) -> BTreeSet<String> {
    let text = roff.replace("\\-", "-");
    let mut named = BTreeSet::new();
    for (i, _) in text.match_indices("(1)") {
        let before = &text[..i];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(0, |p| p + 1);
        let name = &before[start..];
        if name.starts_with("k8s-bootstrap") {
            named.insert(format!("{name}.1"));
        }
    }
    named
}

/// The long flags (`--name`) a `--help` lists.
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            let at = l.find("--")?;
            let flag: String = l[at..]
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_alphanumeric())
                .collect();
            Some(flag)
        })
        .collect()
}

/// `manpage --dir` writes the top-level page and one per subcommand, exactly the pages their
/// SUBCOMMANDS sections name (the page named `k8s-bootstrap-join(1)` was never written), and
/// each page holds every flag its command's `--help` lists; `manpage join` prints the same
/// page; every page formats without a groff warning.
#[test]
fn manpage_dir_writes_every_page_the_pages_name_each_with_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = run(&["manpage", "--dir", man.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    let written: BTreeSet<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    // Each path written is printed.
    let printed: BTreeSet<String> = stdout(&out)
        .lines()
        .map(|l| {
            let p = Path::new(l);
            assert_eq!(p.parent(), Some(man.as_path()), "{l}");
            p.file_name().unwrap().to_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(printed, written);

    let mut named = BTreeSet::from(["k8s-bootstrap.1".to_owned()]);
    for page in &written {
        named.extend(pages_named(
            &std::fs::read_to_string(man.join(page)).unwrap(),
        ));
    }
    assert_eq!(written, named, "pages written and pages named differ");
    for page in ["k8s-bootstrap-join.1", "k8s-bootstrap-token-create.1"] {
        assert!(written.contains(page), "{page} missing: {written:?}");
    }

    for page in &written {
        let roff = std::fs::read_to_string(man.join(page)).unwrap();
        // k8s-bootstrap-token-create.1 -> ["token", "create"]
        let name = page.strip_suffix(".1").unwrap();
        let words: Vec<&str> = match name.strip_prefix("k8s-bootstrap-") {
            Some(rest) => {
                let mut words = Vec::new();
                let mut cmd = rest;
                // Subcommand names may hold a hyphen (forward-proxy): match the longest the
                // help of the level above lists.
                while !cmd.is_empty() {
                    let (word, tail) = split_subcommand(&words, cmd);
                    words.push(word);
                    cmd = tail;
                }
                words
            }
            None => Vec::new(),
        };
        let mut args = words.clone();
        args.push("--help");
        let help = run(&args);
        assert!(help.status.success(), "{args:?}: {}", stderr(&help));
        let flags = flags_in_help(&stdout(&help));
        let text = roff.replace("\\-", "-");
        for flag in &flags {
            assert!(text.contains(flag.as_str()), "{page} lacks {flag}");
        }
        if words == ["join"] {
            assert!(
                flags.contains("--discovery-token-ca-cert-hash"),
                "{flags:?}"
            );
        }
        // `manpage <command>` prints the same page.
        let mut args = vec!["manpage"];
        args.extend(&words);
        let printed = run(&args);
        assert!(printed.status.success(), "{args:?}: {}", stderr(&printed));
        assert_eq!(stdout(&printed), roff, "{args:?}");
        if installed("groff") {
            let mut cmd = Command::new("groff");
            // -ww: every warning; -z: format, print nothing.
            cmd.args(["-man", "-Tutf8", "-ww", "-z"])
                .arg(man.join(page));
            let out = output_within_a_minute(cmd);
            assert!(out.stderr.is_empty(), "{page}: {}", stderr(&out));
        }
    }
    if !installed("groff") {
        println!("skipped: groff is not installed, the pages are not formatted");
    }
}

/// The next subcommand word at the head of `rest` (a page name's tail, `token-create`) under
/// the command `words`: the longest name its `--help` lists that `rest` starts with.
fn split_subcommand<'a>(words: &[&str], rest: &'a str) -> (&'a str, &'a str) {
    let mut args = words.to_vec();
    args.push("--help");
    let help = stdout(&run(&args));
    let best = help
        .lines()
        .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
        .filter(|name| {
            rest == *name
                || rest
                    .strip_prefix(name)
                    .is_some_and(|tail| tail.starts_with('-'))
        })
        .max_by_key(|name| name.len())
        .unwrap_or_else(|| panic!("no subcommand of {words:?} starts {rest}:\n{help}"));
    let (word, tail) = rest.split_at(best.len());
    (word, tail.strip_prefix('-').unwrap_or(tail))
}

/// A page already in --dir is refused before any page is written, naming the flag and the
/// path, and kept as it was; --force replaces it. An unknown command is a usage error.
#[test]
fn manpage_dir_refuses_an_existing_page_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("k8s-bootstrap-join.1");
    std::fs::write(&mine, "mine\n").unwrap();
    let out = run(&["manpage", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--dir")
            && err.contains(&mine.display().to_string())
            && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "a page was written"
    );

    let out = run(&["manpage", "--dir", dir.path().to_str().unwrap(), "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        stdout(&run(&["manpage", "join"]))
    );

    let out = run(&["manpage", "token", "crate"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("'token crate'") && err.contains("create"),
        "{err}"
    );
}
