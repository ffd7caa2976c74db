//! Records the git commit the binary is built from, for `k8s-bootstrap --version`: the
//! `K8S_BOOTSTRAP_GIT_COMMIT` environment variable when set (an image built from a tarball),
//! else `git rev-parse` when this crate's manifest is tracked by the repository around it (a
//! clone), else none (an unpacked `.crate`).

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=K8S_BOOTSTRAP_GIT_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let dir = Path::new(&dir);
    let commit = match std::env::var("K8S_BOOTSTRAP_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => Some(c.trim().to_owned()),
        _ if git(dir, &["ls-files", "--error-unmatch", "Cargo.toml"]).is_some() => {
            // Rebuild when HEAD moves: HEAD itself, the branch it names, and packed refs.
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(dir, &["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={}", dir.join(p).display());
                }
            }
            if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"])
                && let Some(p) = git(dir, &["rev-parse", "--git-path", &branch])
            {
                println!("cargo:rerun-if-changed={}", dir.join(p).display());
            }
            git(dir, &["rev-parse", "--short=12", "HEAD"])
        }
        _ => None,
    };
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let full = match commit {
        Some(c) => format!("{version} (commit {c})"),
        None => version,
    };
    println!("cargo:rustc-env=K8S_BOOTSTRAP_VERSION={full}");
}
