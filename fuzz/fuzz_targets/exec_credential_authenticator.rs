#![no_main]
//! The client state machine fed arbitrary plugin results, 401s and clock movements.
//!
//! Input: a configuration byte, then a sequence of operations. Whatever the sequence, the state
//! machine must not panic, must never hand out a credential that is expired at `now`, must keep
//! at most one run in flight, and must refuse results for runs it did not schedule.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, Cluster, CredentialState, Error, ExecAuthenticator, ExecConfig,
    InteractiveMode, RunResult,
};
use libfuzzer_sys::fuzz_target;

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(data.len());
    let (head, tail) = data.split_at(n);
    *data = tail;
    head
}

fn byte(data: &mut &[u8]) -> u8 {
    take(data, 1).first().copied().unwrap_or(0)
}

fuzz_target!(|input: &[u8]| {
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
        return;
    };
    let mut now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut runs = Vec::new();

    for _ in 0..64 {
        if data.is_empty() {
            break;
        }
        match byte(&mut data) % 7 {
            0 => match auth.credential(now) {
                Ok(CredentialState::Ready(cred)) => assert!(!cred.is_expired(now)),
                Ok(_) | Err(_) => {}
            },
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
                        assert!(!cred.is_expired(now));
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
                    assert!(!cred.is_expired(now));
                }
            }
        }
    }
    let _: SystemTime = now;
});
