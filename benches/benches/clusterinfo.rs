//! `clusterinfo`: the bootstrap signer's reconcile over 10,000 tokens and a 2 KiB kubeconfig,
//! client-side verification of cluster-info, kubeconfig parsing and CA pinning, each beside its
//! floor (`baseline/...`: the raw primitive over the same bytes). No Rust peer implements the
//! bootstrap signer or kubeadm discovery; `naive/...` is the straightforward composition
//! (signing each token from scratch, re-encoding the kubeconfig every time).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bootstrap_token::SecretObject;
use clusterinfo::{CaBundle, ClusterInfo, ClusterInfoConfigMap, Pin};
use criterion::{Criterion, Throughput};
use hmac::{Hmac, Mac};
use k8s_bootstrap_benches::BENCH_KUBECONFIG;
use sha2::{Digest, Sha256};

const TOKENS: usize = 10_000;

/// A real CA certificate (from `vectors/pubkeypin.jsonl`), for the parse and pin groups.
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIC6DCCAdCgAwIBAgICA+gwDQYJKoZIhvcNAQELBQAwFTETMBEGA1UEAxMKa3Vi
ZXJuZXRlczAeFw0yNDAxMDEwMDAwMDBaFw0zNDAxMDEwMDAwMDBaMBUxEzARBgNV
BAMTCmt1YmVybmV0ZXMwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCq
TtzeK5cYFjHA6yPIcZdJYE3Dfnok7iXZx+ueNUBSU6PKsoiO5O+c/nup0YiW/Vfp
AA4nz//lzb2LtwtH5NT3q6rH16pHrm5HTdiGdAo/KelC6sJGV8anSjvUCJa8AxMb
O0Ccb35EVJDi3hxG3pByFfowbi5R16QZRIgcyiOTikBzdlXl4/Fn4uhlK+ySjXjI
ptNqkkDZg/GWmTiCtvn+4eRs8aUq3iR3ZwEekRCBb3+0SJy5WuQ7dbkSTOdW9PdU
gaEbjL8Syv627+wZYxZWfR/NX/zOVTXop2/ExneUJ3Qt1qoyAivy1iBxpun1sgu/
kylzDewn4miBDS+UmE4pAgMBAAGjQjBAMA4GA1UdDwEB/wQEAwICpDAPBgNVHRMB
Af8EBTADAQH/MB0GA1UdDgQWBBQ3s5YapfoR7ghFFCmIyDZqSFWnGzANBgkqhkiG
9w0BAQsFAAOCAQEAUYQwHvY5Z+74rAgrmor8mtEQ+6gegLMZSsff36u+tGiN7Vx/
Wyx1S9NUYtDYABiG62FDXnuzohzoj+PUTYT0t+FJYORcpyrALwuKpyyDWDrd0bSW
wljEPxY22D6HFFYJnDNYeg4e0Yd53INbPW8J1MSF7/iDQCh0QR8f3fo0CMWV7B9Q
tAtUQNH6fZI+ncSeM+jluYjnAZa8Rlzwt8LYQtXBEdfCzY0o+6RNOZYpxPO8HzV7
LppqE4pVMhdEEcE4MYBaXA3ITy+f4tUwsVI+80QWcRSI+3VM5Md8p9ZOiGArHwiE
W+AByYIihwfahm/xkRxZCdtZeMEWDa+lFYFTlg==
-----END CERTIFICATE-----
";

fn now() -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_secs(1_800_000_000))
        .unwrap_or(UNIX_EPOCH)
}

/// Token `i` as (id, secret): distinct 6-character IDs from `[a-z0-9]`.
fn token(i: usize) -> (String, String) {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::new();
    let mut n = i;
    for _ in 0..6 {
        id.push(char::from(CHARS.get(n % 36).copied().unwrap_or(b'a')));
        n /= 36;
    }
    let secret = format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (id, secret)
}

fn secrets() -> Vec<SecretObject> {
    (0..TOKENS)
        .map(|i| {
            let (id, secret) = token(i);
            let data: BTreeMap<String, Vec<u8>> = [
                ("token-id", id.as_str()),
                ("token-secret", secret.as_str()),
                ("usage-bootstrap-signing", "true"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
            .collect();
            SecretObject::new(
                format!("bootstrap-token-{id}"),
                "kube-system",
                "bootstrap.kubernetes.io/token",
                Some(data),
            )
        })
        .collect()
}

fn hmac_sha256(key: &[u8], input: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(input);
    mac.finalize().into_bytes().into()
}

fn header_b64(id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{{\"alg\":\"HS256\",\"kid\":\"{id}\"}}"))
}

fn reconcile(c: &mut Criterion) {
    let mut group = c.benchmark_group("signer_reconcile_10000_tokens_2KiB");
    group.sample_size(10);
    let kubeconfig = BENCH_KUBECONFIG;
    let secrets = secrets();
    let unsigned: BTreeMap<String, String> =
        [("kubeconfig".to_owned(), kubeconfig.to_owned())].into();
    let signed = clusterinfo::reconcile(&unsigned, &secrets, now()).into_data();
    let bytes = u64::try_from(kubeconfig.len().saturating_mul(TOKENS)).unwrap_or(u64::MAX);
    group.throughput(Throughput::Bytes(bytes));

    // The floor: 10,000 HMACs over precomputed signing inputs, nothing else.
    let payload = URL_SAFE_NO_PAD.encode(kubeconfig);
    let inputs: Vec<(Vec<u8>, Vec<u8>)> = (0..TOKENS)
        .map(|i| {
            let (id, secret) = token(i);
            (
                format!("{}.{payload}", header_b64(&id)).into_bytes(),
                secret.into_bytes(),
            )
        })
        .collect();
    group.bench_function("baseline/hmac_sha256", |b| {
        b.iter(|| {
            for (input, key) in &inputs {
                black_box(hmac_sha256(key, black_box(input)));
            }
        })
    });
    group.bench_function("ours/reconcile_fresh", |b| {
        b.iter(|| {
            black_box(clusterinfo::reconcile(
                black_box(&unsigned),
                &secrets,
                now(),
            ))
        })
    });
    group.bench_function("ours/reconcile_unchanged", |b| {
        b.iter(|| black_box(clusterinfo::reconcile(black_box(&signed), &secrets, now())))
    });
    // Where the time goes: the Secret checks alone, and the prepared-payload signatures alone.
    group.bench_function("part/signing_key_checks", |b| {
        b.iter(|| {
            for s in &secrets {
                black_box(s.signing_key(now()));
            }
        })
    });
    let prepared = jws_detached::PreparedPayload::new(kubeconfig.as_bytes())
        .unwrap_or_else(|_| unreachable!());
    let keys: Vec<(String, String)> = (0..TOKENS).map(token).collect();
    group.bench_function("part/prepared_payload_sign", |b| {
        b.iter(|| {
            for (id, key) in &keys {
                black_box(prepared.sign(id, key.as_bytes()).ok());
            }
        })
    });
    group.bench_function("naive/sign_each_token_from_scratch", |b| {
        b.iter(|| {
            let mut out = BTreeMap::new();
            for s in &secrets {
                if let Some((id, key)) = s.signing_key(now()) {
                    let sig = jws_detached::sign(kubeconfig.as_bytes(), id.as_str(), key);
                    out.insert(format!("jws-kubeconfig-{id}"), sig.unwrap_or_default());
                }
            }
            black_box(out)
        })
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("client_verify_cluster_info_2KiB");
    let info = ClusterInfo::new(
        "https://control-plane.example.internal:6443",
        CaBundle::from_pem(CA_PEM.as_bytes()).unwrap_or_else(|_| unreachable!()),
    )
    .unwrap_or_else(|_| unreachable!());
    let kubeconfig = info.to_kubeconfig_yaml();
    let (id, secret) = ("abcdef", "0123456789abcdef");
    let token: bootstrap_token::BootstrapToken = format!("{id}.{secret}")
        .parse()
        .unwrap_or_else(|_| unreachable!());
    let mut cm = ClusterInfoConfigMap::new(kubeconfig.clone());
    let sig = jws_detached::sign(kubeconfig.as_bytes(), id, secret.as_bytes())
        .unwrap_or_else(|_| unreachable!());
    let mut data = cm.data().clone();
    data.insert(format!("jws-kubeconfig-{id}"), sig);
    cm.set_data(data);
    let json = cm.to_json();
    group.throughput(Throughput::Bytes(
        u64::try_from(json.len()).unwrap_or(u64::MAX),
    ));
    let input = format!("{}.{}", header_b64(id), URL_SAFE_NO_PAD.encode(&kubeconfig)).into_bytes();
    group.bench_function("baseline/hmac_sha256", |b| {
        b.iter(|| black_box(hmac_sha256(secret.as_bytes(), black_box(&input))))
    });
    group.bench_function("ours/configmap_verify", |b| {
        b.iter(|| black_box(cm.verify(black_box(&token)).is_ok()))
    });
    group.bench_function("ours/json_parse_verify_kubeconfig_parse", |b| {
        b.iter(|| {
            let cm = ClusterInfoConfigMap::from_json(black_box(json.as_bytes()))
                .unwrap_or_else(|_| unreachable!());
            let k = cm.verify(&token).unwrap_or_else(|_| unreachable!());
            black_box(ClusterInfo::parse(k.as_bytes()).is_ok())
        })
    });
    group.bench_function("baseline/serde_json_configmap_parse", |b| {
        b.iter(|| black_box(serde_json::from_str::<serde_json::Value>(black_box(&json)).is_ok()))
    });
    group.finish();
}

fn pin(c: &mut Criterion) {
    let mut group = c.benchmark_group("ca_pin");
    let der = CA_PEM
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    let der = STANDARD.decode(der).unwrap_or_default();
    group.throughput(Throughput::Bytes(
        u64::try_from(CA_PEM.len()).unwrap_or(u64::MAX),
    ));
    group.bench_function("baseline/sha256_whole_der", |b| {
        b.iter(|| black_box(Sha256::digest(black_box(&der))))
    });
    group.bench_function("ours/pin_from_certificate_pem", |b| {
        b.iter(|| black_box(Pin::from_certificate_pem(black_box(CA_PEM.as_bytes())).is_ok()))
    });
    let text = "sha256:7b4b7a53f605e3cc72436416f73ceea5549e0e2ffacc8a2b9c20fd6083537503";
    group.bench_function("ours/pin_parse", |b| {
        b.iter(|| black_box(black_box(text).parse::<Pin>().is_ok()))
    });
    group.finish();
}

/// The groups of this file (what `criterion_group!` expands to, with a doc comment).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    reconcile(&mut c);
    verify(&mut c);
    pin(&mut c);
}

/// Runs the groups (what `criterion_main!` expands to, with a doc comment).
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
