//! An ExecCredential plugin built on `exec-credential`, for kubectl and for `exec-client`.
//!
//! It answers the version the client asked for in `KUBERNETES_EXEC_INFO`, with a bearer token
//! or a client certificate, configured through environment variables (set them in the
//! kubeconfig `exec.env`):
//!
//! * `EXEC_PLUGIN_MODE`: `token` (default) or `cert`;
//! * `EXEC_PLUGIN_TOKEN_PREFIX`: the token is `<prefix>-<n>`, `n` counting this plugin's runs
//!   (default prefix `exec-token`);
//! * `EXEC_PLUGIN_CERT_FILE`, `EXEC_PLUGIN_KEY_FILE`: the PEM pair for `cert` mode;
//! * `EXEC_PLUGIN_EXPIRES_IN`: lifetime in seconds (no expiry when unset);
//! * `EXEC_PLUGIN_RECORD`: a file to which every run appends the `KUBERNETES_EXEC_INFO` it got;
//! * `EXEC_PLUGIN_CACHE_DIR`: an opt-in on-disk credential cache (0600 files, atomic rename),
//!   keyed over every identity input.

use std::io::Write as _;
use std::time::{Duration, SystemTime};

use exec_credential::{
    CacheEntry, CacheKey, ClientKey, ExecCredential, ExecCredentialStatus, Token,
};

type BoxError = Box<dyn std::error::Error>;

fn main() {
    if let Err(e) = run() {
        eprintln!("exec-plugin: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), BoxError> {
    let exec_info = std::env::var("KUBERNETES_EXEC_INFO").ok();
    // The time of the answer; a plugin is an application and may read the clock.
    #[allow(clippy::disallowed_methods)]
    let now = SystemTime::now();

    let runs = match std::env::var_os("EXEC_PLUGIN_RECORD") {
        Some(path) => record(&path, exec_info.as_deref().unwrap_or("<unset>\n"))?,
        None => 1,
    };

    let request =
        ExecCredential::from_exec_info_or(exec_info.as_deref(), exec_credential::ApiVersion::V1)?;
    if request.may_prompt() {
        eprintln!("exec-plugin: stdin is available, but no prompt is needed");
    }

    let mode = std::env::var("EXEC_PLUGIN_MODE").unwrap_or_else(|_| "token".to_owned());
    let prefix =
        std::env::var("EXEC_PLUGIN_TOKEN_PREFIX").unwrap_or_else(|_| "exec-token".to_owned());
    let cache = std::env::var_os("EXEC_PLUGIN_CACHE_DIR").map(std::path::PathBuf::from);
    let key = CacheKey::for_request(
        &request,
        &std::env::args().skip(1).collect::<Vec<_>>(),
        &[("mode", mode.as_str()), ("prefix", prefix.as_str())],
    );
    if let Some(dir) = &cache {
        let path = dir.join(format!("{}.json", key.to_hex()));
        if let Ok(bytes) = std::fs::read(&path)
            && let Ok(entry) = CacheEntry::from_json(&bytes, &key)
            && let Some(cached) = entry.fresh_response(now, Duration::from_secs(10))
        {
            print!("{}", cached.to_stdout());
            return Ok(());
        }
    }

    let mut status = match mode.as_str() {
        "token" => ExecCredentialStatus::with_token(Token::new(format!("{prefix}-{runs}"))),
        "cert" => {
            let cert = std::fs::read_to_string(env("EXEC_PLUGIN_CERT_FILE")?)?;
            let key = std::fs::read_to_string(env("EXEC_PLUGIN_KEY_FILE")?)?;
            ExecCredentialStatus::with_client_certificate(cert, ClientKey::new(key))
        }
        other => return Err(format!("unknown EXEC_PLUGIN_MODE {other:?}").into()),
    };
    if let Ok(secs) = std::env::var("EXEC_PLUGIN_EXPIRES_IN") {
        let at = now
            .checked_add(Duration::from_secs(secs.parse()?))
            .ok_or("expiry out of range")?;
        status = status.expires_at(at);
    }
    let response = request.respond(status);
    if let Some(dir) = &cache {
        store(dir, &key, &response)?;
    }
    print!("{}", response.to_stdout());
    Ok(())
}

fn env(name: &str) -> Result<String, BoxError> {
    std::env::var(name).map_err(|_| format!("{name} is not set").into())
}

/// Appends the exec info to the record file and returns how many runs it now holds.
fn record(path: &std::ffi::OsStr, exec_info: &str) -> Result<usize, BoxError> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(exec_info.as_bytes())?;
    if !exec_info.ends_with('\n') {
        f.write_all(b"\n")?;
    }
    drop(f);
    Ok(std::fs::read_to_string(path)?.lines().count())
}

/// Writes a cache entry readable only by the owner, atomically.
fn store(dir: &std::path::Path, key: &CacheKey, response: &ExecCredential) -> Result<(), BoxError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::create_dir_all(dir)?;
    let final_path = dir.join(format!("{}.json", key.to_hex()));
    let tmp = dir.join(format!(".{}.{}.tmp", key.to_hex(), std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(CacheEntry::new(*key, response.clone()).to_json().as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, &final_path)?;
    Ok(())
}
