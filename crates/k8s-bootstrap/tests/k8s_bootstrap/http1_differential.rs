//! The forward proxy's HTTP/1.1 response decoder (`addon_jwt::http1::ResponseDecoder`) held to
//! hyper's client: the same bytes, fed to both (to the decoder in random pieces), must give
//! the same status, header lines, body and trailers, or both a refusal. Where the decoder is
//! stricter than hyper on purpose, the case is named ([`stricter`]) and checked to be one.
//!
//! And the forward proxy as a whole held to hyper's client: the same scripted add-on
//! responses (the framing rows of the hostile-input catalogue) reach a client through the
//! proxy and through hyper's pooled client, and each client's next request must get its own
//! response in both.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use k8s_bootstrap::addon_jwt::http1::{Decoded, Http1Error, ResponseDecoder};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// What a client made of a response.
#[derive(Debug, PartialEq)]
struct Read {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    trailers: Vec<(String, Vec<u8>)>,
}

/// The header lines, by name (the lines of one name in their order: the order that carries
/// meaning).
fn lines(headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    let mut lines: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    lines
}

/// The decoder's reading of `input`, fed in pieces of the given sizes, then the end of the
/// connection.
fn ours(method: &Method, input: &[u8], pieces: &[usize]) -> Result<Read, Http1Error> {
    let mut decoder = ResponseDecoder::new(method);
    let mut buf = BytesMut::new();
    let mut read = Read {
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        trailers: Vec::new(),
    };
    let take = |d: Decoded, read: &mut Read| match d {
        Decoded::Head(head) => {
            read.status = head.status().as_u16();
            read.headers = lines(head.headers());
        }
        Decoded::Data(data) => read.body.extend_from_slice(&data),
        Decoded::Trailers(trailers) => read.trailers = lines(&trailers),
        _ => {}
    };
    let mut rest = input;
    let mut sizes = pieces.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(d) = decoder.decode(&mut buf)? {
            take(d, &mut read);
        }
        if decoder.is_done() {
            break;
        }
    }
    while !decoder.is_done() {
        match decoder.decode_eof(&mut buf)? {
            Some(d) => take(d, &mut read),
            None => break,
        }
    }
    Ok(read)
}

/// hyper's client reading `input` as the answer to a `method` request, the connection closed
/// after it; `None` when hyper refuses it.
async fn hypers(method: &Method, input: &[u8]) -> Option<Read> {
    let (client, mut server) = tokio::io::duplex(1 << 20);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(client))
        .await
        .unwrap();
    tokio::spawn(connection);
    let input = input.to_vec();
    let addon = tokio::spawn(async move {
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0];
            if server.read(&mut byte).await.unwrap_or(0) == 0 {
                return;
            }
            head.push(byte[0]);
        }
        let _ = server.write_all(&input).await;
        let _ = server.shutdown().await;
        // Keep the read side open until the client is done.
        let mut rest = Vec::new();
        let _ = server.read_to_end(&mut rest).await;
    });
    let request = http::Request::builder()
        .method(method.clone())
        .uri("/")
        .header("host", "addon")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.ok()?;
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.ok()?;
    drop(sender);
    addon.abort();
    Some(Read {
        status: parts.status.as_u16(),
        headers: lines(&parts.headers),
        trailers: collected.trailers().map(lines).unwrap_or_default(),
        body: collected.to_bytes().to_vec(),
    })
}

/// hyper's reading as the decoder hands it on: a `Content-Length` list of one number
/// repeated (a comma, or several lines) becomes that number, on one line; a response without a body
/// (`HEAD`, 204, 304) loses a `Content-Length` that is no valid length.
fn as_forwarded(mut read: Read, method: &Method) -> Read {
    let lengths: Vec<usize> = (0..read.headers.len())
        .filter(|i| read.headers[*i].0 == "content-length")
        .collect();
    let Some(&first) = lengths.first() else {
        return read;
    };
    let items: Vec<Option<u64>> = lengths
        .iter()
        .flat_map(|i| read.headers[*i].1.split(|b| *b == b','))
        .map(|item| {
            let item = item.trim_ascii();
            (!item.is_empty() && item.iter().all(u8::is_ascii_digit))
                .then(|| std::str::from_utf8(item).ok()?.parse::<u64>().ok())
                .flatten()
        })
        .collect();
    let same = items
        .first()
        .copied()
        .flatten()
        .filter(|n| items.iter().all(|i| *i == Some(*n)));
    let bodiless = method == Method::HEAD || read.status == 204 || read.status == 304;
    let listed = lengths.len() > 1 || read.headers[first].1.contains(&b',');
    match same {
        Some(_) if !listed => {}
        Some(n) => {
            read.headers[first].1 = n.to_string().into_bytes();
            for i in lengths.iter().skip(1).rev() {
                read.headers.remove(*i);
            }
        }
        None if bodiless => {
            for i in lengths.iter().rev() {
                read.headers.remove(*i);
            }
        }
        None => {}
    }
    read
}

/// Where the decoder refuses on purpose what hyper reads: a response that could be framed
/// two ways (both `Content-Length` and `Transfer-Encoding`, `Transfer-Encoding` in
/// HTTP/1.0, or a `Transfer-Encoding` with a byte above ASCII or a control character, which
/// hyper reads as no coding at all and so as a body up to the connection's end), a 101 to a request that asked for no upgrade, control characters in chunk
/// extensions, and a bare LF in the trailer section (hyper refuses one within a trailer
/// field, but takes one as the section's end).
fn stricter(e: &Http1Error) -> bool {
    matches!(
        e,
        Http1Error::ContentLengthWithTransferEncoding
            | Http1Error::TransferEncodingInHttp10
            | Http1Error::InvalidTransferEncoding
            | Http1Error::UnexpectedUpgrade
            | Http1Error::MalformedChunk
            | Http1Error::MalformedTrailers
    )
}

/// A response from parts a server may send, and some it may not.
fn response() -> impl Strategy<Value = (Method, Vec<u8>)> {
    let version = prop_oneof![Just("HTTP/1.1"), Just("HTTP/1.0")];
    let status = prop_oneof![
        Just(200u16),
        Just(201),
        Just(204),
        Just(304),
        Just(404),
        Just(500)
    ];
    let length = prop_oneof![
        8 => Just(None),
        6 => Just(Some("{n}".to_owned())),
        1 => Just(Some("{n}, {n}".to_owned())),
        1 => Just(Some("+{n}".to_owned())),
        1 => Just(Some("{n}0".to_owned())),
        1 => Just(Some("0{n}".to_owned())),
        1 => Just(Some(" {n} ".to_owned())),
        1 => Just(Some("{n} {n}".to_owned())),
        1 => Just(Some(String::new())),
    ];
    let coding = prop_oneof![
        6 => Just(None),
        6 => Just(Some("chunked")),
        1 => Just(Some("Chunked")),
        1 => Just(Some("gzip, chunked")),
        1 => Just(Some("chunked, gzip")),
        1 => Just(Some("identity")),
    ];
    let connection = prop_oneof![
        Just(None),
        Just(Some("close")),
        Just(Some("keep-alive")),
        Just(Some("Keep-Alive, x-drop"))
    ];
    let extra = proptest::collection::vec(("x-[a-z]{1,8}", "[ -~]{0,16}"), 0..4);
    let body = proptest::collection::vec(any::<u8>(), 0..200);
    let chunking = proptest::collection::vec(1usize..64, 1..8);
    let extension = prop_oneof![
        6 => Just(""),
        2 => Just(";a=b"),
        2 => Just(" ;q=\"x\""),
        1 => Just(";\u{1}")
    ];
    let trailers = proptest::collection::vec(("x-t-[a-z]{1,4}", "[!-~]{1,8}"), 0..3);
    let informational = prop_oneof![Just(""), Just("HTTP/1.1 100 Continue\r\n\r\n")];
    let method = prop_oneof![Just(Method::GET), Just(Method::HEAD)];
    let mutation = proptest::option::weighted(0.3, (any::<prop::sample::Index>(), any::<u8>()));
    (
        (version, status, length, coding, connection, extra),
        (body, chunking, extension, trailers, informational, method),
        mutation,
    )
        .prop_map(
            |(
                (version, status, length, coding, connection, extra),
                (body, chunking, extension, trailers, informational, method),
                mutation,
            )| {
                let mut out = informational.as_bytes().to_vec();
                out.extend_from_slice(format!("{version} {status} Status\r\n").as_bytes());
                if let Some(length) = &length {
                    let value = length.replace("{n}", &body.len().to_string());
                    out.extend_from_slice(format!("content-length: {value}\r\n").as_bytes());
                }
                if let Some(coding) = coding {
                    out.extend_from_slice(format!("transfer-encoding: {coding}\r\n").as_bytes());
                }
                if let Some(connection) = connection {
                    out.extend_from_slice(format!("connection: {connection}\r\n").as_bytes());
                }
                for (name, value) in &extra {
                    out.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
                }
                out.extend_from_slice(b"\r\n");
                let chunked = coding.is_some_and(|c| c.to_ascii_lowercase().ends_with("chunked"));
                if chunked {
                    let mut rest = &body[..];
                    let mut sizes = chunking.iter().cycle();
                    while !rest.is_empty() {
                        let n = (*sizes.next().unwrap()).min(rest.len());
                        out.extend_from_slice(format!("{n:x}{extension}\r\n").as_bytes());
                        out.extend_from_slice(&rest[..n]);
                        out.extend_from_slice(b"\r\n");
                        rest = &rest[n..];
                    }
                    out.extend_from_slice(b"0\r\n");
                    for (name, value) in &trailers {
                        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
                    }
                    out.extend_from_slice(b"\r\n");
                } else {
                    out.extend_from_slice(&body);
                }
                if let Some((at, byte)) = mutation {
                    let at = at.index(out.len());
                    out[at] = byte;
                }
                (method, out)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The decoder and hyper read the same responses the same way.
    #[test]
    fn the_decoder_reads_responses_as_hyper_does(
        (method, input) in response(),
        pieces in proptest::collection::vec(1usize..40, 1..6),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let theirs = runtime.block_on(hypers(&method, &input));
        let ours = ours(&method, &input, &pieces);
        let whole = self::ours(&method, &input, &[input.len().max(1)]);
        // However the bytes arrive, the decoder reads the same.
        prop_assert_eq!(&ours, &whole);
        let shown = String::from_utf8_lossy(&input).into_owned();
        match (ours, theirs) {
            (Ok(ours), Some(theirs)) => prop_assert_eq!(ours, as_forwarded(theirs, &method), "{}", shown),
            (Err(e), Some(_)) => prop_assert!(stricter(&e), "hyper reads what the decoder refuses ({:?}): {}", e, shown),
            (Ok(ours), None) => prop_assert!(false, "the decoder reads what hyper refuses ({:?}): {}", ours, shown),
            (Err(_), None) => {}
        }
    }
}

const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";
/// What the add-on answers the second request of each row with.
const NEXT: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext";
/// A response no request asked for, sent behind one that was.
const UNREQUESTED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 21\r\n\r\nuser=mallory path=/x!";

/// One scripted answer to `/1`: the bytes, and whether the add-on closes after them.
struct Row {
    name: &'static str,
    method: Method,
    bytes: Vec<u8>,
    close: bool,
    /// The decoder refuses on purpose what hyper reads (see [`stricter`]).
    stricter: bool,
}

fn rows() -> Vec<Row> {
    let row = |name, method: Method, bytes: &[u8]| Row {
        name,
        method,
        bytes: bytes.to_vec(),
        close: false,
        stricter: false,
    };
    let then = |head: &[u8], more: &[u8]| [head, more].concat();
    let large = {
        let mut r = b"HTTP/1.1 200 OK\r\ncontent-length: 16384\r\n\r\n".to_vec();
        r.resize(r.len() + 16384, b'a');
        r
    };
    let exact = {
        let bare = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\nx-pad: \r\n\r\n".len();
        let pad = "p".repeat(16384 - 10 - bare);
        format!("HTTP/1.1 200 OK\r\ncontent-length: 10\r\nx-pad: {pad}\r\n\r\n0123456789")
            .into_bytes()
    };
    let big_head = format!(
        "HTTP/1.1 200 OK\r\n{}content-length: 2\r\n\r\nok",
        format!("x-big: {}\r\n", "v".repeat(3900)).repeat(98)
    );
    let mut rows = vec![
        row("length", Method::GET, b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"),
        row("chunked with trailers", Method::GET, b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nx-t: 1\r\n\r\n"),
        row("HEAD with a length", Method::HEAD, b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n"),
        row("a body after HEAD", Method::HEAD, &then(b"HTTP/1.1 200 OK\r\ncontent-length: 21\r\n\r\n", UNREQUESTED)),
        row("a body on 204", Method::GET, &then(b"HTTP/1.1 204 No Content\r\n\r\n", UNREQUESTED)),
        row("a body on 304", Method::GET, &then(b"HTTP/1.1 304 Not Modified\r\ncontent-length: 21\r\n\r\n", UNREQUESTED)),
        row("a response behind a 16 KiB body", Method::GET, &then(&large, UNREQUESTED)),
        row("a response behind an exactly 16 KiB response", Method::GET, &then(&exact, UNREQUESTED)),
        row("a response behind a short one", Method::GET, &then(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", UNREQUESTED)),
        row("100 then 200", Method::GET, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"),
        row("chunk-size overflow", Method::GET, b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n"),
        row("a folded header line", Method::GET, b"HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\ncontent-length: 2\r\n\r\nok"),
        row("NUL in a header value", Method::GET, b"HTTP/1.1 200 OK\r\nx-a: a\0b\r\ncontent-length: 2\r\n\r\nok"),
        row("bare LF", Method::GET, b"HTTP/1.1 200 OK\ncontent-length: 2\n\nok"),
        row("Content-Length: 2, 2", Method::GET, b"HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\nok"),
        row("Content-Length: 2, 3", Method::GET, b"HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok"),
        row("a negative length", Method::GET, b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\nok"),
        row("a malformed status line", Method::GET, b"HTTP/1.1 2x0 OK\r\n\r\n"),
    ];
    rows.push(Row {
        close: true,
        ..row(
            "until the add-on closes",
            Method::GET,
            b"HTTP/1.1 200 OK\r\n\r\nuntil the end",
        )
    });
    rows.push(Row {
        close: true,
        ..row(
            "Connection: close",
            Method::GET,
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nbye",
        )
    });
    rows.push(Row {
        close: true,
        ..row(
            "cut within the body",
            Method::GET,
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf",
        )
    });
    rows.push(Row {
        stricter: true,
        ..row(
            "Content-Length with Transfer-Encoding",
            Method::GET,
            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        )
    });
    // 99 header lines: the proxy's own `Date` makes 100 for the client, hyper's limit.
    rows.push(row("a 386 KB head", Method::GET, big_head.as_bytes()));
    rows.push(Row {
        stricter: true,
        ..row(
            "an unasked 101",
            Method::GET,
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
        )
    });
    rows
}

/// An add-on answering `/1` with the row's bytes (closing after them when the row says so)
/// and `/2` with [`NEXT`], on every connection.
async fn row_addon(bytes: Vec<u8>, close: bool) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bytes = std::sync::Arc::new(bytes);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let bytes = bytes.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = buf.drain(..end + 4).collect();
                        let answer: &[u8] = if head.windows(3).any(|w| w == b" /1") {
                            &bytes
                        } else {
                            NEXT
                        };
                        if stream.write_all(answer).await.is_err() {
                            return;
                        }
                        if close && answer != NEXT {
                            let _ = stream.shutdown().await;
                            return;
                        }
                    }
                    let mut chunk = [0; 4096];
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// What a client got: the status and the body, or an error (refused, cut).
type Got = Result<(u16, Vec<u8>), String>;

/// `/1` (with the row's method), then `/2`, over a pooled hyper client to `to`.
async fn two_requests(
    to: std::net::SocketAddr,
    method: &Method,
    bearer: &str,
    pause: bool,
) -> (Got, Got) {
    let client: hyper_util::client::legacy::Client<_, Empty<Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http();
    let ask = async |method: Method, path: &str| -> Got {
        let request = http::Request::builder()
            .method(method)
            .uri(format!("http://{to}{path}"))
            .header("authorization", bearer)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response =
            tokio::time::timeout(std::time::Duration::from_secs(10), client.request(request))
                .await
                .map_err(|_| "timed out".to_owned())?
                .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            response.into_body().collect(),
        )
        .await
        .map_err(|_| "timed out".to_owned())?
        .map_err(|e| e.to_string())?;
        Ok((status, body.to_bytes().to_vec()))
    };
    let first = ask(method.clone(), "/1").await;
    // The pooled connection is given back once the response is read. To the add-on directly,
    // a moment for hyper to see what the add-on sent behind it, as it would between any two
    // requests; to the proxy none: the next request reaches it at once, while what the
    // add-on sent behind the response may not have been seen yet.
    if pause {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let second = ask(Method::GET, "/2").await;
    (first, second)
}

/// Every scripted response reaches a client through the forward proxy as through hyper's
/// client (the same status and body, or a refusal: 502, or a cut connection, where hyper
/// fails), and the client's next request gets its own response in both: nothing the add-on
/// sent behind a response is ever read as the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_hands_on_responses_as_hyper_reads_them() {
    use k8s_bootstrap::addon_jwt::{Algorithm, Audience, Issuer, Minter, SigningKey};
    use k8s_bootstrap::forward_proxy::{Config, KeySource, Server};
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("key.pem");
    let key = SigningKey::from_pkcs8_pem(KEY).unwrap();
    std::fs::write(&keys, key.public_key_pem().unwrap()).unwrap();
    let bearer = format!(
        "Bearer {}",
        Minter::new(key, Issuer::new(ISSUER))
            .mint(
                "jane",
                &Audience::new(AUDIENCE),
                std::time::SystemTime::now()
            )
            .unwrap()
            .expose_secret()
    );
    for row in rows() {
        let addon = row_addon(row.bytes.clone(), row.close).await;
        let (theirs, their_next) = two_requests(addon, &row.method, &bearer, true).await;
        let config = Config::new(
            &addon.to_string(),
            ISSUER,
            KeySource::Pem(keys.clone(), Algorithm::EdDsa),
        )
        .audience(AUDIENCE)
        .listen("127.0.0.1:0".parse().unwrap())
        .plain_http()
        .http_address("127.0.0.1:0".parse().unwrap());
        let server = Server::bind(config).await.unwrap();
        let proxy = server.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async move {
            let _ = stopped.await;
        }));
        let (ours, our_next) = two_requests(proxy, &row.method, &bearer, false).await;
        let name = row.name;
        let next = Ok((200, b"next".to_vec()));
        assert_eq!(their_next, next, "{name}: hyper's next request");
        assert_eq!(our_next, next, "{name}: the proxy's next request");
        match (&ours, &theirs) {
            (Ok(ours), Ok(theirs)) if !row.stricter => {
                assert_eq!(ours, theirs, "{name}: what the client gets");
            }
            (Ok((502, _)) | Err(_), Ok(_)) => {
                assert!(
                    row.stricter,
                    "{name}: the proxy refuses what hyper reads: {ours:?}"
                );
            }
            (Ok((502, _)) | Err(_), Err(_)) => {}
            _ => panic!("{name}: through the proxy {ours:?}, through hyper {theirs:?}"),
        }
        stop.send(()).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(60), serving)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
