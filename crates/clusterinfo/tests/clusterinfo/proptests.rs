//! Property tests: round trips, no panics on arbitrary input, signer laws, discovery always
//! terminating. CI re-runs these with `PROPTEST_CASES=10000`.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fixtures::*;
use clusterinfo::{
    Action, CaBundle, ClusterExtension, ClusterInfo, ClusterInfoConfigMap, Pin, PinSet, Response,
    TokenDiscoveryConfig, reconcile,
};
use proptest::prelude::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn token_ids() -> impl Strategy<Value = String> {
    "[a-z0-9]{6}"
}

proptest! {
    #[test]
    fn proptest_pin_display_parse_round_trip(bytes in proptest::array::uniform32(any::<u8>()), upper in any::<bool>()) {
        let text = format!("sha256:{}", hex(&bytes));
        let given = if upper { text.to_uppercase() } else { text.clone() };
        let pin: Pin = given.parse().unwrap();
        prop_assert_eq!(pin.to_string(), text);
        prop_assert_eq!(pin.as_bytes(), &bytes);
    }

    #[test]
    fn proptest_pin_parse_never_panics(s in "\\PC*") {
        let _ = s.parse::<Pin>();
    }

    #[test]
    fn proptest_kubeconfig_parse_never_panics(s in "\\PC{0,400}") {
        let _ = ClusterInfo::parse(s.as_bytes());
    }

    #[test]
    fn proptest_kubeconfig_parse_never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = ClusterInfo::parse(&b);
        let _ = CaBundle::from_pem(&b);
        let _ = ClusterInfoConfigMap::from_json(&b);
    }

    /// Whatever the strings, what we write reads back the same (the YAML emitter quotes
    /// correctly).
    #[test]
    fn proptest_cluster_info_serialise_parse_round_trip(
        host in "[a-z][a-z0-9-]{0,20}(\\.[a-z0-9]{1,8}){0,2}",
        port in proptest::option::of(1u16..),
        cluster_id in "\\PC{0,40}",
        serial in any::<u64>(),
        tls_name in proptest::option::of("\\PC{1,30}"),
        extra_servers in proptest::collection::vec("[a-z]{1,10}:[0-9]{1,4}", 0..4),
    ) {
        let server = match port { Some(p) => format!("https://{host}:{p}"), None => format!("https://{host}") };
        let mut info = ClusterInfo::new(&server, CaBundle::from_pem(ca_pem().as_bytes()).unwrap()).unwrap();
        let mut ext = ClusterExtension::new(cluster_id, serial);
        for s in &extra_servers {
            ext = ext.with_server(&format!("https://{s}")).unwrap();
        }
        info.set_extension(Some(ext));
        info.set_tls_server_name(tls_name);
        let yaml = info.to_kubeconfig_yaml();
        prop_assert_eq!(ClusterInfo::parse(yaml.as_bytes()).unwrap(), info.clone());
        let client = ClusterInfo::parse(info.to_client_kubeconfig_yaml().as_bytes()).unwrap();
        prop_assert_eq!(client.server(), info.server());
        prop_assert_eq!(client.extension(), info.extension());
    }

    #[test]
    fn proptest_configmap_json_round_trip(data in proptest::collection::btree_map("\\PC{0,20}", "\\PC{0,40}", 0..8)) {
        let cm = ClusterInfoConfigMap::from_data(data);
        prop_assert_eq!(ClusterInfoConfigMap::from_json(cm.to_json().as_bytes()).unwrap(), cm);
    }

    /// sign → verify succeeds for every signing token; a second pass changes nothing; any
    /// one-byte change to the kubeconfig fails verification.
    #[test]
    fn proptest_signer_laws(
        kubeconfig in "\\PC{1,200}",
        ids in proptest::collection::btree_set(token_ids(), 0..5),
        flip in any::<prop::sample::Index>(),
    ) {
        let secrets: Vec<_> = ids.iter().map(|id| token_secret(id, "0123456789abcdef", true, None)).collect();
        let data: BTreeMap<String, String> = [("kubeconfig".to_owned(), kubeconfig.clone())].into();
        let out = reconcile(&data, &secrets, now());
        prop_assert_eq!(out.update_needed(), !ids.is_empty());
        prop_assert!(!reconcile(out.data(), &secrets, now()).update_needed());
        let cm = ClusterInfoConfigMap::from_data(out.data().clone());
        for id in &ids {
            let token = format!("{id}.0123456789abcdef").parse().unwrap();
            prop_assert_eq!(cm.verify(&token).unwrap(), kubeconfig.as_str());
        }
        if let Some(id) = ids.iter().next() {
            let mut bytes = kubeconfig.clone().into_bytes();
            let i = flip.index(bytes.len());
            bytes[i] ^= 0x01;
            if let Ok(tampered) = String::from_utf8(bytes) {
                let mut d = out.data().clone();
                d.insert("kubeconfig".into(), tampered);
                let token = format!("{id}.0123456789abcdef").parse().unwrap();
                prop_assert!(ClusterInfoConfigMap::from_data(d).verify(&token).is_err());
            }
        }
    }

    /// Discovery fed arbitrary responses always terminates without panicking, and never
    /// succeeds unless a body carried the signed kubeconfig.
    #[test]
    fn proptest_discovery_terminates_on_arbitrary_responses(
        responses in proptest::collection::vec((prop_oneof![Just(200u16), 100u16..600], proptest::collection::vec(any::<u8>(), 0..64)), 0..8),
        timeout in 0u64..40,
    ) {
        let mut d = TokenDiscoveryConfig::new("127.0.0.1:6443", TOKEN.parse().unwrap())
            .unwrap()
            .with_pins(PinSet::from_iter([Pin::from_certificate_pem(ca_pem().as_bytes()).unwrap()]))
            .with_timeout(Duration::from_secs(timeout))
            .start(now())
            .unwrap();
        let (mut t, mut i) = (now(), 0usize);
        let mut finished = false;
        for _ in 0..1_000 {
            match d.poll_action() {
                Some(Action::Fetch(_)) => {
                    let (status, body) = responses.get(i).cloned().unwrap_or((500, Vec::new()));
                    i += 1;
                    d.handle_response(t, Response::Http { status, body: &body });
                }
                Some(Action::WakeAt(at)) => { prop_assert!(at > t); t = at; d.handle_timeout(t); }
                Some(Action::Done(_)) => prop_assert!(false, "random bytes cannot be signed"),
                Some(_) => { finished = true; break; }
                None => prop_assert!(false, "stalled"),
            }
        }
        prop_assert!(finished);
        prop_assert!(t <= now() + Duration::from_secs(timeout));
    }
}

/// The bootstrap signer's sync written out step by step as `bootstrapsigner.go` does it (deep
/// copy, remove every `jws-kubeconfig-*` key remembering it, sign each first-seen qualifying
/// token, compare), against which the optimised `reconcile` is checked.
fn reference_reconcile(
    data: &BTreeMap<String, String>,
    secrets: &[bootstrap_token::SecretObject],
) -> (BTreeMap<String, String>, bool, Vec<String>) {
    let Some(kubeconfig) = data.get("kubeconfig") else {
        return (data.clone(), false, Vec::new());
    };
    let mut new = data.clone();
    let mut old = BTreeMap::new();
    for key in data.keys() {
        if let Some(id) = key.strip_prefix("jws-kubeconfig-") {
            old.insert(id.to_owned(), new.remove(key).unwrap());
        }
    }
    let mut update = false;
    let mut signed: Vec<String> = Vec::new();
    for secret in secrets {
        let Some((id, key)) = secret.signing_key(now()) else {
            continue;
        };
        if signed.iter().any(|s| s == id.as_str()) {
            continue;
        }
        let sig = jws_detached::sign(kubeconfig.as_bytes(), id.as_str(), key).unwrap_or_default();
        if old.remove(id.as_str()).as_deref() != Some(sig.as_str()) {
            update = true;
        }
        new.insert(format!("jws-kubeconfig-{id}"), sig);
        signed.push(id.as_str().to_owned());
    }
    (new, update || !old.is_empty(), signed)
}

fn signer_keys() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("kubeconfig".to_owned()),
        Just("jws-kubeconfig-".to_owned()),
        Just("jws-kubeconfig.".to_owned()),
        Just("jws-kubeconfiG-abcdef".to_owned()),
        Just("jws-kubeconfig".to_owned()),
        "[a-z]{1,3}",
        "jws-kubeconfig-[a-c0-1]{6}",
        "jws-kubeconfig-[a-z]{0,8}",
    ]
}

proptest! {
    #[test]
    fn proptest_reconcile_matches_the_reference_sync(
        entries in proptest::collection::vec((signer_keys(), "[a-zA-Z0-9._-]{0,12}"), 0..12),
        tokens in proptest::collection::vec(("[a-c0-1]{6}", "[a-z0-9]{1,16}", any::<bool>()), 0..8),
        resign_first in any::<bool>(),
    ) {
        let secrets: Vec<_> = tokens
            .iter()
            .map(|(id, secret, signing)| token_secret(id, secret, *signing, None))
            .collect();
        let mut data: BTreeMap<String, String> = entries.into_iter().collect();
        if resign_first {
            // Start from a signed map, so equal old signatures occur too.
            data = reconcile(&data, &secrets, now()).into_data();
        }
        let out = reconcile(&data, &secrets, now());
        let (want, update, signed) = reference_reconcile(&data, &secrets);
        prop_assert_eq!(out.data(), &want);
        prop_assert_eq!(out.update_needed(), update);
        let got: Vec<&str> = out.signed_token_ids().iter().map(|id| id.as_str()).collect();
        prop_assert_eq!(got, signed);
    }
}
