//! What `Debug` prints for values that are large or may hold secrets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use exec_credential::Cluster;
use sha2::{Digest as _, Sha256};

const CERT1: &str = include_str!("data/client1.crt");
const CERT2: &str = include_str!("data/client2.crt");

#[test]
fn cluster_debug_summarises_the_ca_bundle() {
    let bundle = format!("{CERT1}{CERT2}");
    let cluster =
        Cluster::new("https://10.0.0.1:6443").with_certificate_authority_data(bundle.clone());
    let hex: String = Sha256::digest(bundle.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = format!(
        "certificate_authority_data: \"{} bytes, 2 PEM certificates, sha256:{hex}\"",
        bundle.len()
    );
    for debug in [format!("{cluster:?}"), format!("{cluster:#?}")] {
        assert!(debug.contains(&want), "{debug}");
        // Not the bytes as decimal numbers (`-----BEGIN` is 45, 45, ...).
        assert!(!debug.contains("45, 45"), "{debug}");
        assert!(debug.len() < 600, "{} characters: {debug}", debug.len());
        assert!(debug.contains("https://10.0.0.1:6443"));
    }
    let one = Cluster::new("s").with_certificate_authority_data(CERT1);
    assert!(format!("{one:?}").contains(" bytes, 1 PEM certificate, sha256:"));
    let none = Cluster::new("s");
    assert!(format!("{none:?}").contains("certificate_authority_data: \"empty\""));
    let not_pem = Cluster::new("s").with_certificate_authority_data(vec![0_u8; 3]);
    assert!(format!("{not_pem:?}").contains("\"3 bytes, 0 PEM certificates, sha256:"));
}
