//! Checks for the `clusterinfo_*` targets.

use std::time::Duration;

use clusterinfo::{
    Action, CaBundle, ClusterInfo, ClusterInfoConfigMap, Discovery, FileDiscoveryConfig, Pin,
    PinSet, Refresh, Response, TokenDiscoveryConfig,
};

use crate::fixtures::{TOKEN, discovery_start};
use crate::input::split_at_double_nul;
use crate::outcome::Outcome;

/// `ClusterInfo::parse` on the whole input.
///
/// A parsed value survives a serialise/parse round trip unchanged, and its client kubeconfig
/// parses to the same server. Accepted: the input parses.
pub fn clusterinfo_kubeconfig(data: &[u8]) -> Outcome {
    let Ok(info) = ClusterInfo::parse(data) else {
        return Outcome::Rejected;
    };
    // The published layout names the cluster "", so compare what it carries.
    let again =
        ClusterInfo::parse(info.to_kubeconfig_yaml().as_bytes()).expect("own output parses");
    assert_eq!(again.to_kubeconfig_yaml(), info.to_kubeconfig_yaml());
    assert_eq!(
        (again.server(), again.trust(), again.extension()),
        (info.server(), info.trust(), info.extension())
    );
    let client = ClusterInfo::parse(info.to_client_kubeconfig_yaml().as_bytes())
        .expect("client kubeconfig parses");
    assert_eq!(client.server(), info.server());
    Outcome::Accepted
}

/// `ClusterInfoConfigMap::from_json` and `verify` (for [`TOKEN`](crate::TOKEN)) on the whole
/// input.
///
/// A parsed ConfigMap survives a JSON round trip; a verified one yields its kubeconfig.
/// Accepted: the ConfigMap parses and verifies.
pub fn clusterinfo_configmap(data: &[u8]) -> Outcome {
    let Ok(cm) = ClusterInfoConfigMap::from_json(data) else {
        return Outcome::Rejected;
    };
    let again =
        ClusterInfoConfigMap::from_json(cm.to_json().as_bytes()).expect("own output parses");
    assert_eq!(again, cm);
    let token = TOKEN.parse().expect("valid token");
    let Ok(kubeconfig) = cm.verify(&token) else {
        return Outcome::Rejected;
    };
    assert_eq!(Some(kubeconfig), cm.kubeconfig());
    Outcome::Accepted
}

/// `Pin::from_str` on the whole input as text.
///
/// A parsed pin displays as its input, lower-cased, and the display parses to the same pin.
/// Accepted: the input parses.
pub fn clusterinfo_pin(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let Ok(pin) = text.parse::<Pin>() else {
        return Outcome::Rejected;
    };
    assert!(pin.to_string().eq_ignore_ascii_case(text));
    assert_eq!(pin.to_string().parse::<Pin>().expect("display parses"), pin);
    Outcome::Accepted
}

/// `CaBundle::from_pem` (and so `Pin::from_certificate_pem`) on the whole input.
///
/// A parsed bundle is not empty, has one pin per certificate, and its first pin is the
/// certificate's. Accepted: the input parses.
pub fn clusterinfo_ca_bundle(data: &[u8]) -> Outcome {
    let Ok(bundle) = CaBundle::from_pem(data) else {
        return Outcome::Rejected;
    };
    assert!(!bundle.is_empty());
    assert_eq!(bundle.pins().count(), bundle.len());
    assert_eq!(
        Pin::from_certificate_pem(data).ok().as_ref(),
        bundle.first_pin()
    );
    Outcome::Accepted
}

/// The discovery state machine fed arbitrary server responses.
///
/// Input: a control byte (mode and timeout), then responses separated by `\0\0`; each response
/// starts with a kind byte (`0`: transport error with the rest as message; even: `200`; odd:
/// another status) followed by the body. Discovery always finishes (no hang, time only moves
/// forward) and never panics. Accepted: discovery succeeds.
pub fn clusterinfo_discovery(data: &[u8]) -> Outcome {
    let Some((&control, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let responses = split_at_double_nul(rest);
    let start = discovery_start();
    let mut discovery = start_discovery(control);
    let mut now = start;
    let mut fetches = 0usize;
    for _ in 0..10_000 {
        match discovery.poll_action() {
            Some(Action::Fetch(_)) => {
                let raw = responses.get(fetches).copied().unwrap_or(b"");
                fetches += 1;
                discovery.handle_response(now, response(raw));
            }
            Some(Action::WakeAt(at)) => {
                assert!(at > now, "time must advance");
                now = at;
                discovery.handle_timeout(now);
            }
            Some(Action::Done(_)) => return Outcome::Accepted,
            Some(_) => return Outcome::Rejected,
            None => panic!("stalled without finishing"),
        }
    }
    panic!("did not finish in 10000 steps");
}

/// Discovery as the control byte selects: token mode with a pin, token mode without CA
/// verification over two endpoints, a file kubeconfig refreshed from cluster-info, or an HTTPS
/// URL; the timeout is a multiple of 5 s up to 75 s.
fn start_discovery(control: u8) -> Discovery {
    let start = discovery_start();
    let token = TOKEN.parse().expect("valid token");
    let timeout = Duration::from_secs(u64::from(control % 16) * 5);
    match control % 4 {
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
    .expect("valid configuration")
}

/// One encoded server response (see [`clusterinfo_discovery`]).
fn response(raw: &[u8]) -> Response<'_> {
    match raw.split_first() {
        Some((&0, text)) => Response::TransportError(std::str::from_utf8(text).unwrap_or("error")),
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
    }
}
