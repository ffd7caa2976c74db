//! Replays every checked-in seed (`fuzz/corpus/<target>/*`) through the target's check, the
//! very function its cargo-fuzz binary calls, so a plain `cargo test` covers the corpora with the
//! fuzzer's assertions. Each corpus must hold a minimum of files and of accepted inputs, so a
//! replay cannot pass vacuously; and every corpus and fuzz target must have a check.

// Helpers outside `#[test]` functions fail the test on broken fixtures.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::fs;
use std::panic;
use std::path::{Path, PathBuf};

use k8s_bootstrap_fuzz_checks::{self as checks, Outcome};

/// One `#[test]` per target, replaying its corpus; `TARGETS` lists them all.
macro_rules! replay {
    ($($target:ident: $files:literal files, $accepted:literal accepted;)*) => {
        $(
            #[test]
            fn $target() {
                replay(stringify!($target), checks::$target, $files, $accepted);
            }
        )*

        /// Every target that has a check.
        const TARGETS: &[&str] = &[$(stringify!($target)),*];
    };
}

replay! {
    jws_detached_verify: 10 files, 1 accepted;
    jws_detached_verify_kubernetes: 10 files, 1 accepted;
    jws_detached_verify_header_json: 10 files, 1 accepted;
    bootstrap_token_parse: 1 files, 1 accepted;
    bootstrap_token_expiration: 1 files, 1 accepted;
    bootstrap_token_groups: 1 files, 1 accepted;
    bootstrap_token_secret_json: 1 files, 11 accepted;
    bootstrap_token_secret_yaml: 1 files, 11 accepted;
    bootstrap_token_authenticate: 1 files, 1 accepted;
    bootstrap_token_kubeadm_json: 1 files, 6 accepted;
    clusterinfo_kubeconfig: 1 files, 5 accepted;
    clusterinfo_configmap: 1 files, 3 accepted;
    clusterinfo_pin: 1 files, 1 accepted;
    clusterinfo_ca_bundle: 1 files, 3 accepted;
    clusterinfo_discovery: 1 files, 1 accepted;
    exec_credential_plugin_output: 1 files, 5 accepted;
    exec_credential_exec_info: 1 files, 4 accepted;
    exec_credential_cache_entry: 1 files, 1 accepted;
    exec_credential_authenticator: 1 files, 1 accepted;
    addon_jwt_verify: 1 files, 1 accepted;
    addon_jwt_jwks: 1 files, 1 accepted;
    addon_jwt_pem: 1 files, 1 accepted;
    addon_jwt_sidecar: 1 files, 1 accepted;
    addon_jwt_add_auth: 7 files, 3 accepted;
    addon_jwt_http1_response: 10 files, 6 accepted;
    addon_jwt_http1_differential: 12 files, 6 accepted;
    tls_bootstrap_request: 4 files, 2 accepted;
    tls_bootstrap_csr_json: 3 files, 2 accepted;
    tls_bootstrap_csr_yaml: 3 files, 2 accepted;
    tls_bootstrap_certificate: 4 files, 2 accepted;
    delegated_auth_token_review: 6 files, 2 accepted;
    delegated_auth_bearer_header: 9 files, 4 accepted;
    delegated_auth_access_review: 5 files, 1 accepted;
    delegated_auth_oidc_discovery: 3 files, 1 accepted;
    delegated_auth_configmap: 3 files, 2 accepted;
    delegated_auth_request_info: 8 files, 5 accepted;
    delegated_auth_rbac_objects: 5 files, 3 accepted;
    delegated_auth_proxy_config: 5 files, 3 accepted;
}

#[test]
fn every_corpus_and_fuzz_target_has_a_check() {
    let corpora = names(&fuzz_dir().join("corpus"), |p| {
        p.is_dir().then(|| file_name(p))
    });
    let targets = names(&fuzz_dir().join("fuzz_targets"), |p| {
        let stem = file_name(p).strip_suffix(".rs")?.to_owned();
        p.is_file().then_some(stem)
    });
    for name in corpora.iter().chain(&targets) {
        assert!(
            TARGETS.contains(&name.as_str()),
            "{name}: a corpus or fuzz target without a check in fuzz/checks"
        );
    }
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for target in TARGETS {
        assert!(corpora.iter().any(|c| c == target), "{target}: no corpus");
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "{target}: no [[bin]] in fuzz/Cargo.toml"
        );
        let source = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        let source =
            fs::read_to_string(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            source.contains(&format!("k8s_bootstrap_fuzz_checks::{target}(data)")),
            "{target}: the fuzz target does not call its check"
        );
    }
}

/// Runs every file of `fuzz/corpus/<target>/` through `check`.
fn replay(target: &str, check: fn(&[u8]) -> Outcome, min_files: usize, min_accepted: usize) {
    let dir = fuzz_dir().join("corpus").join(target);
    let files = names(&dir, |p| p.is_file().then(|| file_name(p)));
    assert!(
        files.len() >= min_files,
        "corpus {target} has {} files, expected at least {min_files}",
        files.len()
    );
    let mut accepted = 0usize;
    for name in &files {
        let data = fs::read(dir.join(name)).unwrap();
        let outcome = panic::catch_unwind(|| check(&data))
            .unwrap_or_else(|_| panic!("{target}/{name}: a property failed (above)"));
        if outcome == Outcome::Accepted {
            accepted = accepted.saturating_add(1);
        }
    }
    assert!(
        accepted >= min_accepted,
        "corpus {target}: {accepted} of {} inputs accepted, expected at least {min_accepted}",
        files.len()
    );
}

/// `fuzz/`, the cargo-fuzz package.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sorted names `select` picks from the entries of `dir`.
fn names(dir: &Path, select: impl Fn(&Path) -> Option<String>) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| select(&e.unwrap().path()))
        .collect();
    out.sort();
    out
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}
