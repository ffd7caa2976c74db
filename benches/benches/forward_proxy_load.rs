//! `k8s-bootstrap forward-proxy` under load, driven by `oha` (`cargo install oha`), in front
//! of a trivial upstream on loopback, beside that upstream alone in the same run, in two
//! configurations.
//!
//! The proxy serves plain HTTP here (`--insecure-listen-address`, given explicitly since TLS
//! became the default), as the upstream, nginx and HAProxy do, so the figures stay comparable
//! with the runs before TLS serving existed; TLS handshakes and record encryption are not
//! measured.
//!
//! * Shared cores (how a small node runs them: the proxy, oha and the upstream on all cores):
//!   maximum throughput (closed loop, 32 connections) for the upstream alone, through the proxy
//!   with a cached token, and with its verified-token cache off (every request verifies an
//!   Ed25519 signature); latency at a fixed rate (1,000 requests per second on 8 connections),
//!   upstream alone and through the proxy in alternating rounds; then a flood of forged tokens
//!   (a valid token's header and claims with another token's signature, so each costs a full
//!   check; 32 connections, as fast as they go) while valid requests run at the fixed rate,
//!   measured at once.
//! * The proxy on a core of its own (`taskset`; oha and the upstream on the others, in the bare
//!   rounds too), as a sidecar container has its own CPU: maximum throughput, upstream alone and
//!   through the proxy in alternating rounds.
//!
//! With `nginx` on PATH (Debian's `nginx-light`), nginx as a plain reverse proxy (keep-alive to
//! the upstream, no token check at all) is measured the same way, for reference.
//!
//! With `haproxy` on PATH (Debian's `haproxy`, 2.6), HAProxy checking the token itself with
//! `jwt_verify` (no cache: every request verifies an ES256 signature) is measured beside the
//! proxy with an ES256 key, cache on and off. Both are configured for the same checks: `alg`
//! pinned to ES256, the signature, `exp` present and in the future, `nbf` not in the future,
//! `iss`, `aud`, a non-empty `sub`; on success `X-Authenticated-User` is set from `sub`
//! (replacing any the client sent) and `Authorization` removed, otherwise 403. Before any
//! measurement, plain requests prove it of each (the proxy, EdDSA and ES256, and HAProxy): a
//! valid token reaches the upstream as the right user without `Authorization`; a token signed
//! by another key, an expired one, one for another audience, an `alg: none` one and one with
//! the signature cut off are refused with 403.
//!
//! Every load row also gives the CPU time (user + system: each thread's run time from
//! `/proc/<pid>/task/<tid>/schedstat`, in nanoseconds, summed over the process tree: nginx's
//! workers too) the proxy in front spent per request served, in µs;
//! on a busy machine it is steadier than the throughput. For the upstream alone it is the
//! bench process's own (the upstream's threads).
//!
//! The targets come first (shared cores, each a ratio of one run, in rounds that alternate which
//! of the two goes first): the proxy with a cached ES256 token against nginx, CPU per request
//! at full load and at 1,000 requests per second; and a signature check on every request
//! (cache off) against HAProxy's `jwt_verify`, ES256 and RS256 (RSA 2048), throughput and CPU
//! per request.
//!
//! The delegated modes (`SECTIONS=delegated`): the proxy with `--authentication=token-review`
//! against the API-server double (`loopback-apiserver`, in the bench's process; a
//! ServiceAccount bound by kubectl to a ClusterRole for `get /`, its token from `kubectl create
//! token`), over plain HTTP and over TLS (the double's serving certificate), each beside the
//! JWT mode (ES256, cached) over the same transport: CPU per request on the cached path
//! (target: at most 1.10× the JWT mode's); then a flood of unique invalid tokens (a new one per
//! request, on kept connections) at a proxy with `--review-rate-limit` (`REVIEW_RATE`, default
//! 50 per second; `--review-burst`: `REVIEW_BURST`, default 10), while the valid token is sent
//! at 1,000 requests per second: the reviews sent (counted by the double and by the proxy's
//! `/metrics`) against the rate's bound, the valid requests' p50 (target: under 0.2 ms), and
//! the proxy's resident memory before and after. kubectl must be on PATH.
//!
//! `cargo bench -p k8s-bootstrap-benches --bench forward_proxy_load` (skips, saying so, when
//! `oha` is not on PATH, after the probes). Environment: `LOAD_SECONDS` each run's length
//! (default 10); `ROUNDS` the alternating rounds (default 5); `SECTIONS` what to run, any of
//! `targets`, `load` and `delegated` (default all three); `PROXY_FEATURES` the features the
//! proxy is built with (default those of the shipped binary, [`SHIPPED`]); `VERIFY_SLOTS` the
//! proxy's `--max-concurrent-verifications` (default 0: its own default); `PROXY_CPU` the
//! proxy's own core (default the last).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "a benchmark program reads clocks and fails loudly"
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use addon_jwt::{Audience, Issuer, Minter, SigningKey};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use serde_json::Value;

const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
/// Another Ed25519 key: the forger's.
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICc9zbxY6YUCcG+uMmCFZ+XFiGcvOkLm5PrcCpqUUmh/\n\
-----END PRIVATE KEY-----\n";
/// ECDSA P-256 (`ES256`): the key the proxy and HAProxy are compared with.
const KEY_ES256: &str = "-----BEGIN PRIVATE KEY-----\n\
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmHaXCdSRbWGU2vgZ\n\
ZvqDWG4OKp7RU4U/6tp9pDHgA7ihRANCAARYPo3Ps5wcBMfFbCXpDAx8nTP9tBPx\n\
BHCZQHWsQO3CJOjghEywBA2NTUzX4w2JEi7CKgoDVzVdB3nYidqpl6N+\n\
-----END PRIVATE KEY-----\n";
/// Another P-256 key: the forger's.
const OTHER_ES256: &str = "-----BEGIN PRIVATE KEY-----\n\
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8ab+s8gy/DAO80k+\n\
vZnzqoKXLnR62Tk7IS3vt1inY+uhRANCAAQeH0fvC1IeMobbqYSbuZqfxueXsDBi\n\
ut4NTbznb8/iF8zS3N/4uXnadVKjo+R+YVvzVQsW5YSVDAb/0vWyrdE5\n\
-----END PRIVATE KEY-----\n";
/// RSA 2048 (`RS256`): the key the proxy and HAProxy are compared with for RSA.
const KEY_RS256: &str = "-----BEGIN PRIVATE KEY-----\n\
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDNfm3akPArQyyq\n\
DqBf+chdUBrB/1typJRrPkGktMpahIrLO0PXhqe+ebLi1bic1DediFRp1QBMJpTy\n\
aBTpBsqYbHhvxSq3SJZ84lGaQ+AXxDq61qKORQekn8Vfrn3pf/GP/OgIpQK447Lk\n\
zuQv/vuL0I0m1PkuJI0gCcge7a7T3wqwC0Sh83IlQl8wCtGp7i0E3vgP0ULhTnih\n\
JpLe6UOMaJQoDJPmCRRAwEDdkLjppbbiun8WprXVC53Md6ze6Btq4VeCu9z3BV+9\n\
gXVMgOPgGBvxnUsEuLPNQswMJkB0SyudOzFJyJb5XEHGzxBDg7K6FiyCUrv+F9GQ\n\
EqRtyVf7AgMBAAECggEANQDPRPjtebsx4gszwo2i6K6ouDEtXTymK6M7O0iGiSJ2\n\
ykTXEthgm/i381o86/axAakQXNvb38hz0rKV8iUWTIpt5iZtBilq53tYoPmw63Bp\n\
1ZdXBms3tXagajWPtJKTtBf/oXsuYJIaqnnS0a5rI3z/a2yzePtki0b6nz+fQHZo\n\
6R/angPjZ8O5v8HzVUhTnKb7j/WhjtCMYzgyBtQ6YkQBtZFuxBp/G6jcau612HB4\n\
Xh3RvYlZA5vFcD2uqcJD94a49fYRdj419YDlwXSEFJy11o8fgjp4YnnVgx8yNSn1\n\
6xqzaDIuONk1pdm8i4yta7B2RsAxG1z4Vnxc/9oowQKBgQDqw4R0hoVE2mhoVdFO\n\
UCJ0X6RMjOoRsCIXGDRmaspOCddJgw0yHaBgMgiM8e7SBhoCIw4qqvM32i1UOXvD\n\
fvtEUKe22BIq6IQ/omodCGHUtldqIzbLsQFczkLRed8P2DRCr03OlAWjGTe/qyiA\n\
NP3BrA20N6w/S8hAJaP0w2m9lQKBgQDgFRoUl4P2mKVcNMraG/ORUN29s1jP9WmE\n\
Acn98efvt6hfN4wZIJctmofYc6RQL2oDR0XVw17TrrXtUItBGWYmjYYRohNZ6W+d\n\
kN71XkGgKxLM5Tk2+icgR8fDXvVUZ88Et+IFA3VQ/2i9uvp8l4fdixjLx3aDEFsk\n\
kQJxNPy7TwKBgQCPsru547lhatrrulPSvsRIPV7BKKQBzbEgN8WjRwyr9eQccCY8\n\
ndvT5exL8a7ASdHTqwd54IfdkSOb4U+7W1eL+l6eUeXU89w3Yz/Wo5HWdQJOyl05\n\
ExCFcQ9/TzzVYv6iLtHOd9Z3ffEc1jSFPWpyCNGelVFOsSFS+ndAU/i+fQKBgAIw\n\
MpEA6cj+tJ6x5Uk7/KTupTu1BKkDPISNf+t68UjmAj7ry/Jy3wcS+0Ch4Hjn/aEK\n\
kSQFRGfMzPoET1fTZ6v4tdZ2ProiDXT8dTDwOrPVt9lIY8alqrwl901xH/QzD1J8\n\
eTiTUBH6bIttyARvdmQzd4qF6CJfhoRU5jE000MBAoGAGlu93CXLJ7QKYDObsO4P\n\
txF0E/B6zxwHN2kcZCesjr5R5RFl0+/G19SZsfQ46j+AbcZ/lnoh9DN7q2uq48xe\n\
DmPyJq6mutDMmZOh6ymRZi5SgQhNcLntV8GO/sI64RaC/QwFFIDzKNs98J0OPoKc\n\
f8MTSUNpSxMFwsPzZnB6Eqg=\n\
-----END PRIVATE KEY-----\n";
/// Its public key (`openssl pkey -pubout`).
const KEY_RS256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\n\
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAzX5t2pDwK0Msqg6gX/nI\n\
XVAawf9bcqSUaz5BpLTKWoSKyztD14anvnmy4tW4nNQ3nYhUadUATCaU8mgU6QbK\n\
mGx4b8Uqt0iWfOJRmkPgF8Q6utaijkUHpJ/FX6596X/xj/zoCKUCuOOy5M7kL/77\n\
i9CNJtT5LiSNIAnIHu2u098KsAtEofNyJUJfMArRqe4tBN74D9FC4U54oSaS3ulD\n\
jGiUKAyT5gkUQMBA3ZC46aW24rp/Fqa11QudzHes3ugbauFXgrvc9wVfvYF1TIDj\n\
4Bgb8Z1LBLizzULMDCZAdEsrnTsxSciW+VxBxs8QQ4OyuhYsglK7/hfRkBKkbclX\n\
+wIDAQAB\n\
-----END PUBLIC KEY-----\n";
/// Another RSA 2048 key: the forger's.
const OTHER_RS256: &str = "-----BEGIN PRIVATE KEY-----\n\
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCjzYprqxiruLMG\n\
MKGI72CQhiy4zoJovpWUOZuVI8Ky3RyMturKFYq6uspqd6cB8kSTFOdcjlaF/uXQ\n\
6Je6MFJfWxjreDCD44VICD9LgAb/ITjqNx18mnQIwXHajSTcAM2/Slw7al/GeVL1\n\
2D9Rbbzsz/jILtMhEAs1u4iDugyGuB1e8Pfqzms5R4c4wE1DnNpjUzmom94WEoZ4\n\
ODQSrFNGSu3xI054m0OLIiBh9jLDu5GQHwcPzCCSvSVRnxpaxw/p6FtxmFXX6JbP\n\
siyuLy/dUpDB9n59Y9C+RTSWTqzXj0p9Mjpu7qsiBriW4UH6nYhetH04R2NKLuPX\n\
a6mCoemxAgMBAAECggEAA8T+S1BX1Cp/HYSEpcuTG9BSpXrEdSz0RpcgIEmp4zGD\n\
xNiNb6gY61zSvVTSkuYPM5lMDQ0OKwLnfqwTmHUgjXw3BxgwJEuEl4NFEvONIFWU\n\
jeNFz5vC/ClDeaWSNGk6UuLJsOkCROV+22nQueAoya8BiSMhYwXk/tAO1K/f4OvA\n\
oR3MBXw4QdhqTukLJcTYBGQPvUlkxJf5CLMvLmIQtH/Wbw5PnU9cn9dK5V9W+MWR\n\
eE/sgthHX7h2J+l5tRiARInkckq6gSg/fCY+5e7vtHU8NqVhzzQFNVMyu2vjwTKa\n\
MC6wztngYPoo5loQMGO4447HNDcNarD7EWYjBsG49wKBgQDda2pBnSXtLjPXjw9c\n\
pFs1BEYz4wh1ZocU125aYZmcxq33coeezalQQbGWv7zFui2r9Sw04IDtFNMEq9it\n\
CnMvWzaraEGSaJ/U7m98qDpSTTCkDc3/a+vR0Haqm/DUK9ciP2VD95FI0U8jxmh+\n\
QxjhB4XRq6j0gYLg0lM6jKAHDwKBgQC9YoziY3UapeGOymuIoUt4hPmX3Glx6Rpm\n\
56zt76qPlpPkmtQnOxa9MIBliQ/6hu49x0wxMediOkzTUrEwXTiSYl03CQ36ep01\n\
Wb0QWZxvOFRH4ClwANWm8ZXV1STeLC6g6IaMrmo3l+Omfm+QLgN17R8YIQshZYDL\n\
7jr13iUDPwKBgQCFhtuDSiOvDufQnMNk2PDv3e4AKG/XbMcVeH1iH+2lL+OFkBnd\n\
WKU8cwGHqYVLsGUOiEHqeWEGmEJRVNjMMbsY2eb0I2E3y8RngorVIBZbv5UPugt6\n\
dzi1RQPrCzOGoBGS46xL+qYwxZj2OBaX3hrIyeKXeO/g06F7txrd+iQfXQKBgDtY\n\
u59h3VuJaeJuKj55lQXiXbip+F0a2AwxQ26YcRFn9VZo8lyM1rZYkZO/3ML8L4Iq\n\
hwTPh5uve02plx75x3WP33gUnU3FyKfkRCvweOYdd8PCShnwGQOkpviIP3Jj1ATW\n\
ePty2JQtQ8hzzJAY6zq0IM9V44AGp9LAB7fuchjPAoGBAIDXaTHjcrNad38+0I0Y\n\
U5kooDUUlMEfQ4bvFSDYjZLa2L6OwK3bTTivYE/Y5/zZfqBerm2SMY2JNDZA1onj\n\
1TrmGlCsa+mjx6i40VD29sXiW632WaAN0L1bq9qJLRnAgEyAOF3pXQES45IgZPgt\n\
ZknhZrtKyRVE+62C6rJE4LKP\n\
-----END PRIVATE KEY-----\n";
use k8s_bootstrap_benches::{
    PROXY_AUDIENCE as AUDIENCE, PROXY_ISSUER as ISSUER, SHIPPED_FEATURES as SHIPPED, free_addr,
    start_listening,
};

/// The upstream: answers every request `200 ok` (hyper, one worker thread); `GET /whoami`
/// (the probes only) answers `<X-Authenticated-User>;authorization=<present>`.
fn start_upstream() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        |req: hyper::Request<hyper::body::Incoming>| async move {
                            let body = if req.uri().path() == "/whoami" {
                                let user = req
                                    .headers()
                                    .get_all("x-authenticated-user")
                                    .iter()
                                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                                    .collect::<Vec<_>>()
                                    .join(",");
                                Bytes::from(format!(
                                    "{user};authorization={}",
                                    req.headers().contains_key("authorization")
                                ))
                            } else {
                                Bytes::from_static(b"ok")
                            };
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(body)))
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    addr
}

/// `command`, on core `cpu` only when given.
fn on_cpu(cpu: Option<usize>, program: &Path) -> Command {
    match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string()]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn start_proxy(
    binary: &Path,
    upstream: SocketAddr,
    key_file: &Path,
    algorithm: &str,
    cache: usize,
    cpu: Option<usize>,
) -> (Child, SocketAddr) {
    start_listening("the proxy", |listen| {
        on_cpu(cpu, binary)
            .args([
                "forward-proxy",
                &format!("--insecure-listen-address={listen}"),
                &format!("--forward={upstream}"),
                &format!("--issuer={ISSUER}"),
                &format!("--audience={AUDIENCE}"),
                &format!("--public-key-file={}", key_file.display()),
                &format!("--algorithm={algorithm}"),
                &format!("--verified-cache-size={cache}"),
                &format!(
                    "--max-concurrent-verifications={}",
                    std::env::var("VERIFY_SLOTS").unwrap_or_else(|_| "0".to_owned())
                ),
                &format!("--http-address={}", free_addr()),
            ])
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    })
}

/// nginx as a plain reverse proxy in front of `upstream` (keep-alive to it, no token check),
/// when `nginx` is on PATH: one worker per core it may use.
fn start_nginx(
    dir: &Path,
    upstream: SocketAddr,
    cpu: Option<usize>,
) -> Option<(Child, SocketAddr)> {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists())?;
    let workers = if cpu.is_some() { "1" } else { "auto" };
    Some(start_listening("nginx", |listen| {
        let conf = format!(
            "worker_processes {workers};\ndaemon off;\nerror_log {dir}/error.log;\npid {dir}/nginx.pid;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {dir};\n  proxy_temp_path {dir};\n\
         upstream addon {{ server {upstream}; keepalive 64; }}\n\
         server {{\n    listen {listen};\n    location / {{\n      proxy_pass http://addon;\n\
         proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
         proxy_set_header Authorization \"\";\n      proxy_set_header X-Authenticated-User jane;\n    }}\n  }}\n}}\n",
            dir = dir.display()
        );
        let conf_file = dir.join("nginx.conf");
        std::fs::write(&conf_file, conf).unwrap();
        on_cpu(cpu, nginx)
            .arg("-c")
            .arg(&conf_file)
            .arg("-p")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }))
}

/// HAProxy checking the token itself (`jwt_verify`, `alg` (ES256 or RS256), no cache) in front of `upstream`,
/// when `haproxy` is on PATH: one thread per core it may use. The same checks as the proxy's:
/// see the header of this file.
fn start_haproxy(
    dir: &Path,
    upstream: SocketAddr,
    public_key_file: &Path,
    alg: &str,
    cpu: Option<usize>,
) -> Option<(Child, SocketAddr)> {
    let haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists())?;
    let threads = if cpu.is_some() { "  nbthread 1\n" } else { "" };
    Some(start_listening("haproxy", |listen| {
        // A failed fetch (no bearer token, no such claim, not a number) leaves the variable unset:
        // an `unless` rule then denies.
        let conf = format!(
            "global\n{threads}  maxconn 4096\n\
         defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
         frontend addon\n  bind {listen}\n\
         \x20 http-request set-var(txn.bearer) http_auth_bearer\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.bearer),jwt_header_query('$.alg') -m str {alg} }}\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.bearer),jwt_verify(\"{alg}\",\"{key}\") -m int 1 }}\n\
         \x20 http-request set-var(txn.now) date\n\
         \x20 http-request set-var(txn.exp) var(txn.bearer),jwt_payload_query('$.exp','int')\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.exp),sub(txn.now) -m int gt 0 }}\n\
         \x20 http-request set-var(txn.nbf) var(txn.bearer),jwt_payload_query('$.nbf','int')\n\
         \x20 http-request deny deny_status 403 if {{ var(txn.nbf),sub(txn.now) -m int gt 0 }}\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.bearer),jwt_payload_query('$.iss') -m str {ISSUER} }}\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.bearer),jwt_payload_query('$.aud') -m str {AUDIENCE} }} || {{ var(txn.bearer),jwt_payload_query('$.aud[0]') -m str {AUDIENCE} }}\n\
         \x20 http-request set-var(txn.sub) var(txn.bearer),jwt_payload_query('$.sub')\n\
         \x20 http-request deny deny_status 403 unless {{ var(txn.sub) -m len gt 0 }}\n\
         \x20 http-request set-header X-Authenticated-User %[var(txn.sub)]\n\
         \x20 http-request del-header Authorization\n\
         \x20 default_backend addon\n\
         backend addon\n  http-reuse always\n  server upstream {upstream}\n",
            key = public_key_file.display()
        );
        let conf_file = dir.join("haproxy.cfg");
        std::fs::write(&conf_file, conf).unwrap();
        on_cpu(cpu, haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&conf_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }))
}

fn haproxy_version() -> String {
    Command::new("haproxy")
        .arg("-v")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(2))
                .map(|v| format!("HAProxy {v}"))
        })
        .unwrap_or_default()
}

/// One plain HTTP/1.1 request (`Connection: close`) for the probes: the status and the body.
fn probe(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    // A chunked body: keep its data line (the probes' bodies are one short chunk).
    let body = if text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body.lines().nth(1).unwrap_or_default().to_owned()
    } else {
        body
    };
    (status, body)
}

/// The tokens the probes send, all for user `jane` unless said otherwise.
struct Probes {
    valid: String,
    /// Signed by another key of the same algorithm.
    other_key: String,
    expired: String,
    wrong_audience: String,
    /// `alg: none` and no signature.
    unsigned: String,
    /// The valid token with its signature cut off (`header.claims.`).
    no_signature: String,
}

impl Probes {
    /// The probes for a key `SigningKey` can sign with (EdDSA, ES256).
    fn new(key_pem: &str, other_pem: &str) -> Probes {
        Probes::minted_by(key_pem, other_pem, |pem, audience, at| {
            Minter::new(
                SigningKey::from_pkcs8_pem(pem).unwrap(),
                Issuer::new(ISSUER),
            )
            .ttl(Duration::from_secs(3600))
            .mint("jane", &Audience::new(audience), at)
            .unwrap()
            .expose_secret()
            .to_owned()
        })
    }

    /// The probes for RSA keys (`RS256`), signed by `jsonwebtoken` with the claims `Minter`
    /// writes.
    fn rs256(key_pem: &str, other_pem: &str) -> Probes {
        Probes::minted_by(key_pem, other_pem, |pem, audience, at| {
            let iat = at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
            let claims = serde_json::json!({
                "iss": ISSUER, "sub": "jane", "aud": audience,
                "iat": iat, "nbf": iat, "exp": iat + 3600,
            });
            jsonwebtoken::encode(
                &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
                &claims,
                &jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
            )
            .unwrap()
        })
    }

    /// The probes, each token made by `mint(private key PEM, audience, issued at)`.
    fn minted_by(
        key_pem: &str,
        other_pem: &str,
        mint: impl Fn(&str, &str, SystemTime) -> String,
    ) -> Probes {
        let now = SystemTime::now();
        let valid = mint(key_pem, AUDIENCE, now);
        let (signed, _) = valid.rsplit_once('.').unwrap();
        let (_, claims) = signed.split_once('.').unwrap();
        let none = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"none","typ":"JWT"}"#);
        Probes {
            other_key: mint(other_pem, AUDIENCE, now),
            expired: mint(key_pem, AUDIENCE, now - Duration::from_secs(7200)),
            wrong_audience: mint(key_pem, "kube-system/other", now),
            unsigned: format!("{none}.{claims}."),
            no_signature: format!("{signed}."),
            valid,
        }
    }

    /// Sends each token to `addr` and fails loudly unless only the valid one passes, as
    /// `jane`, without `Authorization`, over a client-supplied `X-Authenticated-User`.
    fn check(&self, what: &str, addr: SocketAddr) {
        let bearer = |t: &str| format!("Bearer {t}");
        let (status, body) = probe(
            addr,
            "/whoami",
            &[
                ("Authorization", &bearer(&self.valid)),
                ("X-Authenticated-User", "mallory"),
            ],
        );
        assert_eq!(
            (status, body.as_str()),
            (200, "jane;authorization=false"),
            "{what}: a valid token"
        );
        for (case, token) in [
            ("signed by another key", &self.other_key),
            ("expired", &self.expired),
            ("for another audience", &self.wrong_audience),
            ("alg none, unsigned", &self.unsigned),
            ("signature cut off", &self.no_signature),
        ] {
            let (status, _) = probe(addr, "/whoami", &[("Authorization", &bearer(token))]);
            assert_eq!(status, 403, "{what}: a token {case}");
        }
        println!(
            "{what}: valid token passes as jane (Authorization removed, client X-Authenticated-User replaced); \
             other key, expired, other audience, alg none, signature cut off: 403"
        );
    }
}

/// The parent of a process, from `/proc/<pid>/stat`.
fn parent(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name, in parentheses that may hold anything: state, ppid, ...
    let (_, rest) = text.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Nanoseconds a process's threads have run on a CPU (user and system), the sum of the first
/// field of each `/proc/<pid>/task/<tid>/schedstat`: nanosecond resolution, where
/// `/proc/<pid>/stat` counts 10 ms ticks.
fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// CPU nanoseconds (user + system) of `root` and all its live descendants (nginx's workers).
fn tree_cpu_ns(root: u32) -> u64 {
    let mut processes = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok());
        if let Some((pid, ppid)) = pid.and_then(|p| Some((p, parent(p)?))) {
            processes.push((pid, ppid));
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let pid = tree[i];
        for (p, ppid) in &processes {
            if *ppid == pid && !tree.contains(p) {
                tree.push(*p);
            }
        }
        i += 1;
    }
    tree.iter().map(|pid| process_cpu_ns(*pid)).sum()
}

fn nginx_version() -> String {
    Command::new("nginx")
        .arg("-v")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .replace("nginx version: ", "")
        })
        .unwrap_or_default()
}

/// Runs oha and returns its process (its JSON summary on stdout).
fn oha(url: &str, token: &str, connections: u32, rate: Option<u32>, seconds: u64) -> Child {
    let mut cmd = Command::new("oha");
    cmd.args([
        "--no-tui",
        "--output-format",
        "json",
        "-z",
        &format!("{seconds}s"),
        "-c",
        &connections.to_string(),
        "-H",
        &format!("Authorization: Bearer {token}"),
    ]);
    if let Some(q) = rate {
        cmd.args(["-q", &q.to_string()]);
    }
    if url.starts_with("https://") {
        // The double's CA signed the proxy's certificate; the handshake is the same.
        cmd.arg("--insecure");
    }
    cmd.arg(url).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.spawn().unwrap()
}

struct Stats {
    rps: f64,
    p50: f64,
    p99: f64,
    ok: u64,
    forbidden: u64,
    /// All responses.
    served: u64,
    /// CPU µs per response served of the process tree measured, when one was.
    cpu_us: Option<f64>,
}

fn stats(child: Child) -> Stats {
    let output = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "oha output is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let codes = &v["statusCodeDistribution"];
    Stats {
        rps: v["summary"]["requestsPerSec"].as_f64().unwrap_or(0.0),
        p50: v["latencyPercentiles"]["p50"].as_f64().unwrap_or(f64::NAN),
        p99: v["latencyPercentiles"]["p99"].as_f64().unwrap_or(f64::NAN),
        ok: codes["200"].as_u64().unwrap_or(0),
        forbidden: codes["403"].as_u64().unwrap_or(0),
        served: codes
            .as_object()
            .map_or(0, |o| o.values().filter_map(Value::as_u64).sum()),
        cpu_us: None,
    }
}

/// `stats` of `child`, with the CPU per request `pid`'s process tree spent meanwhile.
fn stats_cpu(child: Child, pid: u32, ns_before: u64) -> Stats {
    let mut s = stats(child);
    let ns = tree_cpu_ns(pid).saturating_sub(ns_before);
    if s.served > 0 {
        s.cpu_us = Some(ns as f64 / 1e3 / s.served as f64);
    }
    s
}

/// One oha run against `url` with valid tokens: every request must be answered 200. The CPU
/// per request of `pid`'s process tree (the proxy in front) is measured.
fn measure(
    url: &str,
    token: &str,
    connections: u32,
    rate: Option<u32>,
    seconds: u64,
    pid: u32,
) -> Stats {
    let before = tree_cpu_ns(pid);
    let s = stats_cpu(oha(url, token, connections, rate, seconds), pid, before);
    assert!(
        s.ok > 0 && s.forbidden == 0,
        "{url}: {} ok, {} forbidden",
        s.ok,
        s.forbidden
    );
    s
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Moves this process (the upstream's threads, and oha, which inherits it) to every core but
/// `cpu` (`Some`), or back to all of them (`None`).
fn pin_self(away_from: Option<usize>) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let list: Vec<String> = (0..cpus)
        .filter(|c| Some(*c) != away_from)
        .map(|c| c.to_string())
        .collect();
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", &list.join(",")])
        .arg(std::process::id().to_string())
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux)");
    assert!(status.success(), "taskset failed");
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

fn cpu_per_request(s: &Stats) -> String {
    s.cpu_us
        .map_or_else(|| "-".to_owned(), |c| format!("{c:.1} µs"))
}

fn row(name: &str, s: &Stats) -> String {
    format!(
        "| {name} | {:.0} | {} | {} | {} |",
        s.rps,
        ms(s.p50),
        ms(s.p99),
        cpu_per_request(s)
    )
}

/// Stops a peer or proxy: SIGTERM first (nginx's master then stops its workers, which a
/// SIGKILL of the master would leave running), SIGKILL after 5 s.
fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    for _ in 0..250 {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    if !k8s_bootstrap_benches::selected("forward_proxy_load") {
        return;
    }
    let env = k8s_bootstrap_benches::env_u64;
    let seconds = env("LOAD_SECONDS", 10);
    let rounds = env("ROUNDS", 5).max(1);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let proxy_cpu = (cpus > 1).then(|| {
        std::env::var("PROXY_CPU")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cpus - 1)
    });
    let features = std::env::var("PROXY_FEATURES").unwrap_or_else(|_| SHIPPED.to_owned());
    let binary = k8s_bootstrap_benches::build_cli(&features);
    let sections =
        std::env::var("SECTIONS").unwrap_or_else(|_| "targets,load,delegated".to_owned());
    let section = |name: &str| sections.split(',').any(|s| s == name);
    let upstream = start_upstream();
    let key = SigningKey::from_pkcs8_pem(KEY).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key.pem");
    std::fs::write(&key_file, key.public_key_pem().unwrap()).unwrap();
    let es256_file = dir.path().join("es256.pem");
    std::fs::write(
        &es256_file,
        SigningKey::from_pkcs8_pem(KEY_ES256)
            .unwrap()
            .public_key_pem()
            .unwrap(),
    )
    .unwrap();
    let token = Minter::new(key, Issuer::new(ISSUER))
        .ttl(Duration::from_secs(3600))
        .mint("jane", &Audience::new(AUDIENCE), SystemTime::now())
        .unwrap()
        .expose_secret()
        .to_owned();
    // The valid token's header and claims with the signature of another token (same key, other
    // subject): a well-formed Ed25519 signature that fails only at the end of a full check. (An
    // all-zero signature would be refused before any curve arithmetic, a cheaper forgery.)
    let other = Minter::new(
        SigningKey::from_pkcs8_pem(KEY).unwrap(),
        Issuer::new(ISSUER),
    )
    .ttl(Duration::from_secs(3600))
    .mint("mallory", &Audience::new(AUDIENCE), SystemTime::now())
    .unwrap()
    .expose_secret()
    .to_owned();
    let (signed, _) = token.rsplit_once('.').unwrap();
    let (_, other_signature) = other.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{other_signature}");
    let ed_probes = Probes::new(KEY, OTHER_KEY);
    let es_probes = Probes::new(KEY_ES256, OTHER_ES256);
    let es_token = es_probes.valid.clone();
    let url = |addr: SocketAddr| format!("http://{addr}/");
    let nginx_dir = tempfile::tempdir().unwrap();
    let haproxy_dir = tempfile::tempdir().unwrap();

    // Shared cores.
    let (mut cached, cached_addr) = start_proxy(&binary, upstream, &key_file, "EdDSA", 4096, None);
    let (mut uncached, uncached_addr) = start_proxy(&binary, upstream, &key_file, "EdDSA", 0, None);
    let (mut es_cached, es_cached_addr) =
        start_proxy(&binary, upstream, &es256_file, "ES256", 4096, None);
    let (mut es_uncached, es_uncached_addr) =
        start_proxy(&binary, upstream, &es256_file, "ES256", 0, None);
    let mut nginx = start_nginx(nginx_dir.path(), upstream, None);
    let mut haproxy = start_haproxy(haproxy_dir.path(), upstream, &es256_file, "ES256", None);
    let haproxy_name = haproxy_version();

    // The probes: each does the same checks, before anything is measured.
    ed_probes.check("proxy, EdDSA, cached", cached_addr);
    ed_probes.check("proxy, EdDSA, cache off", uncached_addr);
    es_probes.check("proxy, ES256, cached", es_cached_addr);
    es_probes.check("proxy, ES256, cache off", es_uncached_addr);
    if let Some((_, addr)) = &haproxy {
        es_probes.check(&format!("{haproxy_name} jwt_verify, ES256"), *addr);
    } else {
        println!("forward_proxy_load: `haproxy` is not installed, HAProxy is not measured");
    }
    let jwt = Jwt {
        binary: &binary,
        upstream,
        public_key_file: &es256_file,
        token: &es_token,
        plain: es_cached_addr,
        plain_pid: es_cached.id(),
        seconds,
        rounds,
        features: &features,
    };
    if Command::new("oha").arg("--version").output().is_err() {
        if section("delegated") {
            // Its set-up and probes still run; it stops before measuring.
            delegated(&jwt);
        }
        println!("forward_proxy_load: skipped, `oha` is not on PATH (cargo install oha --locked)");
        for child in [&mut cached, &mut uncached, &mut es_cached, &mut es_uncached] {
            stop(child);
        }
        for (child, _) in nginx.iter_mut().chain(haproxy.iter_mut()) {
            stop(child);
        }
        return;
    }
    let me = std::process::id();

    if section("targets") {
        let rs256_file = dir.path().join("rs256.pem");
        std::fs::write(&rs256_file, KEY_RS256_PUBLIC).unwrap();
        let rs_probes = Probes::rs256(KEY_RS256, OTHER_RS256);
        let (mut rs_uncached, rs_uncached_addr) =
            start_proxy(&binary, upstream, &rs256_file, "RS256", 0, None);
        rs_probes.check("proxy, RS256, cache off", rs_uncached_addr);
        let rs_dir = tempfile::tempdir().unwrap();
        let mut haproxy_rs = start_haproxy(rs_dir.path(), upstream, &rs256_file, "RS256", None);
        let mut pairs = Vec::new();
        if let Some((child, addr)) = &nginx {
            for (connections, rate, target) in [
                (32, None, "CPU per request at most 1.10×"),
                (8, Some(1000), "CPU per request at most 1.25×"),
            ] {
                pairs.push(Pair {
                    what: "Cached token (ES256), against nginx as a plain proxy (no token check)",
                    target,
                    proxy: url(es_cached_addr),
                    proxy_pid: es_cached.id(),
                    peer: url(*addr),
                    peer_pid: child.id(),
                    peer_name: nginx_version(),
                    token: &es_token,
                    peer_token: &es_token,
                    connections,
                    rate,
                });
            }
        } else {
            println!(
                "forward_proxy_load: `nginx` is not installed, the cached-token targets are not measured"
            );
        }
        for (haproxy, addr, pid, token, what) in [
            (
                &haproxy,
                es_uncached_addr,
                es_uncached.id(),
                &es_token,
                "ES256",
            ),
            (
                &haproxy_rs,
                rs_uncached_addr,
                rs_uncached.id(),
                &rs_probes.valid,
                "RS256",
            ),
        ] {
            if let Some((child, peer)) = haproxy {
                if what == "RS256" {
                    rs_probes.check(&format!("{haproxy_name} jwt_verify, RS256"), *peer);
                }
                pairs.push(Pair {
                    what: if what == "ES256" {
                        "A signature check on every request (ES256, cache off), against HAProxy's jwt_verify"
                    } else {
                        "A signature check on every request (RS256, cache off), against HAProxy's jwt_verify"
                    },
                    target: "throughput at least 1.00× at CPU per request at most 1.00×",
                    proxy: url(addr),
                    proxy_pid: pid,
                    peer: url(*peer),
                    peer_pid: child.id(),
                    peer_name: haproxy_name.clone(),
                    token,
                    peer_token: token,
                    connections: 32,
                    rate: None,
                });
            }
        }
        let report = targets(&pairs, seconds, rounds);
        println!(
            "forward_proxy_load: targets, the proxy built with --features {features}; {seconds} s per run, {rounds} rounds, {cpus} CPUs"
        );
        println!("{report}");
        stop(&mut rs_uncached);
        for (child, _) in haproxy_rs.iter_mut() {
            stop(child);
        }
    }
    if section("delegated") {
        delegated(&jwt);
    }
    if !section("load") {
        for child in [&mut cached, &mut uncached, &mut es_cached, &mut es_uncached] {
            stop(child);
        }
        for (child, _) in nginx.iter_mut().chain(haproxy.iter_mut()) {
            stop(child);
        }
        return;
    }

    let mut shared = Vec::new();
    let bare_max = measure(&url(upstream), &token, 32, None, seconds, me);
    shared.push(row("upstream alone, max rate, 32 connections", &bare_max));
    let cached_max = measure(&url(cached_addr), &token, 32, None, seconds, cached.id());
    shared.push(row(
        "proxy, cached token, max rate, 32 connections",
        &cached_max,
    ));
    let uncached_max = measure(
        &url(uncached_addr),
        &token,
        32,
        None,
        seconds,
        uncached.id(),
    );
    shared.push(row(
        "proxy, cache off (Ed25519 check per request), max rate, 32 connections",
        &uncached_max,
    ));
    let es_cached_max = measure(
        &url(es_cached_addr),
        &es_token,
        32,
        None,
        seconds,
        es_cached.id(),
    );
    shared.push(row(
        "proxy, ES256 key, cached token, max rate, 32 connections",
        &es_cached_max,
    ));
    let es_uncached_max = measure(
        &url(es_uncached_addr),
        &es_token,
        32,
        None,
        seconds,
        es_uncached.id(),
    );
    shared.push(row(
        "proxy, ES256 key, cache off (ES256 check per request), max rate, 32 connections",
        &es_uncached_max,
    ));
    let haproxy_shared = haproxy.as_ref().map(|(child, addr)| {
        let s = measure(&url(*addr), &es_token, 32, None, seconds, child.id());
        shared.push(row(
            &format!(
                "{haproxy_name} jwt_verify (ES256 check per request), max rate, 32 connections"
            ),
            &s,
        ));
        s
    });
    let nginx_shared = nginx.as_ref().map(|(child, addr)| {
        let s = measure(&url(*addr), &token, 32, None, seconds, child.id());
        shared.push(row("nginx (no token check), max rate, 32 connections", &s));
        s
    });
    // Latency at 1,000 req/s: upstream alone and proxy in alternating rounds.
    let (mut added_p50, mut added_p99) = (Vec::new(), Vec::new());
    let mut latency_rows = Vec::new();
    for round in 1..=rounds {
        let bare = measure(&url(upstream), &token, 8, Some(1000), seconds, me);
        let proxied = measure(
            &url(cached_addr),
            &token,
            8,
            Some(1000),
            seconds,
            cached.id(),
        );
        added_p50.push(proxied.p50 - bare.p50);
        added_p99.push(proxied.p99 - bare.p99);
        latency_rows.push(format!(
            "| {round} | {} / {} | {} / {} | {} / {} |",
            ms(bare.p50),
            ms(bare.p99),
            ms(proxied.p50),
            ms(proxied.p99),
            ms(proxied.p50 - bare.p50),
            ms(proxied.p99 - bare.p99)
        ));
    }
    let uncached_fixed = measure(
        &url(uncached_addr),
        &token,
        8,
        Some(1000),
        seconds,
        uncached.id(),
    );
    shared.push(row(
        "proxy, cache off, 1,000 req/s, 8 connections",
        &uncached_fixed,
    ));
    // The flood: forged tokens as fast as they go, valid ones at the fixed rate, at once.
    let before = tree_cpu_ns(cached.id());
    let flood = oha(&url(cached_addr), &forged, 32, None, seconds);
    let valid = oha(&url(cached_addr), &token, 8, Some(1000), seconds);
    let flood = stats(flood);
    let valid = stats_cpu(valid, cached.id(), before);
    assert!(
        flood.ok == 0 && flood.forbidden > 0,
        "forged tokens are refused"
    );
    assert!(valid.ok > 0 && valid.forbidden == 0);
    shared.push(row(
        "under a forged-token flood: the flood (all 403), 32 connections",
        &flood,
    ));
    shared.push(row(
        "under a forged-token flood: valid requests at 1,000 req/s, 8 connections (CPU: per request of both)",
        &Stats {
            cpu_us: valid
                .cpu_us
                .map(|c| c * valid.served as f64 / (valid.served + flood.served) as f64),
            ..valid
        },
    ));
    for child in [&mut cached, &mut uncached, &mut es_cached, &mut es_uncached] {
        stop(child);
    }
    for (child, _) in nginx.iter_mut().chain(haproxy.iter_mut()) {
        stop(child);
    }

    // The proxy (and nginx, HAProxy) on a core of its own.
    let mut pinned_rows = Vec::new();
    let (mut ratios, mut nginx_ratios, mut haproxy_ratios) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(cpu) = proxy_cpu {
        pin_self(Some(cpu));
        let (mut pinned, pinned_addr) =
            start_proxy(&binary, upstream, &key_file, "EdDSA", 4096, Some(cpu));
        let (mut es_pinned, es_pinned_addr) =
            start_proxy(&binary, upstream, &es256_file, "ES256", 0, Some(cpu));
        let nginx_dir = tempfile::tempdir().unwrap();
        let mut nginx = start_nginx(nginx_dir.path(), upstream, Some(cpu));
        let haproxy_dir = tempfile::tempdir().unwrap();
        let mut haproxy = start_haproxy(
            haproxy_dir.path(),
            upstream,
            &es256_file,
            "ES256",
            Some(cpu),
        );
        if let Some((_, addr)) = &haproxy {
            es_probes.check(
                &format!("{haproxy_name} jwt_verify, ES256, one thread"),
                *addr,
            );
        }
        es_probes.check("proxy, ES256, cache off, own core", es_pinned_addr);
        let cell = |s: &Stats, bare: &Stats| {
            format!(
                " {:.0} ({:.0} %, {}) |",
                s.rps,
                s.rps / bare.rps * 100.0,
                cpu_per_request(s)
            )
        };
        for round in 1..=rounds {
            let bare = measure(&url(upstream), &token, 32, None, seconds, me);
            let proxied = measure(&url(pinned_addr), &token, 32, None, seconds, pinned.id());
            ratios.push(proxied.rps / bare.rps * 100.0);
            let es = measure(
                &url(es_pinned_addr),
                &es_token,
                32,
                None,
                seconds,
                es_pinned.id(),
            );
            let haproxy_cell = haproxy.as_ref().map(|(child, addr)| {
                let s = measure(&url(*addr), &es_token, 32, None, seconds, child.id());
                haproxy_ratios.push(s.rps / bare.rps * 100.0);
                cell(&s, &bare)
            });
            let nginx_cell = nginx.as_ref().map(|(child, addr)| {
                let s = measure(&url(*addr), &token, 32, None, seconds, child.id());
                nginx_ratios.push(s.rps / bare.rps * 100.0);
                cell(&s, &bare)
            });
            pinned_rows.push(format!(
                "| {round} | {:.0} |{}{}{}{}",
                bare.rps,
                cell(&proxied, &bare),
                cell(&es, &bare),
                haproxy_cell.unwrap_or_default(),
                nginx_cell.unwrap_or_default()
            ));
        }
        stop(&mut pinned);
        stop(&mut es_pinned);
        for (child, _) in nginx.iter_mut().chain(haproxy.iter_mut()) {
            stop(child);
        }
        pin_self(None);
    }

    let nginx_name = nginx_version();
    println!("forward_proxy_load: {seconds} s per run, {rounds} alternating rounds, {cpus} CPUs");
    println!();
    println!("Shared cores (the proxy, oha and the upstream on every core):");
    println!();
    println!("| case | req/s | p50 | p99 | CPU per request |");
    println!("| --- | --- | --- | --- | --- |");
    for r in &shared {
        println!("{r}");
    }
    println!();
    println!("Latency at 1,000 req/s, 8 connections, cached token (shared cores):");
    println!();
    println!("| round | upstream alone p50 / p99 | proxy p50 / p99 | added p50 / p99 |");
    println!("| --- | --- | --- | --- |");
    for r in &latency_rows {
        println!("{r}");
    }
    if proxy_cpu.is_some() {
        println!();
        println!(
            "The proxy on core {} alone, oha and the upstream on the others; max rate, 32 connections:",
            proxy_cpu.unwrap_or_default()
        );
        println!();
        let mut header = "| round | upstream alone req/s | proxy, cached token, req/s (%, CPU/req) | proxy, ES256, cache off | ".to_owned();
        let mut columns = 4;
        if !haproxy_ratios.is_empty() {
            header.push_str(&format!("{haproxy_name} jwt_verify, ES256 | "));
            columns += 1;
        }
        if !nginx_ratios.is_empty() {
            header.push_str(&format!("{nginx_name} (no token check) | "));
            columns += 1;
        }
        println!("{}", header.trim_end());
        println!("|{}", " --- |".repeat(columns));
        for r in &pinned_rows {
            println!("{r}");
        }
    }
    println!();
    let list = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if proxy_cpu.is_some() {
        println!(
            "cached-token throughput, proxy on its own core: median {:.0}% of the upstream alone over {rounds} rounds ({} %; target: at least 80%)",
            median(&mut ratios.clone()),
            list(&ratios)
        );
        if !haproxy_ratios.is_empty() {
            println!(
                "{haproxy_name} jwt_verify (ES256 per request) on its own core: median {:.0}% ({} %)",
                median(&mut haproxy_ratios.clone()),
                list(&haproxy_ratios)
            );
        }
        if !nginx_ratios.is_empty() {
            println!(
                "{nginx_name} on its own core, for reference: median {:.0}% ({} %)",
                median(&mut nginx_ratios.clone()),
                list(&nginx_ratios)
            );
        }
    }
    println!(
        "cached-token throughput, shared cores: {:.0}% of the upstream alone{}",
        cached_max.rps / bare_max.rps * 100.0,
        nginx_shared
            .as_ref()
            .map(|n| format!(
                " ({nginx_name}, no token check: {:.0}%)",
                n.rps / bare_max.rps * 100.0
            ))
            .unwrap_or_default()
    );
    println!(
        "cache-off throughput, shared cores: {:.0}% of the upstream alone",
        uncached_max.rps / bare_max.rps * 100.0
    );
    println!(
        "ES256, shared cores: proxy cache off {:.0}% of the upstream alone, {} per request{}",
        es_uncached_max.rps / bare_max.rps * 100.0,
        cpu_per_request(&es_uncached_max),
        haproxy_shared
            .as_ref()
            .map(|h| format!(
                "; {haproxy_name} jwt_verify {:.0}%, {} per request",
                h.rps / bare_max.rps * 100.0,
                cpu_per_request(h)
            ))
            .unwrap_or_default()
    );
    println!(
        "added latency at 1,000 req/s, cached token, shared cores: median p50 {} / p99 {} over {rounds} rounds (target: p99 under 0.100 ms)",
        ms(median(&mut added_p50)),
        ms(median(&mut added_p99))
    );
    println!(
        "valid requests under the flood: p50 {} / p99 {}, all served at {:.0} req/s",
        ms(valid.p50),
        ms(valid.p99),
        valid.rps
    );
}

/// One pair of the targets: the proxy and a peer measured one after the other, each round.
struct Pair<'a> {
    what: &'a str,
    target: &'a str,
    /// The proxy's URL (`http://` or `https://`).
    proxy: String,
    proxy_pid: u32,
    /// The peer's URL.
    peer: String,
    peer_pid: u32,
    peer_name: String,
    /// The token sent to the proxy.
    token: &'a str,
    /// The token sent to the peer.
    peer_token: &'a str,
    connections: u32,
    rate: Option<u32>,
}

/// The speed targets, each a ratio of the same run: every round measures the proxy and its
/// peer one after the other (the order alternating between rounds), so drift of the machine
/// falls on both. Returns the printed report.
fn targets(pairs: &[Pair<'_>], seconds: u64, rounds: u64) -> String {
    use std::fmt::Write as _;
    let mut results: Vec<Vec<(Stats, Stats)>> = pairs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (pair, results) in pairs.iter().zip(results.iter_mut()) {
            let run = |url: &str, pid: u32, token: &str| {
                measure(url, token, pair.connections, pair.rate, seconds, pid)
            };
            let (ours, peer) = if round % 2 == 0 {
                let ours = run(&pair.proxy, pair.proxy_pid, pair.token);
                (ours, run(&pair.peer, pair.peer_pid, pair.peer_token))
            } else {
                let peer = run(&pair.peer, pair.peer_pid, pair.peer_token);
                (run(&pair.proxy, pair.proxy_pid, pair.token), peer)
            };
            results.push((ours, peer));
        }
    }
    let mut out = String::new();
    for (pair, results) in pairs.iter().zip(&results) {
        let rate = pair
            .rate
            .map_or_else(|| "max rate".to_owned(), |r| format!("{r} req/s"));
        let _ = writeln!(
            out,
            "\n{} ({rate}, {} connections, shared cores):\n",
            pair.what, pair.connections
        );
        let _ = writeln!(
            out,
            "| round | proxy req/s | proxy CPU/req | {0} req/s | {0} CPU/req | throughput, proxy / peer | CPU per request, proxy / peer |",
            pair.peer_name
        );
        let _ = writeln!(out, "|{}", " --- |".repeat(7));
        let (mut throughput, mut cpu) = (Vec::new(), Vec::new());
        for (round, (ours, peer)) in results.iter().enumerate() {
            let t = ours.rps / peer.rps;
            let c = ours.cpu_us.unwrap_or(f64::NAN) / peer.cpu_us.unwrap_or(f64::NAN);
            throughput.push(t);
            cpu.push(c);
            let _ = writeln!(
                out,
                "| {} | {:.0} | {} | {:.0} | {} | {t:.2}× | {c:.2}× |",
                round + 1,
                ours.rps,
                cpu_per_request(ours),
                peer.rps,
                cpu_per_request(peer)
            );
        }
        let list = |v: &[f64]| {
            v.iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "\nmedian over {rounds} rounds: throughput {:.2}× ({}), CPU per request {:.2}× ({}) of {}; target: {}",
            median(&mut throughput.clone()),
            list(&throughput),
            median(&mut cpu.clone()),
            list(&cpu),
            pair.peer_name,
            pair.target
        );
    }
    out
}

/// The JWT mode's proxy the delegated modes are compared with, and what the delegated section
/// needs from `main`.
struct Jwt<'a> {
    binary: &'a Path,
    upstream: SocketAddr,
    /// The ES256 public key the JWT proxies verify with.
    public_key_file: &'a Path,
    /// A valid ES256 token for them.
    token: &'a str,
    /// The JWT proxy over plain HTTP, its verified-token cache on.
    plain: SocketAddr,
    plain_pid: u32,
    seconds: u64,
    rounds: u64,
    features: &'a str,
}

/// A proxy process started with `args` (after `forward-proxy`) and the listening flags:
/// `--insecure-listen-address` or, with `tls` (certificate and key files), the TLS ones; its
/// `/metrics` on another port. Returns the process, its address and its metrics address.
fn start_proxy_with(
    binary: &Path,
    tls: Option<(&Path, &Path)>,
    args: &[String],
) -> (Child, SocketAddr, SocketAddr) {
    let mut metrics = None;
    let (child, addr) = start_listening("the proxy", |listen| {
        let metrics = *metrics.insert(free_addr());
        let mut cmd = Command::new(binary);
        cmd.arg("forward-proxy");
        match tls {
            Some((cert, key)) => {
                cmd.arg(format!("--secure-listen-address={listen}"))
                    .arg(format!("--tls-cert-file={}", cert.display()))
                    .arg(format!("--tls-private-key-file={}", key.display()));
            }
            None => {
                cmd.arg(format!("--insecure-listen-address={listen}"));
            }
        }
        cmd.args(args)
            .arg(format!("--http-address={metrics}"))
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    (child, addr, metrics.unwrap())
}

/// One request over TLS with curl (certificate not checked: the probes check the proxy's
/// decisions, not its certificate): the status and the body.
fn probe_tls(addr: SocketAddr, path: &str, token: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sk", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://{addr}{path}"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    (status.trim().parse().unwrap_or(0), body.to_owned())
}

/// The sum of the proxy's `/metrics` samples whose name contains `name`.
fn metric(addr: SocketAddr, name: &str) -> u64 {
    let out = Command::new("curl")
        .args(["-sf", &format!("http://{addr}/metrics")])
        .output()
        .expect("curl");
    assert!(out.status.success(), "the proxy's /metrics");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(n, _)| n.contains(name))
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Resident memory of a process, in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// TokenReviews and SubjectAccessReviews the double has answered (of its last 10,000
/// requests).
fn reviews_answered(server: &loopback_apiserver::LoopbackApiServer) -> (u64, u64) {
    let requests = server.requests();
    let count = |what: &str| requests.iter().filter(|r| r.path.ends_with(what)).count() as u64;
    (count("/tokenreviews"), count("/subjectaccessreviews"))
}

/// A flood of unique invalid bearer tokens (a new one per request) on `connections` kept
/// connections to `addr` for `seconds`, each request sent once the previous response was read,
/// and with `rate` no sooner than its turn at that many requests a second in all (none at all
/// for a rate of 0: the baseline): the responses counted by status.
fn flood_unique_tokens(
    addr: SocketAddr,
    connections: usize,
    seconds: u64,
    rate: Option<u64>,
) -> std::collections::BTreeMap<u16, u64> {
    use std::io::{Read, Write};
    if rate == Some(0) {
        std::thread::sleep(Duration::from_secs(seconds));
        return std::collections::BTreeMap::new();
    }
    let start = std::time::Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    // Each connection's interval between requests at `rate` in all.
    let interval = rate.map(|r| Duration::from_secs_f64(connections as f64 / r.max(1) as f64));
    let threads: Vec<_> = (0..connections)
        .map(|c| {
            std::thread::spawn(move || {
                let mut counts = std::collections::BTreeMap::<u16, u64>::new();
                let mut stream: Option<std::net::TcpStream> = None;
                let mut buf = Vec::with_capacity(4096);
                let mut n = 0u64;
                // The connections' turns spread over one interval.
                let mut next = interval.map(|i| start + i.mul_f64(c as f64 / connections as f64));
                while std::time::Instant::now() < deadline {
                    if let (Some(at), Some(i)) = (next.as_mut(), interval) {
                        let now = std::time::Instant::now();
                        if *at > now {
                            std::thread::sleep(*at - now);
                        }
                        *at += i;
                    }
                    if stream.is_none() {
                        let s = std::net::TcpStream::connect(addr).unwrap();
                        s.set_nodelay(true).unwrap();
                        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                        stream = Some(s);
                    }
                    let Some(s) = stream.as_mut() else { continue };
                    n += 1;
                    // Shaped like a service-account token's size, and never seen before.
                    let token = format!("flood.{c:04}.{n:016}.{}", "x".repeat(700));
                    let request = format!(
                        "GET / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
                    );
                    if s.write_all(request.as_bytes()).is_err() {
                        stream = None;
                        continue;
                    }
                    buf.clear();
                    let (status, close) = loop {
                        let mut chunk = [0u8; 4096];
                        let Ok(read) = s.read(&mut chunk) else {
                            break (0, true);
                        };
                        if read == 0 {
                            break (0, true);
                        }
                        buf.extend_from_slice(&chunk[..read]);
                        let mut headers = [httparse::EMPTY_HEADER; 32];
                        let mut response = httparse::Response::new(&mut headers);
                        if let Ok(httparse::Status::Complete(head)) = response.parse(&buf) {
                            let header = |name: &str| {
                                response
                                    .headers
                                    .iter()
                                    .find(|h| h.name.eq_ignore_ascii_case(name))
                                    .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                            };
                            let length: usize = header("content-length")
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(0);
                            let close = header("connection").is_some_and(|v| v == "close");
                            let status = response.code.unwrap_or(0);
                            while buf.len() < head + length {
                                let Ok(read) = s.read(&mut chunk) else { break };
                                if read == 0 {
                                    break;
                                }
                                buf.extend_from_slice(&chunk[..read]);
                            }
                            break (status, close);
                        }
                    };
                    *counts.entry(status).or_default() += 1;
                    if close {
                        stream = None;
                    }
                }
                counts
            })
        })
        .collect();
    let mut total = std::collections::BTreeMap::new();
    for t in threads {
        for (status, count) in t.join().unwrap() {
            *total.entry(status).or_default() += count;
        }
    }
    total
}

/// One flood of unique invalid tokens against a proxy of its own with the review rate limit,
/// valid requests at 1,000 req/s beside it: its table.
fn flood_run(
    jwt: &Jwt<'_>,
    server: &loopback_apiserver::LoopbackApiServer,
    token: &str,
    review_args: &dyn Fn(&[String]) -> Vec<String>,
    (rate, burst): (u64, u64),
    seconds: u64,
    flood_rate: Option<u64>,
) {
    let limit = [
        format!("--review-rate-limit={rate}"),
        format!("--review-burst={burst}"),
    ];
    let (mut limited, limited_addr, limited_metrics) =
        start_proxy_with(jwt.binary, None, &review_args(&limit));
    let (status, _) = probe(
        limited_addr,
        "/whoami",
        &[("Authorization", &format!("Bearer {token}"))],
    );
    assert_eq!(status, 200, "the rate-limited proxy: the bound account");
    // A short calm spell at the valid rate, so that the proxy is at work.
    let warm = stats(oha(
        &format!("http://{limited_addr}/"),
        token,
        8,
        Some(1000),
        1,
    ));
    assert!(warm.ok > 0);
    let sent_before = (
        metric(limited_metrics, "delegated_token_reviews"),
        metric(limited_metrics, "delegated_access_reviews"),
    );
    let answered_before = reviews_answered(server);
    let started = std::time::Instant::now();
    let cpu_before = tree_cpu_ns(limited.id());
    let valid = oha(
        &format!("http://{limited_addr}/"),
        token,
        8,
        Some(1000),
        seconds,
    );
    // Resident memory once the flood has run 2 s (its connections open, its buffers grown),
    // then at the end.
    let pid = limited.id();
    let rss_start = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        rss_kib(pid)
    });
    let flood = flood_unique_tokens(limited_addr, 16, seconds, flood_rate);
    let valid = stats_cpu(valid, limited.id(), cpu_before);
    let elapsed = started.elapsed().as_secs_f64();
    let sent_after = (
        metric(limited_metrics, "delegated_token_reviews"),
        metric(limited_metrics, "delegated_access_reviews"),
    );
    let answered_after = reviews_answered(server);
    let rss_start = rss_start.join().unwrap();
    let rss_end = rss_kib(limited.id());
    stop(&mut limited);

    let sent = (sent_after.0 - sent_before.0) + (sent_after.1 - sent_before.1);
    let answered = (answered_after.0 - answered_before.0) + (answered_after.1 - answered_before.1);
    // New tokens take from one bucket; the valid token's renewals (a TokenReview and a
    // SubjectAccessReview each time its 10 s entries expire) from the other.
    let renewals = 2.0 * (elapsed / 10.0).ceil();
    let bound = burst as f64 + rate as f64 * elapsed + renewals;
    let flood_total: u64 = flood.values().sum();
    let flood_codes = flood
        .iter()
        .map(|(s, n)| format!("{s}: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let valid_other = valid.served - valid.ok;
    let shape = match flood_rate {
        Some(0) => "none: the baseline".to_owned(),
        Some(r) => format!("at {r} req/s"),
        None => "as fast as it goes".to_owned(),
    };
    println!();
    println!(
        "Flood of unique invalid tokens ({shape}, 16 kept connections, plain HTTP) at --review-rate-limit={rate} --review-burst={burst}, valid token at 1,000 req/s on 8 connections, {elapsed:.1} s:"
    );
    println!();
    println!("| what | value |");
    println!("| --- | --- |");
    println!(
        "| flood requests answered | {flood_total} ({:.0}/s; by status: {flood_codes}) |",
        flood_total as f64 / elapsed
    );
    println!(
        "| reviews sent, the proxy's /metrics (TokenReviews + SubjectAccessReviews) | {sent} ({} + {}) |",
        sent_after.0 - sent_before.0,
        sent_after.1 - sent_before.1
    );
    println!(
        "| reviews answered, the double's count | {answered} ({} + {}) |",
        answered_after.0 - answered_before.0,
        answered_after.1 - answered_before.1
    );
    println!(
        "| bound: burst + rate × elapsed, plus the valid token's renewals | {bound:.0} ({}) |",
        if (sent as f64) <= bound && (answered as f64) <= bound {
            "within"
        } else {
            "EXCEEDED"
        }
    );
    println!(
        "| valid requests: req/s, p50 / p99 | {:.0}, {} / {} (target p50 under 0.2 ms: {}) |",
        valid.rps,
        ms(valid.p50),
        ms(valid.p99),
        if valid.p50 < 0.0002 { "met" } else { "not met" }
    );
    println!(
        "| valid requests: 200 / other | {} / {valid_other} |",
        valid.ok
    );
    println!(
        "| the proxy's CPU per request (valid and flood) | {} |",
        valid.cpu_us.map_or_else(
            || "-".to_owned(),
            |c| format!(
                "{:.1} µs",
                c * valid.served as f64 / (valid.served + flood_total) as f64
            )
        )
    );
    println!(
        "| the proxy's resident memory, 2 s into the flood / end | {rss_start} / {rss_end} KiB ({:+.1} %) |",
        (rss_end as f64 / rss_start.max(1) as f64 - 1.0) * 100.0
    );
}

/// The delegated modes beside the JWT mode: see the header of this file.
fn delegated(jwt: &Jwt<'_>) {
    let env = k8s_bootstrap_benches::env_u64;
    let (seconds, rounds) = (jwt.seconds, jwt.rounds);
    let rate = env("REVIEW_RATE", 50).max(1);
    let burst = env("REVIEW_BURST", 10).max(1);
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        println!("forward_proxy_load: delegated modes skipped, `kubectl` is not on PATH");
        return;
    }
    // The double, in this process (its work is the bench's CPU, not the proxy's).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(loopback_apiserver::LoopbackApiServer::builder().start())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.conf");
    std::fs::write(&admin, server.admin_kubeconfig_yaml()).unwrap();
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    std::fs::write(&cert, server.serving_certificate_pem()).unwrap();
    std::fs::write(&key, server.serving_key_pem()).unwrap();
    // What an administrator runs: an account allowed `get /` (what oha asks for) and `get
    // /whoami` (the probes), another one bound to nothing.
    let kubectl = |args: &[&str]| -> String {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&admin)
            .arg("--cache-dir")
            .arg(dir.path().join("kubectl-cache"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    kubectl(&["create", "namespace", "monitoring"]);
    for account in ["prometheus", "stranger"] {
        kubectl(&["create", "serviceaccount", account, "-n", "monitoring"]);
    }
    kubectl(&[
        "create",
        "clusterrole",
        "root-reader",
        "--non-resource-url=/",
        "--non-resource-url=/whoami",
        "--verb=get",
    ]);
    kubectl(&[
        "create",
        "clusterrolebinding",
        "prometheus-root",
        "--clusterrole=root-reader",
        "--serviceaccount=monitoring:prometheus",
    ]);
    let token = kubectl(&[
        "create",
        "token",
        "prometheus",
        "-n",
        "monitoring",
        "--duration=1h",
    ]);
    let stranger = kubectl(&["create", "token", "stranger", "-n", "monitoring"]);
    let user = "system:serviceaccount:monitoring:prometheus";

    let review_args = |extra: &[String]| -> Vec<String> {
        let mut args = vec![
            "--authentication=token-review".to_owned(),
            format!("--forward={}", jwt.upstream),
            format!("--kubeconfig={}", admin.display()),
            // The upstream's /whoami echoes this header, as for the JWT mode.
            "--auth-header-user-field-name=x-authenticated-user".to_owned(),
        ];
        args.extend_from_slice(extra);
        args
    };
    let jwt_args = vec![
        format!("--forward={}", jwt.upstream),
        format!("--issuer={ISSUER}"),
        format!("--audience={AUDIENCE}"),
        format!("--public-key-file={}", jwt.public_key_file.display()),
        "--algorithm=ES256".to_owned(),
        "--verified-cache-size=4096".to_owned(),
    ];
    let (mut review_plain, review_plain_addr, _) =
        start_proxy_with(jwt.binary, None, &review_args(&[]));
    let (mut review_tls, review_tls_addr, _) = start_proxy_with(
        jwt.binary,
        Some((cert.as_path(), key.as_path())),
        &review_args(&[]),
    );
    let (mut jwt_tls, jwt_tls_addr, _) =
        start_proxy_with(jwt.binary, Some((cert.as_path(), key.as_path())), &jwt_args);

    // The probes: the same decisions over both transports.
    let want = format!("{user};authorization=false");
    let (status, body) = probe(
        review_plain_addr,
        "/whoami",
        &[("Authorization", &format!("Bearer {token}"))],
    );
    assert_eq!(
        (status, body.as_str()),
        (200, want.as_str()),
        "token-review, plain: the bound account"
    );
    let (status, _) = probe(
        review_plain_addr,
        "/whoami",
        &[("Authorization", &format!("Bearer {stranger}"))],
    );
    assert_eq!(
        status, 403,
        "token-review, plain: an account bound to nothing"
    );
    let (status, _) = probe(
        review_plain_addr,
        "/whoami",
        &[("Authorization", "Bearer not-a-token")],
    );
    assert_eq!(status, 401, "token-review, plain: an invalid token");
    assert_eq!(
        probe_tls(review_tls_addr, "/whoami", &token),
        (200, want.clone()),
        "token-review, TLS: the bound account"
    );
    assert_eq!(probe_tls(review_tls_addr, "/whoami", &stranger).0, 403);
    assert_eq!(probe_tls(review_tls_addr, "/whoami", "not-a-token").0, 401);
    assert_eq!(
        probe_tls(jwt_tls_addr, "/whoami", jwt.token),
        (200, "jane;authorization=false".to_owned()),
        "JWT, TLS"
    );
    println!(
        "token-review (plain and TLS): a bound account's token passes as {user}; an unbound account's: 403; an invalid token: 401"
    );
    if Command::new("oha").arg("--version").output().is_err() {
        println!("forward_proxy_load: delegated modes not measured, `oha` is not on PATH");
        for child in [&mut review_plain, &mut review_tls, &mut jwt_tls] {
            stop(child);
        }
        return;
    }

    // The cached path: CPU per request beside the JWT mode, same transport, alternating.
    let pairs = [
        Pair {
            what: "Cached path, plain HTTP: token-review (token and access caches hit) against the JWT mode (ES256, verified-token cache hit)",
            target: "CPU per request at most 1.10× the JWT mode's",
            proxy: format!("http://{review_plain_addr}/"),
            proxy_pid: review_plain.id(),
            peer: format!("http://{}/", jwt.plain),
            peer_pid: jwt.plain_pid,
            peer_name: "JWT mode".to_owned(),
            token: &token,
            peer_token: jwt.token,
            connections: 32,
            rate: None,
        },
        Pair {
            what: "Cached path, TLS: token-review against the JWT mode, both over TLS",
            target: "CPU per request at most 1.10× the JWT mode's",
            proxy: format!("https://{review_tls_addr}/"),
            proxy_pid: review_tls.id(),
            peer: format!("https://{jwt_tls_addr}/"),
            peer_pid: jwt_tls.id(),
            peer_name: "JWT mode, TLS".to_owned(),
            token: &token,
            peer_token: jwt.token,
            connections: 32,
            rate: None,
        },
    ];
    let report = targets(&pairs, seconds, rounds);
    let (reviews_before_flood, access_before_flood) = reviews_answered(&server);
    stop(&mut review_plain);
    stop(&mut review_tls);
    stop(&mut jwt_tls);

    println!(
        "forward_proxy_load: delegated modes, the proxy built with --features {}; {seconds} s per run, {rounds} rounds",
        jwt.features
    );
    println!("{report}");
    println!(
        "(the double answered {reviews_before_flood} TokenReviews and {access_before_flood} SubjectAccessReviews during the cached-path runs: the caches' 10 s lifetimes)"
    );
    // No flood (the valid requests' baseline), then the floods: as fast as 16 connections go
    // (both cores saturated by the flood, its client and the proxy), then at a fixed rate.
    let flood_rate = env("FLOOD_RATE", 8000);
    for rate_of_flood in [Some(0), None, Some(flood_rate)] {
        flood_run(
            jwt,
            &server,
            &token,
            &review_args,
            (rate, burst),
            seconds,
            rate_of_flood,
        );
    }
    drop(server);
    drop(runtime);
}
