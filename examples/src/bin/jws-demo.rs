//! Signs the realistic `cluster-info` kubeconfig as Kubernetes' bootstrap signer does, verifies
//! it in both modes, signs it for several tokens at once, and shows tampering being rejected.
//!
//! ```sh
//! cargo run -p k8s-bootstrap-examples --bin jws-demo
//! ```
//!
//! Exits non-zero if any check does not come out as expected.

use std::process::ExitCode;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jws_detached::{HmacKey, PreparedPayload, sign, verify, verify_kubernetes};

/// The kubeconfig kube-controller-manager would sign: one cluster, one CA certificate.
const KUBECONFIG: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../crates/clusterinfo/tests/vectors/bench_kubeconfig.yaml"
));

/// A demo bootstrap token `07401b.f395accd246ae52d` (the example token of the kubeadm docs).
const TOKEN_ID: &str = "07401b";
const TOKEN_SECRET: &str = "f395accd246ae52d";

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("jws-demo: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("jws-demo: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let key = HmacKey::try_from(TOKEN_SECRET)?;
    let content = KUBECONFIG.as_bytes();
    let server = KUBECONFIG
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap_or("?");
    println!(
        "kubeconfig: {} bytes, server {server}, one CA certificate",
        content.len()
    );
    println!("token: id {TOKEN_ID}, secret {key:?}");

    // 1. Sign, as the bootstrap signer writes `jws-kubeconfig-<token-id>`.
    let jws = sign(content, TOKEN_ID, key.expose_secret())?;
    let (header_b64, signature_b64) = jws.split_once("..").ok_or("no '..' in the JWS")?;
    let header = String::from_utf8(URL_SAFE_NO_PAD.decode(header_b64)?)?;
    println!("signed: jws-kubeconfig-{TOKEN_ID}: {jws}");
    println!(
        "  protected header {header}, payload segment empty (detached), {}-character HS256 signature",
        signature_b64.len()
    );
    expect(
        header == format!(r#"{{"alg":"HS256","kid":"{TOKEN_ID}"}}"#),
        "header is go-jose's",
    )?;

    // 2. Verify in both modes.
    verify_kubernetes(&jws, content, TOKEN_ID, key.expose_secret())?;
    println!("verified (Kubernetes mode: byte-identical to what kubeadm join recomputes)");
    verify(&jws, content, TOKEN_ID, key.expose_secret())?;
    println!("verified (standards mode: RFC 7515 with detached content)");

    // 3. One kubeconfig, many tokens: encode once, one HMAC per token.
    let payload = PreparedPayload::new(content)?;
    let tokens = [
        (TOKEN_ID, TOKEN_SECRET),
        ("abcdef", "0123456789abcdef"),
        ("9a08jv", "9fd2lmc0a7vvxyzq"),
    ];
    for (id, secret) in tokens {
        let sig = payload.sign(id, secret.as_bytes())?;
        verify_kubernetes(&sig, content, id, secret.as_bytes())?;
        println!("prepared payload: signed and verified jws-kubeconfig-{id}");
    }
    expect(
        payload.sign(TOKEN_ID, key.expose_secret())? == jws,
        "prepared signing equals one-shot signing",
    )?;

    // 4. Tampering is rejected.
    let moved = KUBECONFIG.replace(server, "https://attacker.example:6443");
    reject(
        "kubeconfig with a different server URL",
        verify_kubernetes(&jws, moved.as_bytes(), TOKEN_ID, key.expose_secret()),
    )?;
    let mut newline = content.to_vec();
    newline.push(b'\n');
    reject(
        "kubeconfig with one extra trailing newline",
        verify_kubernetes(&jws, &newline, TOKEN_ID, key.expose_secret()),
    )?;
    let mut flipped = jws.clone().into_bytes();
    if let Some(b) = flipped.get_mut(jws.len().saturating_sub(5)) {
        *b = if *b == b'A' { b'B' } else { b'A' };
    }
    reject(
        "signature with one character changed",
        verify_kubernetes(
            &String::from_utf8(flipped)?,
            content,
            TOKEN_ID,
            key.expose_secret(),
        ),
    )?;
    reject(
        "signature checked with the wrong token secret",
        verify_kubernetes(&jws, content, TOKEN_ID, b"0000000000000000"),
    )?;
    reject(
        "signature presented for another token id",
        verify_kubernetes(&jws, content, "abcdef", key.expose_secret()),
    )?;
    reject(
        "full compact JWS instead of the detached form",
        verify(
            &format!(
                "{header_b64}.{}.{signature_b64}",
                URL_SAFE_NO_PAD.encode(content)
            ),
            content,
            TOKEN_ID,
            key.expose_secret(),
        ),
    )?;
    reject(
        "signing with an empty token secret",
        sign(content, TOKEN_ID, b"").map(drop),
    )?;
    Ok(())
}

fn expect(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if ok {
        Ok(())
    } else {
        Err(format!("expected: {what}").into())
    }
}

fn reject(
    what: &str,
    result: Result<(), jws_detached::Error>,
) -> Result<(), Box<dyn std::error::Error>> {
    match result {
        Err(e) => {
            println!("rejected: {what}: {e}");
            Ok(())
        }
        Ok(()) => Err(format!("accepted {what}").into()),
    }
}
