//! Replays every checked-in fuzz seed through the same entry points as the fuzz targets, so a
//! plain `cargo test` catches regressions on them.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use clusterinfo::{
    Action, CaBundle, ClusterInfo, ClusterInfoConfigMap, Pin, PinSet, Response,
    TokenDiscoveryConfig,
};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "empty corpus {target}");
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn kubeconfig_corpus() {
    let mut ok = 0;
    for (name, data) in corpus("clusterinfo_kubeconfig") {
        if let Ok(info) = ClusterInfo::parse(&data) {
            // The published layout names the cluster "", so compare what it carries.
            let again = ClusterInfo::parse(info.to_kubeconfig_yaml().as_bytes()).unwrap();
            assert_eq!(
                again.to_kubeconfig_yaml(),
                info.to_kubeconfig_yaml(),
                "{name}"
            );
            assert_eq!(
                (again.server(), again.trust()),
                (info.server(), info.trust()),
                "{name}"
            );
            ok += 1;
        }
    }
    assert!(ok >= 5, "{ok}");
}

#[test]
fn configmap_corpus() {
    let token = "abcdef.0123456789abcdef".parse().unwrap();
    let mut verified = 0;
    for (name, data) in corpus("clusterinfo_configmap") {
        if let Ok(cm) = ClusterInfoConfigMap::from_json(&data) {
            assert_eq!(
                ClusterInfoConfigMap::from_json(cm.to_json().as_bytes()).unwrap(),
                cm,
                "{name}"
            );
            if cm.verify(&token).is_ok() {
                verified += 1;
            }
        }
    }
    assert!(verified >= 3, "{verified}");
}

#[test]
fn pin_corpus() {
    for (name, data) in corpus("clusterinfo_pin") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(pin) = text.parse::<Pin>() {
            assert!(pin.to_string().eq_ignore_ascii_case(text), "{name}");
        }
    }
}

#[test]
fn ca_bundle_corpus() {
    let mut ok = 0;
    for (name, data) in corpus("clusterinfo_ca_bundle") {
        if let Ok(bundle) = CaBundle::from_pem(&data) {
            assert_eq!(
                Pin::from_certificate_pem(&data).ok().as_ref(),
                bundle.first_pin(),
                "{name}"
            );
            ok += 1;
        }
    }
    assert!(ok >= 3, "{ok}");
}

/// The same driver as `fuzz/fuzz_targets/clusterinfo_discovery.rs`, token mode with a pin.
#[test]
fn discovery_corpus() {
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut succeeded = 0;
    for (name, data) in corpus("clusterinfo_discovery") {
        let Some((_, rest)) = data.split_first() else {
            continue;
        };
        let responses: Vec<&[u8]> = split(rest);
        let mut pins = PinSet::new();
        pins.allow("sha256:7b4b7a53f605e3cc72436416f73ceea5549e0e2ffacc8a2b9c20fd6083537503")
            .unwrap();
        let mut d =
            TokenDiscoveryConfig::new("127.0.0.1:6443", "abcdef.0123456789abcdef".parse().unwrap())
                .unwrap()
                .with_pins(pins)
                .with_timeout(Duration::from_secs(30))
                .start(start)
                .unwrap();
        let (mut now, mut fetches) = (start, 0usize);
        let finished = (0..10_000).any(|_| match d.poll_action() {
            Some(Action::Fetch(_)) => {
                let raw = responses.get(fetches).copied().unwrap_or(b"");
                fetches += 1;
                let response = match raw.split_first() {
                    Some((&0, t)) => {
                        Response::TransportError(std::str::from_utf8(t).unwrap_or("error"))
                    }
                    Some((&k, body)) => Response::Http {
                        status: if k % 2 == 0 {
                            200
                        } else {
                            100 + u16::from(k) * 2
                        },
                        body,
                    },
                    None => Response::Http {
                        status: 200,
                        body: b"",
                    },
                };
                d.handle_response(now, response);
                false
            }
            Some(Action::WakeAt(at)) => {
                now = at;
                d.handle_timeout(now);
                false
            }
            Some(Action::Done(_)) => {
                succeeded += 1;
                true
            }
            Some(_) => true,
            None => panic!("{name}: stalled"),
        });
        assert!(finished, "{name}");
    }
    assert!(succeeded >= 1);
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\0\0") {
        out.push(&rest[..pos]);
        rest = &rest[pos + 2..];
    }
    out.push(rest);
    out
}
