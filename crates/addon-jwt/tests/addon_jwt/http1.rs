//! Property tests of the HTTP/1.1 framing (feature `http`): a response written by the rules
//! reads back as written (length, chunks with extensions and trailers, until the close, no
//! body), whatever pieces it arrives in; arbitrary bytes never panic the decoder and are read
//! alike in any pieces; and a request head written by `encode_request_head` parses back (with
//! `httparse`, hyper's parser) to the same request.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use addon_jwt::http1::{
    Decoded, Http1Error, RequestBody, ResponseDecoder, encode_chunk, encode_last_chunk,
    encode_request_head,
};
use bytes::BytesMut;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use proptest::prelude::*;

type Lines = Vec<(String, Vec<u8>)>;

/// What was read: status, header lines, body, trailer lines, and whether the connection may be
/// kept.
type Read = (u16, Lines, Vec<u8>, Lines, bool);

fn lines(map: &HeaderMap) -> Lines {
    map.iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect()
}

fn decode(method: &Method, input: &[u8], pieces: &[usize]) -> Result<Read, Http1Error> {
    let mut decoder = ResponseDecoder::new(method);
    let mut buf = BytesMut::new();
    let mut read: Read = (0, Vec::new(), Vec::new(), Vec::new(), false);
    let take = |d: Decoded, read: &mut Read| match d {
        Decoded::Head(head) => {
            read.0 = head.status().as_u16();
            read.1 = lines(head.headers());
        }
        Decoded::Data(data) => read.2.extend_from_slice(&data),
        Decoded::Trailers(trailers) => read.3 = lines(&trailers),
        _ => {}
    };
    let mut rest = input;
    let mut sizes = pieces.iter().cycle();
    while !rest.is_empty() && !decoder.is_done() {
        let n = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(d) = decoder.decode(&mut buf)? {
            take(d, &mut read);
        }
    }
    if !decoder.is_done() {
        while let Some(d) = decoder.decode_eof(&mut buf)? {
            take(d, &mut read);
        }
    }
    read.4 = decoder.is_reusable();
    Ok(read)
}

#[derive(Debug, Clone, Copy)]
enum Framing {
    Length,
    Chunked,
    UntilClose,
    None,
}

fn header_lines() -> impl Strategy<Value = Lines> {
    proptest::collection::vec(
        (
            "x-[a-z0-9-]{1,12}",
            proptest::collection::vec(
                prop_oneof![0x21u8..0x7f, Just(b' '), Just(b'\t'), 0x80u8..=0xff],
                0..24,
            ),
        )
            .prop_map(|(name, mut value)| {
                // A field value has no blanks at either end (they are not part of it).
                while value.last().is_some_and(|b| *b == b' ' || *b == b'\t') {
                    value.pop();
                }
                while value.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
                    value.remove(0);
                }
                (name, value)
            }),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// A response written by the rules reads back as written, in any pieces.
    #[test]
    fn responses_read_back_as_written(
        status in prop_oneof![Just(200u16), Just(201), Just(404), Just(503), Just(204), Just(304)],
        framing in prop_oneof![
            Just(Framing::Length),
            Just(Framing::Chunked),
            Just(Framing::UntilClose),
            Just(Framing::None)
        ],
        head_request in any::<bool>(),
        close in any::<bool>(),
        extra in header_lines(),
        trailers in header_lines(),
        body in proptest::collection::vec(any::<u8>(), 0..600),
        chunks in proptest::collection::vec(1usize..100, 1..6),
        extension in prop_oneof![Just(""), Just(";a"), Just(" ; n=v ;m=\"q s\"")],
        pieces in proptest::collection::vec(1usize..50, 1..6),
    ) {
        let method = if head_request { Method::HEAD } else { Method::GET };
        let no_body = head_request || status == 204 || status == 304;
        let mut out = format!("HTTP/1.1 {status} Reason phrase\r\n").into_bytes();
        let mut expected_lines: Lines = Vec::new();
        let mut push = |out: &mut Vec<u8>, name: &str, value: &[u8]| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
            expected_lines.push((name.to_owned(), value.to_vec()));
        };
        let framing = match framing {
            _ if no_body => Framing::None,
            // A response that can have a body and has no framing lasts until the close.
            Framing::None => Framing::UntilClose,
            framing => framing,
        };
        match framing {
            Framing::Length => push(&mut out, "content-length", body.len().to_string().as_bytes()),
            Framing::Chunked => push(&mut out, "transfer-encoding", b"chunked"),
            Framing::UntilClose | Framing::None => {}
        }
        if close {
            push(&mut out, "connection", b"close");
        }
        for (name, value) in &extra {
            push(&mut out, name, value);
        }
        out.extend_from_slice(b"\r\n");
        let mut expected_trailers = Vec::new();
        match framing {
            Framing::Length | Framing::UntilClose => out.extend_from_slice(&body),
            Framing::Chunked => {
                let mut rest = &body[..];
                let mut sizes = chunks.iter().cycle();
                while !rest.is_empty() {
                    let n = (*sizes.next().unwrap()).min(rest.len());
                    let mut line = Vec::new();
                    encode_chunk(n, &mut line);
                    // The extension goes between the size and the line end.
                    line.truncate(line.len() - 2);
                    line.extend_from_slice(extension.as_bytes());
                    line.extend_from_slice(b"\r\n");
                    out.extend_from_slice(&line);
                    out.extend_from_slice(&rest[..n]);
                    out.extend_from_slice(b"\r\n");
                    rest = &rest[n..];
                }
                let mut map = HeaderMap::new();
                for (name, value) in &trailers {
                    map.append(
                        HeaderName::from_bytes(name.as_bytes()).unwrap(),
                        HeaderValue::from_bytes(value).unwrap(),
                    );
                }
                encode_last_chunk(Some(&map), &mut out);
                expected_trailers = lines(&map);
            }
            Framing::None => {}
        }
        // A HeaderMap gives the lines grouped by name, in the order names first appear.
        let firsts: Vec<String> = expected_lines.iter().map(|(n, _)| n.clone()).collect();
        expected_lines.sort_by_key(|(n, _)| firsts.iter().position(|m| m == n));
        let read = decode(&method, &out, &pieces).unwrap();
        let expected_body = if matches!(framing, Framing::None) { Vec::new() } else { body.clone() };
        let reusable = !close && !matches!(framing, Framing::UntilClose);
        prop_assert_eq!(read, (status, expected_lines, expected_body, expected_trailers, reusable));
    }

    /// Arbitrary bytes never panic the decoder, and read alike however they arrive.
    #[test]
    fn arbitrary_bytes_read_alike_in_any_pieces(
        input in proptest::collection::vec(any::<u8>(), 0..400),
        head_request in any::<bool>(),
        pieces in proptest::collection::vec(1usize..50, 1..6),
    ) {
        let method = if head_request { Method::HEAD } else { Method::GET };
        prop_assert_eq!(decode(&method, &input, &pieces), decode(&method, &input, &[input.len().max(1)]));
    }

    /// The same with a valid status line in front, so the header section and body rules are
    /// reached.
    #[test]
    fn arbitrary_heads_and_bodies_read_alike_in_any_pieces(
        rest in "(([a-zA-Z-]{1,12}: [ -~]{0,12}\r\n){0,4}\r\n)?[0-9a-fA-F;\r\n =a-z]{0,80}",
        chunked in any::<bool>(),
        pieces in proptest::collection::vec(1usize..20, 1..6),
    ) {
        let framing = if chunked { "transfer-encoding: chunked\r\n" } else { "" };
        let input = format!("HTTP/1.1 200 OK\r\n{framing}{rest}");
        prop_assert_eq!(
            decode(&Method::GET, input.as_bytes(), &pieces),
            decode(&Method::GET, input.as_bytes(), &[input.len()])
        );
    }

    /// A request head parses back, with hyper's parser, to the request it was written from.
    #[test]
    fn request_heads_parse_back(
        method in prop_oneof![Just(Method::GET), Just(Method::POST), Just(Method::DELETE), Just(Method::PATCH)],
        path in "(/[a-zA-Z0-9._~%!$&'()*+,;=:@-]{0,12}){1,4}(\\?[a-zA-Z0-9=&%/]{0,16})?",
        extra in header_lines(),
        body in prop_oneof![
            Just(RequestBody::None),
            (0u64..1_000_000).prop_map(RequestBody::Length),
            Just(RequestBody::Chunked)
        ],
    ) {
        let mut map = HeaderMap::new();
        map.insert("content-length", HeaderValue::from_static("17"));
        map.insert("transfer-encoding", HeaderValue::from_static("gzip"));
        for (name, value) in &extra {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        let target: http::uri::PathAndQuery = path.parse().unwrap();
        let mut out = Vec::new();
        encode_request_head(&method, Some(&target), &map, body, &mut out);
        let mut parsed = [httparse::EMPTY_HEADER; 16];
        let mut request = httparse::Request::new(&mut parsed);
        prop_assert_eq!(request.parse(&out).unwrap(), httparse::Status::Complete(out.len()));
        prop_assert_eq!(request.method, Some(method.as_str()));
        prop_assert_eq!(request.path, Some(target.as_str()));
        prop_assert_eq!(request.version, Some(1));
        let got: Lines = request
            .headers
            .iter()
            .map(|h| (h.name.to_owned(), h.value.to_vec()))
            .collect();
        let mut want: Lines = extra
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        // Grouped by name, as a HeaderMap iterates.
        want.sort_by_key(|(n, _)| extra.iter().position(|(m, _)| m == n));
        match body {
            RequestBody::None => {}
            RequestBody::Length(n) => want.push(("content-length".to_owned(), n.to_string().into_bytes())),
            RequestBody::Chunked => want.push(("transfer-encoding".to_owned(), b"chunked".to_vec())),
            _ => unreachable!(),
        }
        prop_assert_eq!(got, want);
    }
}
