//! The client state machine against client-go's exec authenticator rules.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, Cluster, CredentialId, CredentialState, Error, ExecAuthenticator,
    ExecConfig, ExecCredential, InteractiveMode, PluginPolicy, PluginRun, RunResult, Stdin,
    StdinMode,
};

const CERT1: &str = include_str!("../data/client1.crt");
const KEY1: &str = include_str!("../data/client1.key");
const CERT2: &str = include_str!("../data/client2.crt");
const KEY2: &str = include_str!("../data/client2.key");

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

fn ts(secs: u64) -> String {
    // 1_700_000_000 is 2023-11-14T22:13:20Z.
    let base = 22 * 3600 + 13 * 60 + 20 + secs;
    assert!(base < 86_400);
    format!(
        "2023-11-14T{:02}:{:02}:{:02}Z",
        base / 3600,
        (base % 3600) / 60,
        base % 60
    )
}

fn config() -> ExecConfig {
    ExecConfig::new("example-plugin", ApiVersion::V1, InteractiveMode::Never)
}

fn auth() -> ExecAuthenticator {
    ExecAuthenticator::new(config(), Cluster::new("https://127.0.0.1:6443")).unwrap()
}

fn token_output(token: &str, expiry: Option<u64>) -> String {
    let mut status = serde_json::json!({ "token": token });
    if let Some(e) = expiry {
        status["expirationTimestamp"] = ts(e).into();
    }
    serde_json::json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})
        .to_string()
}

fn cert_output(cert: &str, key: &str, token: Option<&str>) -> String {
    let mut status = serde_json::json!({ "clientCertificateData": cert, "clientKeyData": key });
    if let Some(tok) = token {
        status["token"] = tok.into();
    }
    serde_json::json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})
        .to_string()
}

fn take_run(a: &mut ExecAuthenticator) -> PluginRun {
    match a.poll_action() {
        Some(Action::RunPlugin(run)) => run,
        other => panic!("expected a run, got {other:?}"),
    }
}

fn ok(stdout: &str) -> RunResult<'_> {
    RunResult::Exited {
        code: 0,
        stdout: stdout.as_bytes(),
        stderr: b"",
    }
}

/// Runs the plugin once with `stdout` and returns the credential id.
fn run_with(a: &mut ExecAuthenticator, now: SystemTime, stdout: &str) -> CredentialId {
    assert!(matches!(
        a.credential(now).unwrap(),
        CredentialState::Pending(_)
    ));
    let run = take_run(a);
    a.handle_run_result(now, run.id(), ok(stdout)).unwrap().id()
}

fn ready_token(a: &mut ExecAuthenticator, now: SystemTime) -> Option<String> {
    match a.credential(now).unwrap() {
        CredentialState::Ready(c) => Some(c.token().unwrap().expose_secret().to_owned()),
        CredentialState::Pending(_) => None,
        _ => unreachable!(),
    }
}

#[test]
fn first_use_runs_the_plugin_with_exec_info() {
    let mut a = ExecAuthenticator::new(
        config()
            .env("FOO", "bar")
            .env("KUBERNETES_EXEC_INFO", "spoofed")
            .arg("--flag"),
        Cluster::new("https://127.0.0.1:6443"),
    )
    .unwrap();
    let CredentialState::Pending(id) = a.credential(t(0)).unwrap() else {
        panic!()
    };
    let run = take_run(&mut a);
    assert_eq!(run.id(), id);
    assert_eq!(run.command(), "example-plugin");
    assert_eq!(run.args(), ["--flag"]);
    assert_eq!(run.stdin(), StdinMode::Null);
    assert!(!run.interactive());
    // kubeconfig env first, KUBERNETES_EXEC_INFO last so that it wins.
    let names: Vec<&str> = run.env().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["FOO", "KUBERNETES_EXEC_INFO", "KUBERNETES_EXEC_INFO"]
    );
    assert_eq!(
        run.exec_info(),
        "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{\"interactive\":false}}\n"
    );
    assert_eq!(run.timeout(), exec_credential::DEFAULT_TIMEOUT);
    assert_eq!(run.max_stdout(), exec_credential::MAX_PLUGIN_OUTPUT_BYTES);
    assert_eq!(a.poll_action(), None);
}

#[test]
fn provide_cluster_info_sends_the_cluster_and_extension() {
    let cluster = Cluster::new("https://10.0.0.1:6443")
        .with_certificate_authority_data(
            b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec(),
        )
        .with_config(serde_json::json!({"audience": "a&b<c>"}));
    let mut a =
        ExecAuthenticator::new(config().provide_cluster_info(true), cluster.clone()).unwrap();
    let _ = a.credential(t(0)).unwrap();
    let run = take_run(&mut a);
    let info = run.exec_info();
    assert!(info.ends_with("}\n"));
    assert!(info.starts_with(
        "{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"spec\":{\"cluster\":{\"server\":\"https://10.0.0.1:6443\",\"certificate-authority-data\":\"LS0tLS1CRUdJTi"
    ));
    // Go's encoder escapes <, > and &.
    assert!(
        info.contains(r#""config":{"audience":"a\u0026b\u003cc\u003e"}},"interactive":false}}"#),
        "{info}"
    );
    let parsed = ExecCredential::from_exec_info(info).unwrap();
    assert_eq!(parsed.cluster(), Some(&cluster));
    // Without provideClusterInfo, no cluster.
    let mut a = ExecAuthenticator::new(config(), cluster).unwrap();
    let _ = a.credential(t(0)).unwrap();
    assert!(!take_run(&mut a).exec_info().contains("cluster"));
}

#[test]
fn concurrent_callers_share_one_run() {
    let mut a = auth();
    let CredentialState::Pending(r1) = a.credential(t(0)).unwrap() else {
        panic!()
    };
    let CredentialState::Pending(r2) = a.credential(t(0)).unwrap() else {
        panic!()
    };
    let CredentialState::Pending(r3) = a.credential(t(1)).unwrap() else {
        panic!()
    };
    assert_eq!((r1, r2), (r2, r3));
    let run = take_run(&mut a);
    assert_eq!(a.poll_action(), None, "exactly one run for three callers");
    a.handle_run_result(t(2), run.id(), ok(&token_output("tok-1", Some(100))))
        .unwrap();
    assert_eq!(ready_token(&mut a, t(2)).as_deref(), Some("tok-1"));
    assert_eq!(ready_token(&mut a, t(3)).as_deref(), Some("tok-1"));
    assert_eq!(a.poll_action(), None);
}

#[test]
fn expiry_exactly_now_is_still_valid_then_one_run() {
    let mut a = auth();
    run_with(&mut a, t(0), &token_output("tok-1", Some(60)));
    assert_eq!(ready_token(&mut a, t(59)).as_deref(), Some("tok-1"));
    assert_eq!(
        ready_token(&mut a, t(60)).as_deref(),
        Some("tok-1"),
        "valid at the expiry instant"
    );
    // One nanosecond later: expired; one run for every caller.
    let later = t(60) + Duration::from_nanos(1);
    assert_eq!(ready_token(&mut a, later), None);
    assert_eq!(ready_token(&mut a, later), None);
    let run = take_run(&mut a);
    assert_eq!(a.poll_action(), None);
    a.handle_run_result(later, run.id(), ok(&token_output("tok-2", Some(120))))
        .unwrap();
    assert_eq!(ready_token(&mut a, later).as_deref(), Some("tok-2"));
}

#[test]
fn expiry_in_the_past_on_arrival_is_used_as_client_go_does() {
    // client-go caches what the plugin returned and sends it with the request that ran the
    // plugin (the server decides). It is handed out for the reuse interval, then the plugin
    // runs again.
    let mut a = auth();
    let _ = a.credential(t(100)).unwrap();
    let run = take_run(&mut a);
    let c = a
        .handle_run_result(t(100), run.id(), ok(&token_output("old", Some(50))))
        .unwrap();
    assert_eq!(c.token().unwrap().expose_secret(), "old");
    assert!(c.is_expired(t(100)));
    // Nothing is scheduled behind the caller's back, and it is not a failure (no backoff).
    assert_eq!(a.poll_action(), None);
    assert_eq!(a.next_run_allowed_at(t(100)), None);
    assert_eq!(ready_token(&mut a, t(100)).as_deref(), Some("old"));
    assert!(a.cached(t(100)).is_some());
    let almost = t(101) - Duration::from_nanos(1);
    assert_eq!(ready_token(&mut a, almost).as_deref(), Some("old"));
    assert_eq!(a.poll_action(), None);
    assert!(a.cached(t(101)).is_none());
    assert!(matches!(
        a.credential(t(101)).unwrap(),
        CredentialState::Pending(_)
    ));
    let run = take_run(&mut a);
    a.handle_run_result(t(101), run.id(), ok(&token_output("new", Some(200))))
        .unwrap();
    assert_eq!(ready_token(&mut a, t(101)).as_deref(), Some("new"));
    // A fresh credential ends the reuse: it expires as any other.
    let later = t(200) + Duration::from_nanos(1);
    assert_eq!(ready_token(&mut a, later), None);
}

/// 1,000 calls spread evenly over the second after `start`, each run answered at once with
/// a credential that expired before it arrived. Returns the runs and the calls answered with
/// a credential.
fn runs_over_a_second_answered_expired(
    a: &mut ExecAuthenticator,
    start: SystemTime,
) -> (usize, usize) {
    let (mut runs, mut ready) = (0, 0);
    for i in 0..1000 {
        let now = start + Duration::from_millis(i);
        match a.credential(now).unwrap() {
            CredentialState::Pending(_) => {
                let run = take_run(a);
                runs += 1;
                let c = a
                    .handle_run_result(
                        now,
                        run.id(),
                        ok(&token_output(&format!("old-{runs}"), Some(50))),
                    )
                    .unwrap();
                assert!(c.is_expired(now));
            }
            CredentialState::Ready(c) => {
                assert_eq!(c.token().unwrap().expose_secret(), format!("old-{runs}"));
                ready += 1;
            }
            _ => unreachable!(),
        }
        assert_eq!(a.poll_action(), None);
    }
    (runs, ready)
}

#[test]
fn answers_that_keep_arriving_expired_run_the_plugin_at_most_once_a_second() {
    // A plugin whose clock runs behind: every answer has expired by our clock. client-go runs
    // it for every request; here 1,000 calls over one second run it once, and every other
    // call gets the latest answer.
    let mut a = auth();
    assert_eq!(
        runs_over_a_second_answered_expired(&mut a, t(100)),
        (1, 999)
    );
    // Once the clock moved on, the plugin runs again (once for the next second).
    assert_eq!(
        runs_over_a_second_answered_expired(&mut a, t(101)),
        (1, 999)
    );
    // A 401 for the credential being reused schedules nothing either.
    let id = a.cached(t(101) + Duration::from_millis(999)).unwrap().id();
    assert_eq!(
        a.handle_unauthorized(t(101) + Duration::from_millis(999), id)
            .unwrap(),
        None
    );
    assert_eq!(a.poll_action(), None);
    // After the interval a 401 refreshes it as client-go does.
    assert!(a.handle_unauthorized(t(102), id).unwrap().is_some());
    assert!(matches!(a.poll_action(), Some(Action::RunPlugin(_))));
}

#[test]
fn stale_credential_reuse_is_configurable_and_zero_is_client_gos_run_per_call() {
    let mut a = auth();
    a.set_stale_credential_reuse(Duration::from_millis(250));
    assert_eq!(
        runs_over_a_second_answered_expired(&mut a, t(100)),
        (4, 996)
    );
    let mut a = auth();
    a.set_stale_credential_reuse(Duration::ZERO);
    assert_eq!(
        runs_over_a_second_answered_expired(&mut a, t(100)),
        (1000, 0)
    );
}

#[test]
fn a_credential_arriving_inside_the_refresh_skew_is_bounded_too() {
    // A skew longer than the plugin's credential lifetime: every answer is due for a refresh
    // when it arrives (valid, but inside the skew).
    let mut a = auth();
    a.set_refresh_skew(Duration::from_secs(600));
    let mut runs = 0;
    for i in 0..1000 {
        let now = t(100) + Duration::from_millis(i);
        if let CredentialState::Pending(_) = a.credential(now).unwrap() {
            let run = take_run(&mut a);
            runs += 1;
            a.handle_run_result(now, run.id(), ok(&token_output("short", Some(160))))
                .unwrap();
        }
    }
    assert_eq!(runs, 1);
    assert_eq!(ready_token(&mut a, t(101)), None, "a run after the second");
}

#[test]
fn a_clock_gone_back_before_the_arrival_ends_the_reuse() {
    let mut a = auth();
    run_with(&mut a, t(100), &token_output("old", Some(50)));
    assert_eq!(ready_token(&mut a, t(100)).as_deref(), Some("old"));
    assert_eq!(ready_token(&mut a, t(99)), None);
}

#[test]
fn a_cancelled_run_is_not_a_failure() {
    let mut a = auth();
    let CredentialState::Pending(id) = a.credential(t(0)).unwrap() else {
        panic!("no run")
    };
    let run = take_run(&mut a);
    assert_eq!(run.id(), id);
    a.cancel_run(run.id()).unwrap();
    assert_eq!(a.cancel_run(run.id()), Err(Error::UnknownRun));
    assert_eq!(
        a.handle_run_result(t(0), run.id(), ok(&token_output("late", None)))
            .unwrap_err(),
        Error::UnknownRun
    );
    // No wait: a new run is scheduled at once.
    assert_eq!(a.next_run_allowed_at(t(0)), None);
    let CredentialState::Pending(next) = a.credential(t(0)).unwrap() else {
        panic!("no run")
    };
    assert_ne!(next, id);
    let run = take_run(&mut a);
    a.handle_run_result(t(0), run.id(), ok(&token_output("tok", None)))
        .unwrap();
    assert_eq!(ready_token(&mut a, t(0)).as_deref(), Some("tok"));
}

#[test]
fn no_expiry_caches_for_the_life_of_the_authenticator() {
    let mut a = auth();
    run_with(&mut a, t(0), &token_output("forever", None));
    assert_eq!(ready_token(&mut a, t(80_000)).as_deref(), Some("forever"));
    assert_eq!(
        ready_token(&mut a, UNIX_EPOCH + Duration::from_secs(10_000_000_000)).as_deref(),
        Some("forever")
    );
    let zero = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"z","expirationTimestamp":"0001-01-01T00:00:00Z"}}"#;
    let mut a = auth();
    run_with(&mut a, t(0), zero);
    assert_eq!(ready_token(&mut a, t(80_000)).as_deref(), Some("z"));
}

#[test]
fn clock_going_backwards_keeps_the_credential() {
    let mut a = auth();
    run_with(&mut a, t(1000), &token_output("tok", Some(2000)));
    assert_eq!(ready_token(&mut a, t(10)).as_deref(), Some("tok"));
    assert_eq!(ready_token(&mut a, UNIX_EPOCH).as_deref(), Some("tok"));
    assert_eq!(ready_token(&mut a, t(2000)).as_deref(), Some("tok"));
    assert_eq!(ready_token(&mut a, t(2001)), None);
}

#[test]
fn unauthorized_refreshes_once_per_credential() {
    let mut a = auth();
    let first = run_with(&mut a, t(0), &token_output("tok-1", Some(3000)));
    // Two requests with the same credential both got 401: one run.
    let run = a.handle_unauthorized(t(1), first).unwrap();
    assert!(run.is_some());
    assert_eq!(a.handle_unauthorized(t(1), first).unwrap(), None);
    // While the refresh runs, callers wait for it (client-go holds the lock).
    assert!(matches!(
        a.credential(t(1)).unwrap(),
        CredentialState::Pending(_)
    ));
    let r = take_run(&mut a);
    assert_eq!(a.poll_action(), None);
    let second = a
        .handle_run_result(t(2), r.id(), ok(&token_output("tok-2", Some(3000))))
        .unwrap()
        .id();
    assert_ne!(first, second);
    // A late 401 for the old credential: someone already refreshed, nothing happens.
    assert_eq!(a.handle_unauthorized(t(3), first).unwrap(), None);
    assert_eq!(a.poll_action(), None);
    assert_eq!(ready_token(&mut a, t(3)).as_deref(), Some("tok-2"));
    // A 401 for the new one refreshes again.
    assert!(a.handle_unauthorized(t(4), second).unwrap().is_some());
}

#[test]
fn failed_refresh_keeps_the_old_credential() {
    let mut a = auth();
    let first = run_with(&mut a, t(0), &token_output("tok-1", Some(3000)));
    a.handle_unauthorized(t(1), first).unwrap().unwrap();
    let r = take_run(&mut a);
    let e = a
        .handle_run_result(
            t(2),
            r.id(),
            RunResult::Exited {
                code: 3,
                stdout: b"",
                stderr: b"boom",
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::PluginFailed { code: 3, .. }));
    assert_eq!(ready_token(&mut a, t(3)).as_deref(), Some("tok-1"));
}

#[test]
fn stale_or_unknown_run_results_are_refused() {
    let mut a = auth();
    let _ = a.credential(t(0)).unwrap();
    let run = take_run(&mut a);
    a.handle_run_result(t(0), run.id(), ok(&token_output("x", None)))
        .unwrap();
    assert_eq!(
        a.handle_run_result(t(0), run.id(), ok(&token_output("y", None)))
            .unwrap_err(),
        Error::UnknownRun
    );
    assert_eq!(ready_token(&mut a, t(0)).as_deref(), Some("x"));
}

#[test]
fn certificate_change_signals_tls_rotation_token_change_does_not() {
    let mut a = auth();
    let c1 = run_with(&mut a, t(0), &cert_output(CERT1, KEY1, Some("tok-1")));
    assert_eq!(a.poll_action(), None, "first credential: nothing to rotate");
    // Same certificate, new token: no rotation.
    let c2 = {
        a.handle_unauthorized(t(1), c1).unwrap().unwrap();
        let r = take_run(&mut a);
        a.handle_run_result(t(1), r.id(), ok(&cert_output(CERT1, KEY1, Some("tok-2"))))
            .unwrap()
            .id()
    };
    assert_eq!(a.poll_action(), None);
    // New certificate: rotation.
    a.handle_unauthorized(t(2), c2).unwrap().unwrap();
    let r = take_run(&mut a);
    let c3 = a
        .handle_run_result(t(2), r.id(), ok(&cert_output(CERT2, KEY2, None)))
        .unwrap()
        .id();
    match a.poll_action() {
        Some(Action::RotateTlsIdentity {
            previous,
            current,
            previous_not_before,
        }) => {
            assert_eq!((previous, current), (c2, c3));
            assert!(previous_not_before.is_some());
        }
        other => panic!("expected rotation, got {other:?}"),
    }
    // Certificate dropped in favour of a token: rotation too.
    a.handle_unauthorized(t(3), c3).unwrap().unwrap();
    let r = take_run(&mut a);
    a.handle_run_result(t(3), r.id(), ok(&token_output("tok-only", None)))
        .unwrap();
    assert!(matches!(
        a.poll_action(),
        Some(Action::RotateTlsIdentity { .. })
    ));
}

#[test]
fn run_failures_are_typed() {
    let mut a = ExecAuthenticator::new(
        config().install_hint("brew install example-plugin\u{1b}[31m"),
        Cluster::new("https://x"),
    )
    .unwrap();
    // Failures back to back at one instant: no backoff between runs.
    a.set_failure_backoff(Duration::ZERO, Duration::ZERO);
    let mut fail = |result: RunResult<'_>| {
        let _ = a.credential(t(0)).unwrap();
        let r = take_run(&mut a);
        a.handle_run_result(t(0), r.id(), result).unwrap_err()
    };
    let e = fail(RunResult::NotFound);
    let msg = e.to_string();
    assert!(msg.starts_with("exec: executable example-plugin not found\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\nTo learn more about this feature, consult the documentation available at:\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins\n\nbrew install example-pluginU+001B[31m"), "{msg}");
    let e = fail(RunResult::Exited {
        code: 2,
        stdout: b"{\"token\":\"CANARY-out\"}",
        stderr: b"CANARY-err",
    });
    assert_eq!(
        e.to_string(),
        "exec: executable example-plugin failed with exit code 2"
    );
    assert!(!format!("{e:?}").contains("CANARY"));
    let Error::PluginFailed { stderr, .. } = &e else {
        panic!()
    };
    assert_eq!(stderr.as_str(), "CANARY-err");
    let e = fail(RunResult::SpawnFailed {
        message: "fork/exec /opt/x: permission denied",
    });
    assert_eq!(e.to_string(), "exec: fork/exec /opt/x: permission denied");
    assert!(matches!(
        fail(RunResult::TimedOut),
        Error::PluginTimedOut { .. }
    ));
    assert!(matches!(
        fail(RunResult::StdoutLimitExceeded),
        Error::OutputTooLarge { .. }
    ));
    assert!(matches!(
        fail(RunResult::Signaled {
            signal: 9,
            stderr: b""
        }),
        Error::PluginKilled { signal: 9, .. }
    ));
}

#[test]
fn install_hint_is_rate_limited_to_ten_per_hour() {
    let mut a = ExecAuthenticator::new(
        config().install_hint("install it"),
        Cluster::new("https://x"),
    )
    .unwrap();
    a.set_failure_backoff(Duration::ZERO, Duration::ZERO);
    let mut shown = |now: SystemTime| {
        let _ = a.credential(now).unwrap();
        let r = take_run(&mut a);
        match a
            .handle_run_result(now, r.id(), RunResult::NotFound)
            .unwrap_err()
        {
            Error::PluginNotFound { install_hint, .. } => install_hint.is_some(),
            e => panic!("{e:?}"),
        }
    };
    for i in 0..10 {
        assert!(shown(t(i)), "attempt {i}");
    }
    assert!(!shown(t(11)));
    assert!(!shown(t(3599)));
    assert!(shown(t(3600)), "the first one aged out");
    assert!(!shown(t(3600)));
}

#[test]
fn interactive_mode_decisions() {
    let cases = [
        (InteractiveMode::Never, Stdin::terminal(), Ok(false)),
        (InteractiveMode::IfAvailable, Stdin::terminal(), Ok(true)),
        (
            InteractiveMode::IfAvailable,
            Stdin::not_terminal(),
            Ok(false),
        ),
        (
            InteractiveMode::IfAvailable,
            Stdin::terminal().unavailable(""),
            Ok(false),
        ),
        (InteractiveMode::Always, Stdin::terminal(), Ok(true)),
        (
            InteractiveMode::Always,
            Stdin::not_terminal().unavailable("x"),
            Err("exec plugin cannot support interactive mode: standard input is not a terminal"),
        ),
        (
            InteractiveMode::Always,
            Stdin::terminal().unavailable(""),
            Err("exec plugin cannot support interactive mode: standard input is unavailable"),
        ),
        (
            InteractiveMode::Always,
            Stdin::terminal().unavailable("used for the manifest"),
            Err(
                "exec plugin cannot support interactive mode: standard input is unavailable: used for the manifest",
            ),
        ),
    ];
    for (mode, stdin, want) in cases {
        let mut a = ExecAuthenticator::new(
            ExecConfig::new("p", ApiVersion::V1, mode),
            Cluster::new("https://x"),
        )
        .unwrap();
        a.set_stdin(stdin.clone());
        match (a.credential(t(0)), want) {
            (Ok(CredentialState::Pending(_)), Ok(interactive)) => {
                let run = take_run(&mut a);
                assert_eq!(run.interactive(), interactive, "{mode:?} {stdin:?}");
                assert_eq!(run.stdin() == StdinMode::Inherit, interactive);
                assert!(
                    run.exec_info()
                        .contains(&format!("\"interactive\":{interactive}"))
                );
                let expected_timeout = if interactive {
                    exec_credential::DEFAULT_INTERACTIVE_TIMEOUT
                } else {
                    exec_credential::DEFAULT_TIMEOUT
                };
                assert_eq!(run.timeout(), expected_timeout);
            }
            (Err(e), Err(msg)) => assert_eq!(e.to_string(), msg),
            (got, want) => panic!("{mode:?} {stdin:?}: got {got:?}, want {want:?}"),
        }
    }
    // An empty mode (an ExecConfig built in code, not defaulted) fails on every run.
    let mut c = config();
    c.interactive_mode = String::new();
    let mut a = ExecAuthenticator::new(c, Cluster::new("https://x")).unwrap();
    assert_eq!(
        a.credential(t(0)).unwrap_err().to_string(),
        "exec plugin cannot support interactive mode: unknown interactiveMode: \"\""
    );
}

#[test]
fn invalid_api_versions_are_refused_at_construction() {
    for v in [
        "client.authentication.k8s.io/v1alpha1",
        "client.authentication.k8s.io/v2",
        "",
    ] {
        let mut c = config();
        c.api_version = v.to_owned();
        let e = ExecAuthenticator::new(c, Cluster::new("https://x")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("exec plugin: invalid apiVersion {v:?}")
        );
    }
}

#[test]
fn row64_policy_refuses_commands_outside_the_allowlist() {
    let mut a = ExecAuthenticator::new(
        ExecConfig::new("/tmp/evil/aws", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://x"),
    )
    .unwrap();
    a.set_policy(PluginPolicy::allowlist(["aws"]).unwrap());
    let e = a.credential(t(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "plugin path \"/tmp/evil/aws\" is not permitted by the credential plugin allowlist"
    );
    assert_eq!(a.poll_action(), None, "nothing to run");
    a.set_policy(PluginPolicy::DenyAll);
    assert!(matches!(
        a.credential(t(0)).unwrap_err(),
        Error::PolicyDenied(_)
    ));
    a.set_policy(PluginPolicy::allowlist(["/tmp/evil/aws"]).unwrap());
    assert!(matches!(
        a.credential(t(0)).unwrap(),
        CredentialState::Pending(_)
    ));
}

#[test]
fn limits_are_configurable_and_enforced_on_output() {
    let mut a = auth();
    a.set_max_stdout(64);
    a.set_timeouts(Duration::from_secs(5), Duration::from_secs(50));
    let _ = a.credential(t(0)).unwrap();
    let run = take_run(&mut a);
    assert_eq!(run.max_stdout(), 64);
    assert_eq!(run.timeout(), Duration::from_secs(5));
    let e = a
        .handle_run_result(
            t(0),
            run.id(),
            ok(&token_output("x".repeat(100).as_str(), None)),
        )
        .unwrap_err();
    assert_eq!(e, Error::OutputTooLarge { limit: 64 });
}

#[test]
fn v1beta1_configuration_speaks_v1beta1() {
    let mut c = ExecConfig::new("p", ApiVersion::V1Beta1, InteractiveMode::Never);
    c.interactive_mode = String::new();
    c.apply_defaults();
    assert_eq!(c.interactive_mode, "IfAvailable");
    let mut a = ExecAuthenticator::new(c, Cluster::new("https://x")).unwrap();
    let _ = a.credential(t(0)).unwrap();
    let run = take_run(&mut a);
    assert!(
        run.exec_info()
            .contains("client.authentication.k8s.io/v1beta1")
    );
    let e = a
        .handle_run_result(t(0), run.id(), ok(&token_output("x", None)))
        .unwrap_err();
    assert!(matches!(e, Error::ApiVersionMismatch { .. }));
}

#[test]
fn refresh_skew_renews_early_when_asked() {
    let mut a = auth();
    a.set_refresh_skew(Duration::from_secs(30));
    run_with(&mut a, t(0), &token_output("tok-1", Some(100)));
    assert_eq!(
        ready_token(&mut a, t(70)).as_deref(),
        Some("tok-1"),
        "30 s before the expiry"
    );
    assert_eq!(ready_token(&mut a, t(71)), None, "inside the skew window");
    let run = take_run(&mut a);
    a.handle_run_result(t(71), run.id(), ok(&token_output("tok-2", Some(200))))
        .unwrap();
    assert_eq!(ready_token(&mut a, t(72)).as_deref(), Some("tok-2"));
    // Credentials without expiry are not affected; an absurd skew never panics.
    let mut a = auth();
    a.set_refresh_skew(Duration::MAX);
    run_with(&mut a, t(0), &token_output("forever", None));
    assert_eq!(ready_token(&mut a, t(1)).as_deref(), Some("forever"));
    let mut a = auth();
    a.set_refresh_skew(Duration::MAX);
    run_with(&mut a, t(0), &token_output("short", Some(10)));
    assert_eq!(ready_token(&mut a, t(1)), None);
}

/// Starts a run at `now` (asserting one is scheduled) and fails it with exit code 1.
fn fail_run(a: &mut ExecAuthenticator, now: SystemTime) -> Error {
    assert!(matches!(
        a.credential(now).unwrap(),
        CredentialState::Pending(_)
    ));
    let run = take_run(a);
    a.handle_run_result(
        now,
        run.id(),
        RunResult::Exited {
            code: 1,
            stdout: b"",
            stderr: b"",
        },
    )
    .unwrap_err()
}

/// Counts the runs 1,000 calls at `now` schedule (failing each one at once).
fn runs_from_a_thousand_calls(a: &mut ExecAuthenticator, now: SystemTime) -> usize {
    let mut runs = 0;
    for _ in 0..1000 {
        match a.credential(now) {
            Ok(CredentialState::Pending(_)) => {
                let run = take_run(a);
                runs += 1;
                let _ = a.handle_run_result(now, run.id(), RunResult::TimedOut);
            }
            Err(Error::RunBackoff { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    runs
}

#[test]
fn failed_run_backs_off_instead_of_rerunning_at_once() {
    let mut a = auth();
    // The first call runs the plugin; it fails. 1,000 calls at the same instant run nothing.
    fail_run(&mut a, t(0));
    assert_eq!(runs_from_a_thousand_calls(&mut a, t(0)), 0);
    let e = a.credential(t(0)).unwrap_err();
    assert_eq!(
        e,
        Error::RunBackoff {
            failures: 1,
            retry_at: t(1),
            retry_in: Duration::from_secs(1)
        }
    );
    assert_eq!(
        e.to_string(),
        "exec plugin failed 1 time(s) in a row; next run allowed in 1s"
    );
    assert!(a.poll_action().is_none());
    assert_eq!(a.next_run_allowed_at(t(0)), Some(t(1)));
    // After the wait, exactly one run again.
    assert_eq!(a.next_run_allowed_at(t(1)), None);
    assert_eq!(runs_from_a_thousand_calls(&mut a, t(1)), 1);
}

#[test]
fn expired_on_arrival_is_not_a_failure() {
    let mut a = auth();
    assert!(matches!(
        a.credential(t(10)).unwrap(),
        CredentialState::Pending(_)
    ));
    let run = take_run(&mut a);
    a.handle_run_result(t(10), run.id(), ok(&token_output("x", Some(5))))
        .unwrap();
    // No backoff: once the reuse interval is over, the next use runs the plugin at once.
    assert_eq!(a.next_run_allowed_at(t(10)), None);
    assert!(matches!(
        a.credential(t(11)).unwrap(),
        CredentialState::Pending(_)
    ));
}

#[test]
fn backoff_doubles_is_capped_and_resets_on_success() {
    let mut a = auth();
    a.set_failure_backoff(Duration::from_secs(2), Duration::from_secs(10));
    let mut now = 0;
    let mut waits = Vec::new();
    for _ in 0..6 {
        fail_run(&mut a, t(now));
        let Err(Error::RunBackoff { retry_in, .. }) = a.credential(t(now)) else {
            panic!("no backoff")
        };
        // One second before the end: still waiting; at the end: a run.
        let wait = retry_in.as_secs();
        assert!(matches!(
            a.credential(t(now + wait - 1)),
            Err(Error::RunBackoff { .. })
        ));
        waits.push(wait);
        now += wait;
    }
    assert_eq!(waits, [2, 4, 8, 10, 10, 10]);
    // A success resets: the next failure waits the initial time again.
    run_with(&mut a, t(now), &token_output("good", Some(now + 5)));
    assert!(a.next_run_allowed_at(t(now)).is_none());
    fail_run(&mut a, t(now + 6));
    assert_eq!(a.next_run_allowed_at(t(now + 6)), Some(t(now + 8)));
}

#[test]
fn backoff_blocks_unauthorized_refreshes_and_can_be_turned_off() {
    let mut a = auth();
    let id = run_with(&mut a, t(0), &token_output("good", None));
    assert!(a.handle_unauthorized(t(1), id).unwrap().is_some());
    let run = take_run(&mut a);
    let _ = a.handle_run_result(t(1), run.id(), RunResult::TimedOut);
    // The refresh failed: the old credential stays; a second 401 waits for the backoff.
    assert_eq!(ready_token(&mut a, t(1)).as_deref(), Some("good"));
    assert_eq!(a.handle_unauthorized(t(1), id).unwrap(), None);
    assert!(a.handle_unauthorized(t(2), id).unwrap().is_some());
    // client-go's behaviour: no backoff.
    let mut b = auth();
    b.set_failure_backoff(Duration::ZERO, Duration::ZERO);
    fail_run(&mut b, t(0));
    assert_eq!(runs_from_a_thousand_calls(&mut b, t(0)), 1000);
}

#[test]
fn clock_going_back_before_a_failure_ends_the_backoff() {
    let mut a = auth();
    fail_run(&mut a, t(100));
    assert!(matches!(
        a.credential(t(100)),
        Err(Error::RunBackoff { .. })
    ));
    assert!(matches!(
        a.credential(t(50)).unwrap(),
        CredentialState::Pending(_)
    ));
}
