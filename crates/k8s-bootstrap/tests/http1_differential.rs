//! The forward proxy's HTTP/1.1 response decoder (`addon_jwt::http1::ResponseDecoder`) held to
//! hyper's client: the same bytes, fed to both (to the decoder in random pieces), must give
//! the same status, header lines, body and trailers, or both a refusal. Where the decoder is
//! stricter than hyper on purpose, the case is named ([`stricter`]) and checked to be one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code fails loudly"
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
/// two ways (both `Content-Length` and `Transfer-Encoding`, or `Transfer-Encoding` in
/// HTTP/1.0), a 101 to a request that asked for no upgrade, and control characters in chunk
/// extensions.
fn stricter(e: &Http1Error) -> bool {
    matches!(
        e,
        Http1Error::ContentLengthWithTransferEncoding
            | Http1Error::TransferEncodingInHttp10
            | Http1Error::UnexpectedUpgrade
            | Http1Error::MalformedChunk
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
