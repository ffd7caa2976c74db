#![no_main]
//! The discovery state machine fed arbitrary server responses: it always finishes (no hang),
//! never panics, and only succeeds with a kubeconfig signed by the token.
//!
//! Input: a control byte, then responses separated by `\0\0`; each response starts with a
//! kind byte (status or transport error).

use std::time::{Duration, UNIX_EPOCH};

use clusterinfo::{Action, FileDiscoveryConfig, PinSet, Refresh, Response, TokenDiscoveryConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let responses = split_responses(rest);
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let token = "abcdef.0123456789abcdef".parse().expect("valid token");
    let timeout = Duration::from_secs(u64::from(control % 16) * 5);
    let mut discovery = match control % 4 {
        0 => {
            let mut pins = PinSet::new();
            pins.allow("sha256:7b4b7a53f605e3cc72436416f73ceea5549e0e2ffacc8a2b9c20fd6083537503")
                .expect("pin");
            TokenDiscoveryConfig::new("127.0.0.1:6443", token)
                .expect("endpoint")
                .with_pins(pins)
                .with_timeout(timeout)
                .start(start)
        }
        1 => TokenDiscoveryConfig::new("127.0.0.1:6443", token)
            .expect("endpoint")
            .with_endpoint("127.0.0.2:6443")
            .expect("endpoint")
            .dangerous_skip_ca_verification()
            .with_timeout(timeout)
            .start(start),
        2 => FileDiscoveryConfig::new()
            .with_refresh(Refresh::FromClusterInfo)
            .with_timeout(timeout)
            .start_file(
                b"clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n",
                start,
            ),
        _ => FileDiscoveryConfig::new()
            .with_refresh(Refresh::FromClusterInfo)
            .with_timeout(timeout)
            .start_https("https://example.com/x", start),
    }
    .expect("valid configuration");
    let mut now = start;
    let mut fetches = 0usize;
    for _ in 0..10_000 {
        match discovery.poll_action() {
            Some(Action::Fetch(_)) => {
                let raw = responses.get(fetches).copied().unwrap_or(b"");
                fetches += 1;
                let response = match raw.split_first() {
                    Some((&0, text)) => {
                        Response::TransportError(std::str::from_utf8(text).unwrap_or("error"))
                    }
                    Some((&kind, body)) => Response::Http {
                        status: if kind % 2 == 0 {
                            200
                        } else {
                            100 + u16::from(kind) * 2
                        },
                        body,
                    },
                    None => Response::Http {
                        status: 200,
                        body: b"",
                    },
                };
                discovery.handle_response(now, response);
            }
            Some(Action::WakeAt(at)) => {
                assert!(at > now, "time must advance");
                now = at;
                discovery.handle_timeout(now);
            }
            Some(Action::Done(_)) | Some(Action::Failed(_)) => return,
            Some(_) => return,
            None => panic!("stalled without finishing"),
        }
    }
    panic!("did not finish in 10000 steps");
});

fn split_responses(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\0\0") {
        out.push(&rest[..pos]);
        rest = &rest[pos + 2..];
    }
    out.push(rest);
    out
}
