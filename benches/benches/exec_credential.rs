//! `exec-credential`: the authenticator's cache-hit path, plugin-output parsing and validation,
//! and `KUBERNETES_EXEC_INFO` encoding/decoding, each beside its floor (`baseline/...`) in the
//! same run. No peer crate exposes an exec-credential cache or validator as a library API
//! (kube-rs keeps its types private), so there is no peer column.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use exec_credential::{
    Action, ApiVersion, Cluster, CredentialState, ExecAuthenticator, ExecConfig, ExecCredential,
    ExecCredentialSpec, InteractiveMode, RunResult,
};

const TOKEN_OUTPUT: &str = r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false},"status":{"expirationTimestamp":"2030-01-02T03:04:05Z","token":"k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9uPUdldENhbGxlcklkZW50aXR5JlZlcnNpb249MjAxMS0wNi0xNSZYLUFtei1BbGdvcml0aG09QVdTNC1ITUFDLVNIQTI1NiZYLUFtei1DcmVkZW50aWFsPUFLSUEmWC1BbXotRGF0ZT0yMDI0MDEwMlQwMzA0MDVaJlgtQW16LUV4cGlyZXM9NjA"}}"#;
const CERT: &str = include_str!("../../crates/exec-credential/tests/data/client1.crt");
const KEY: &str = include_str!("../../crates/exec-credential/tests/data/client1.key");

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

fn cert_output() -> String {
    ExecCredential::response(
        ApiVersion::V1,
        exec_credential::ExecCredentialStatus::with_client_certificate(
            CERT,
            exec_credential::ClientKey::new(KEY),
        )
        .expires_at(now() + Duration::from_secs(3600)),
    )
    .to_stdout()
}

fn cache_hit(c: &mut Criterion) {
    let mut g = c.benchmark_group("exec_credential/cache_hit");
    let mut auth = ExecAuthenticator::new(
        ExecConfig::new("plugin", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://127.0.0.1:6443"),
    )
    .unwrap();
    let _ = auth.credential(now()).unwrap();
    let Some(Action::RunPlugin(run)) = auth.poll_action() else {
        panic!("no run")
    };
    auth.handle_run_result(
        now(),
        run.id(),
        RunResult::Exited {
            code: 0,
            stdout: TOKEN_OUTPUT.as_bytes(),
            stderr: b"",
        },
    )
    .unwrap();
    let t = now() + Duration::from_secs(60);
    g.bench_function("ours/credential", |b| {
        b.iter(|| match auth.credential(black_box(t)).unwrap() {
            CredentialState::Ready(c) => c.token().is_some(),
            _ => false,
        })
    });
    // Floor: the expiry comparison alone, on an `Option<SystemTime>`.
    let expiry = Some(now() + Duration::from_secs(3600));
    g.bench_function("baseline/expiry_compare", |b| {
        b.iter(|| black_box(expiry).is_none_or(|e| black_box(t) <= e))
    });
    g.finish();
}

fn parse_output(c: &mut Criterion) {
    let cert = cert_output();
    for (name, input) in [("token", TOKEN_OUTPUT), ("client_cert", cert.as_str())] {
        let mut g = c.benchmark_group(format!("exec_credential/parse_output/{name}"));
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function("ours/from_plugin_output", |b| {
            b.iter(|| ExecCredential::from_plugin_output(black_box(input.as_bytes())).unwrap())
        });
        g.bench_function("ours/from_plugin_output+into_credential", |b| {
            b.iter(|| {
                ExecCredential::from_plugin_output(black_box(input.as_bytes()))
                    .unwrap()
                    .into_credential(ApiVersion::V1, now())
                    .unwrap()
            })
        });
        // Floor: decoding the same bytes into an untyped JSON value.
        g.bench_function("baseline/serde_json_value", |b| {
            b.iter(|| {
                serde_json::from_slice::<serde_json::Value>(black_box(input.as_bytes())).unwrap()
            })
        });
        g.finish();
    }
}

fn exec_info(c: &mut Criterion) {
    let ca = CERT.as_bytes().to_vec();
    let cluster = Cluster::new("https://127.0.0.1:6443")
        .with_certificate_authority_data(ca)
        .with_config(serde_json::json!({"audience": "loopback"}));
    let req = ExecCredential::request(
        ApiVersion::V1,
        ExecCredentialSpec::new(Some(cluster), false),
    );
    let info = req.to_exec_info();
    let mut g = c.benchmark_group("exec_credential/exec_info");
    g.throughput(Throughput::Bytes(info.len() as u64));
    g.bench_function("ours/to_exec_info", |b| {
        b.iter(|| black_box(&req).to_exec_info())
    });
    g.bench_function("ours/from_exec_info", |b| {
        b.iter(|| ExecCredential::from_exec_info(black_box(&info)).unwrap())
    });
    let value: serde_json::Value = serde_json::from_str(&info).unwrap();
    g.bench_function("baseline/serde_json_value_to_string", |b| {
        b.iter(|| serde_json::to_string(black_box(&value)).unwrap())
    });
    g.bench_function("baseline/serde_json_value_from_str", |b| {
        b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(&info)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, cache_hit, parse_output, exec_info);
criterion_main!(benches);
