//! Checks for the `exec_credential_*` targets.

use std::time::{Duration, SystemTime};

use exec_credential::{
    Action, ApiVersion, CacheEntry, CacheKey, Cluster, Credential, CredentialId, CredentialState,
    DEFAULT_STALE_CREDENTIAL_REUSE, Error, ExecAuthenticator, ExecConfig, ExecCredential,
    InteractiveMode, RunResult,
};

use crate::fixtures::exec_credential_now;
use crate::outcome::Outcome;

/// Plugin stdout (the whole input) through the client's decoder and client-go's output rules.
///
/// Whatever decodes re-encodes, and the encoding is a fixed point; a credential taken from it
/// carries a token or a client identity (it may have expired already: client-go uses such a
/// credential). Accepted: the output decodes and
/// yields a credential under at least one configured API version.
pub fn exec_credential_plugin_output(data: &[u8]) -> Outcome {
    let Ok(cred) = ExecCredential::from_plugin_output(data) else {
        return Outcome::Rejected;
    };
    let json = cred.to_json();
    // Like Go's `metav1.Time`, an expiry whose UTC year leaves 0000..=9999 (reachable through a
    // zone offset) is written with a year Go's parser refuses; everything else must decode.
    let again = match ExecCredential::from_plugin_output(json.as_bytes()) {
        Ok(again) => again,
        Err(Error::InvalidExpiration { .. }) => return Outcome::Rejected,
        Err(e) => panic!("re-encoded output does not decode: {e}"),
    };
    assert_eq!(again.to_json(), json);
    assert_eq!(again.api_version(), cred.api_version());
    let now = exec_credential_now();
    let mut accepted = false;
    for configured in [ApiVersion::V1, ApiVersion::V1Beta1] {
        if let Ok(c) = cred.clone().into_credential(configured, now) {
            assert!(c.token().is_some() || c.client_identity().is_some());
            accepted = true;
        }
    }
    Outcome::accepted_if(accepted)
}

/// `KUBERNETES_EXEC_INFO` (the whole input as text) as a plugin reads it.
///
/// What decodes re-encodes with a trailing newline, to a fixed point that keeps the
/// interactive flag and the cluster. Accepted: the input decodes.
pub fn exec_credential_exec_info(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let Ok(request) = ExecCredential::from_exec_info(text) else {
        return Outcome::Rejected;
    };
    let info = request.to_exec_info();
    assert!(info.ends_with('\n'));
    let again = ExecCredential::from_exec_info(&info).expect("re-encoded exec info decodes");
    assert_eq!(again.to_exec_info(), info);
    assert_eq!(again.may_prompt(), request.may_prompt());
    assert_eq!(again.cluster(), request.cluster());
    Outcome::Accepted
}

/// An on-disk credential cache entry (the whole input), as a plugin reads it back.
///
/// What decodes re-encodes to a fixed point, unless its expiry lies beyond year 9999 UTC (see
/// [`exec_credential_plugin_output`]). Accepted: the input decodes and re-decodes.
pub fn exec_credential_cache_entry(data: &[u8]) -> Outcome {
    let key = CacheKey::builder().part("user", b"fuzz").finish();
    let Ok(entry) = CacheEntry::from_json(data, &key) else {
        return Outcome::Rejected;
    };
    let json = entry.to_json();
    // See exec_credential_plugin_output: expiries beyond year 9999 UTC do not re-decode.
    let Ok(again) = CacheEntry::from_json(json.as_bytes(), &key) else {
        return Outcome::Rejected;
    };
    assert_eq!(again.to_json(), json);
    Outcome::Accepted
}

/// The client state machine fed arbitrary plugin results, 401s and clock movements.
///
/// Input: a configuration byte (API version, interactive mode, whether to provide cluster
/// info), then up to 64 operations, each a byte selecting: ask for a credential, collect
/// actions, report an exited run (exit code, a little-endian `u16` stdout length, stdout, a
/// stderr length byte, stderr), report a failed run, report a 401, move the clock (a
/// little-endian `u16`), or look at the cache. Whatever the sequence, the state machine never
/// panics, never serves a credential from its cache that is expired at `now` (except one that
/// had expired when it arrived, within [`DEFAULT_STALE_CREDENTIAL_REUSE`] after its arrival),
/// keeps at most one run per collection in flight, and refuses results for runs it did not
/// schedule or already heard of. Accepted: a plugin run produced a credential.
pub fn exec_credential_authenticator(input: &[u8]) -> Outcome {
    let mut data = input;
    let config_byte = byte(&mut data);
    let version = if config_byte & 1 == 0 {
        ApiVersion::V1
    } else {
        ApiVersion::V1Beta1
    };
    let mode = match (config_byte >> 1) % 3 {
        0 => InteractiveMode::Never,
        1 => InteractiveMode::IfAvailable,
        _ => InteractiveMode::Always,
    };
    let config =
        ExecConfig::new("plugin", version, mode).provide_cluster_info(config_byte & 8 != 0);
    let Ok(mut auth) = ExecAuthenticator::new(config, Cluster::new("https://127.0.0.1:6443"))
    else {
        return Outcome::Rejected;
    };
    let mut now = exec_credential_now();
    let mut runs = Vec::new();
    let mut accepted = false;
    // The credential that arrived expired, and when.
    let mut stale: Option<(CredentialId, SystemTime)> = None;

    for _ in 0..64 {
        if data.is_empty() {
            break;
        }
        match byte(&mut data) % 7 {
            0 => {
                if let Ok(CredentialState::Ready(cred)) = auth.credential(now) {
                    assert_servable(cred, now, stale);
                }
            }
            1 => {
                while let Some(action) = auth.poll_action() {
                    if let Action::RunPlugin(run) = action {
                        runs.push(run.id());
                    }
                }
                assert!(runs.len() <= 64);
            }
            2 => {
                // A plugin that exited: code, stdout and stderr from the input.
                let code = i32::from(byte(&mut data) % 3);
                let len = usize::from(u16::from_le_bytes([byte(&mut data), byte(&mut data)]));
                let stdout = take(&mut data, len);
                let stderr_len = usize::from(byte(&mut data));
                let stderr = take(&mut data, stderr_len);
                if let Some(run) = runs.pop() {
                    if let Ok(cred) = auth.handle_run_result(
                        now,
                        run,
                        RunResult::Exited {
                            code,
                            stdout,
                            stderr,
                        },
                    ) {
                        // An expired credential is handed to the run's callers, and served
                        // from the cache for a bounded time only (checked by the other steps).
                        stale = cred.is_expired(now).then(|| (cred.id(), now));
                        accepted = true;
                    }
                    // The same run cannot be reported twice.
                    assert!(matches!(
                        auth.handle_run_result(now, run, RunResult::NotFound),
                        Err(Error::UnknownRun)
                    ));
                }
            }
            3 => {
                let result = match byte(&mut data) % 5 {
                    0 => RunResult::NotFound,
                    1 => RunResult::TimedOut,
                    2 => RunResult::StdoutLimitExceeded,
                    3 => RunResult::Signaled {
                        signal: 9,
                        stderr: b"killed",
                    },
                    _ => RunResult::SpawnFailed {
                        message: "permission denied",
                    },
                };
                if let Some(run) = runs.pop() {
                    assert!(auth.handle_run_result(now, run, result).is_err());
                }
            }
            4 => {
                if let Some(id) = auth.cached(now).map(|c| c.id()) {
                    let _ = auth.handle_unauthorized(now, id);
                }
            }
            5 => {
                // The clock moves forward by up to ~18 hours, or backwards by up to ~4 minutes.
                let step = u64::from(u16::from_le_bytes([byte(&mut data), byte(&mut data)]));
                now = if step % 5 == 0 {
                    now.checked_sub(Duration::from_secs(step % 256))
                        .unwrap_or(now)
                } else {
                    now.checked_add(Duration::from_secs(step)).unwrap_or(now)
                };
            }
            _ => {
                if let Some(cred) = auth.cached(now) {
                    assert_servable(cred, now, stale);
                }
            }
        }
    }
    Outcome::accepted_if(accepted)
}

/// A credential served at `now` has not expired, or it is the one that arrived expired and
/// its reuse interval has not ended.
fn assert_servable(cred: &Credential, now: SystemTime, stale: Option<(CredentialId, SystemTime)>) {
    if !cred.is_expired(now) {
        return;
    }
    let Some((id, arrived)) = stale else {
        panic!("an expired credential served from the cache");
    };
    assert_eq!(cred.id(), id, "an expired credential served from the cache");
    let until = arrived.checked_add(DEFAULT_STALE_CREDENTIAL_REUSE);
    assert!(
        arrived <= now && until.is_some_and(|u| now < u),
        "a credential that arrived expired served after its reuse interval"
    );
}

/// The next `n` bytes of `data` (fewer at its end).
fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(data.len());
    let (head, tail) = data.split_at(n);
    *data = tail;
    head
}

/// The next byte of `data`, `0` at its end.
fn byte(data: &mut &[u8]) -> u8 {
    take(data, 1).first().copied().unwrap_or(0)
}
