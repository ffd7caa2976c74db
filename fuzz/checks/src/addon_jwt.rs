//! Checks for the `addon_jwt_*` targets.

use std::sync::OnceLock;
use std::time::Duration;

use addon_jwt::{
    Algorithm, Audience, Decision, Issuer, KeySet, MAX_KEYS, Sidecar, SigningKey, Validation,
    verify, verify_jws,
};

use crate::fixtures::addon_jwt_now;
use crate::outcome::Outcome;

/// The reference JWKS: the public keys of every algorithm that signed `vectors/jwt.jsonl`.
const JWKS: &str = include_str!("../../../crates/addon-jwt/tests/vectors/jwt_jwks.json");

/// The HMAC secret the verify check adds to the reference keys.
const HMAC_SECRET: &[u8] = b"fuzz-shared-secret-0123456789abcdef";

/// The user of every header-safe token the reference keys signed.
const REFERENCE_USER: &[u8] = b"system:serviceaccount:default:oracle";

/// The reference JWKS and the HMAC secret, loaded once.
fn keys() -> &'static KeySet {
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = KeySet::from_jwks(JWKS).expect("reference JWKS loads");
        keys.extend(KeySet::from_hmac_secret(HMAC_SECRET).expect("a 35-byte secret"))
            .expect("room for one more key");
        keys
    })
}

/// The issuer and audience of the reference tokens.
fn validation() -> Validation {
    Validation::new(
        Issuer::new("https://kubernetes.default.svc.cluster.local"),
        Audience::new("https://kubernetes.default.svc"),
    )
}

/// `addon_jwt::verify` and `verify_jws` on a token (the whole input as UTF-8), with the
/// reference JWKS plus an HMAC key, every algorithm allowed, 60 s leeway, at 2025-06-15.
///
/// Verified claims carry a subject. Accepted: `verify` accepts the token.
pub fn addon_jwt_verify(data: &[u8]) -> Outcome {
    let Ok(token) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let validation = validation()
        .algorithms(&Algorithm::ALL)
        .leeway(Duration::from_secs(60));
    let verified = verify(token, keys(), &validation, addon_jwt_now());
    if let Ok(claims) = &verified {
        assert!(!claims.subject().is_empty());
    }
    let _ = verify_jws(token, keys(), &Algorithm::ALL);
    Outcome::accepted_if(verified.is_ok())
}

/// `KeySet::from_jwks` on a JWKS document (the whole input as UTF-8).
///
/// A loaded key set holds between one and [`MAX_KEYS`] keys. Accepted: the document loads.
pub fn addon_jwt_jwks(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let Ok(keys) = KeySet::from_jwks(text) else {
        return Outcome::Rejected;
    };
    assert!(!keys.is_empty() && keys.len() <= MAX_KEYS);
    Outcome::Accepted
}

/// PEM public key and certificate loading: the first byte picks the algorithm (an index into
/// `Algorithm::ALL`), the rest is the PEM text (as UTF-8), also tried as SPKI DER and as a PKCS
/// #8 DER signing key.
///
/// A PEM key set is never HS256 and never empty. Accepted: `KeySet::from_pem` loads.
pub fn addon_jwt_pem(data: &[u8]) -> Outcome {
    let Some((first, rest)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return Outcome::Rejected;
    };
    let algs = Algorithm::ALL;
    let alg = algs[usize::from(*first) % algs.len()];
    let loaded = KeySet::from_pem(text, alg);
    if let Ok(keys) = &loaded {
        assert!(alg != Algorithm::Hs256);
        assert!(!keys.is_empty());
    }
    let _ = KeySet::from_spki_der(rest, alg);
    let _ = SigningKey::from_pkcs8_der(rest);
    Outcome::accepted_if(loaded.is_ok())
}

/// The sidecar header decision: header lines `name:value` separated by `\n` (a line without
/// a colon is skipped; the name is read lossily as UTF-8), decided at 2025-06-15 by one sidecar
/// with the reference JWKS and a 64-token cache, shared by every input.
///
/// A forwarded request carries no `Authorization`, none of the identity headers the sidecar
/// strips (`addon_jwt::STRIPPED_IDENTITY_HEADERS`, whatever their case, `_` for `-`) and exactly
/// one `X-Authenticated-User` (whatever its case, `_` for `-`): the last header,
/// `X-Authenticated-User` with the only header-safe subject the reference keys ever signed.
/// Accepted: the request is forwarded.
///
/// The same lines as an `http::HeaderMap` (those `http` accepts) are decided in place too, by a
/// second sidecar whose cache starts empty for each input: `decide_header_map_if_cached`
/// before verification gives no decision (the map untouched) or the in-place decision; after
/// it, a forwarded token is decided alike from the cache, and a refused one as before.
pub fn addon_jwt_sidecar(data: &[u8]) -> Outcome {
    sidecar_header_map(data);
    static SIDECAR: OnceLock<Sidecar> = OnceLock::new();
    let headers: Vec<(String, &[u8])> = data
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let (name, value) = line.split_at(colon);
            Some((String::from_utf8_lossy(name).into_owned(), value.get(1..)?))
        })
        .collect();
    let sidecar = SIDECAR.get_or_init(|| {
        let keys = KeySet::from_jwks(JWKS).expect("reference JWKS loads");
        Sidecar::new(keys, validation()).cache_capacity(64)
    });
    let decision = sidecar.decide(
        headers.iter().map(|(n, v)| (n.as_str(), *v)),
        addon_jwt_now(),
    );
    let Decision::Forward(f) = decision else {
        return Outcome::Rejected;
    };
    let users = f
        .headers()
        .filter(|(n, _)| {
            n.replace('_', "-")
                .eq_ignore_ascii_case("x-authenticated-user")
        })
        .count();
    assert_eq!(users, 1);
    assert_eq!(
        f.headers().last(),
        Some(("X-Authenticated-User", REFERENCE_USER))
    );
    assert!(
        !f.headers()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    );
    assert!(!f.headers().any(|(n, _)| stripped_identity(n)));
    Outcome::Accepted
}

/// Whether `name`, in lower case with `-` for `_`, is one of the listed identity headers or
/// starts with one of the listed prefixes (`X-Remote-Extra-*`).
fn stripped_identity(name: &str) -> bool {
    let folded = name.to_ascii_lowercase().replace('_', "-");
    addon_jwt::STRIPPED_IDENTITY_HEADERS.iter().any(|listed| {
        let listed = listed.to_ascii_lowercase();
        match listed.strip_suffix('*') {
            Some(prefix) => folded.starts_with(prefix),
            None => folded == listed,
        }
    })
}

/// The in-place decision and its cache-only form on the lines of `data` (see
/// [`addon_jwt_sidecar`]).
fn sidecar_header_map(data: &[u8]) {
    let mut map = http::HeaderMap::new();
    for line in data.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = line.split_at(colon);
        let (Ok(name), Some(Ok(value))) = (
            http::HeaderName::from_bytes(name),
            value.get(1..).map(http::HeaderValue::from_bytes),
        ) else {
            continue;
        };
        map.append(name, value);
    }
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    let keys = KEYS.get_or_init(|| KeySet::from_jwks(JWKS).expect("reference JWKS loads"));
    // A cache that starts empty for each input; the keys are parsed once.
    let sidecar = Sidecar::new(keys.clone(), validation());
    let now = addon_jwt_now();
    let reason =
        |d: Result<std::sync::Arc<str>, addon_jwt::Rejection>| d.map_err(|r| r.reason().clone());
    let (mut early, mut full, mut late) = (map.clone(), map.clone(), map.clone());
    let before = sidecar
        .decide_header_map_if_cached(&mut early, now)
        .map(reason);
    let decided = reason(sidecar.decide_header_map(&mut full, now));
    match &before {
        None => assert_eq!(early, map, "no decision leaves the map as it was"),
        Some(before) => {
            assert_eq!(before, &decided);
            assert_eq!(early, full);
        }
    }
    let after = sidecar
        .decide_header_map_if_cached(&mut late, now)
        .map(reason);
    match &decided {
        Ok(user) => {
            assert_eq!(user.as_bytes(), REFERENCE_USER);
            assert!(!full.contains_key(http::header::AUTHORIZATION));
            let users: Vec<_> = full.get_all("x-authenticated-user").iter().collect();
            assert_eq!(users, [REFERENCE_USER]);
            assert!(!full.keys().any(|n| stripped_identity(n.as_str())));
            // Once verified, the cache alone decides alike.
            assert_eq!(after.as_ref(), Some(&decided));
            assert_eq!(late, full);
        }
        Err(_) => {
            assert!(full.is_empty(), "a rejection empties the map");
            // Nothing refused is remembered: the cache decides as it did before.
            assert_eq!(after, before);
            assert_eq!(late, early);
        }
    }
}

/// `add_auth::AddAuth::decide` (the API server's add-auth decision). Input: the first line is
/// the query, the second the user's name (read lossily as UTF-8), the third `<namespace>/<name>`
/// of the Service, the rest header lines `name:value` (as for [`addon_jwt_sidecar`]). Decided at
/// 2025-06-15 by one decision shared by every input (an Ed25519 key, no rate limit, 8 users
/// tracked: the table's eviction is exercised).
///
/// Whatever the input: no panic, at most 8 users tracked. An injection needs an `add-auth`
/// parameter whose value decodes to `true`; its query keeps every other non-empty parameter in
/// order and has no `add-auth` left; its header lines keep every line but `Authorization` and
/// `X-Authenticated-User` (any case, `_` for `-`) in order and end with the one
/// `Authorization: Bearer <token>`, a token that verifies for the user and the Service.
/// Accepted: a token is injected.
pub fn addon_jwt_add_auth(data: &[u8]) -> Outcome {
    use std::sync::Mutex;

    use addon_jwt::add_auth::{self, AddAuth, ProxiedService};
    use addon_jwt::{Minter, RequestUser};

    const ED25519: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
    const ISSUER: &str = "https://apiserver.example";
    static DECISION: OnceLock<Mutex<AddAuth>> = OnceLock::new();
    static PUBLIC: OnceLock<KeySet> = OnceLock::new();

    let mut lines = data.split(|b| *b == b'\n');
    let query = lines.next().map(String::from_utf8_lossy);
    let user = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let service = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let (namespace, name) = service.split_once('/').unwrap_or((&service, ""));
    let headers: Vec<(String, &[u8])> = lines
        .filter_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let (name, value) = line.split_at(colon);
            Some((String::from_utf8_lossy(name).into_owned(), value.get(1..)?))
        })
        .collect();

    let decision = DECISION.get_or_init(|| {
        let key = SigningKey::from_pkcs8_pem(ED25519).expect("the fixture key loads");
        Mutex::new(
            AddAuth::new(Minter::new(key, Issuer::new(ISSUER)))
                .rate(std::num::NonZeroU32::MIN, Duration::ZERO)
                .users_capacity(8),
        )
    });
    let mut decision = decision
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let service = ProxiedService::new(namespace, name);
    let decided = decision.decide(
        &RequestUser::new(user.clone()),
        &service,
        query.as_deref(),
        addon_jwt_now(),
    );
    assert!(decision.users_tracked() <= 8);
    drop(decision);
    let Ok(add_auth::Decision::Inject(injection)) = decided else {
        return Outcome::Rejected;
    };
    let query = query.expect("an injection needs a query");
    let is_add_auth = |pair: &str| {
        let key = pair.split('=').next().unwrap_or_default();
        go_unescape(key).as_deref() == Some(b"add-auth".as_slice())
    };
    assert!(query.split('&').any(|pair| {
        is_add_auth(pair)
            && go_unescape(pair.split_once('=').map_or("", |(_, v)| v)).as_deref()
                == Some(b"true".as_slice())
    }));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !is_add_auth(pair))
        .collect();
    let rewritten: Vec<&str> = injection
        .query()
        .map(|q| q.split('&').collect())
        .unwrap_or_default();
    assert_eq!(rewritten, kept);

    let upstream: Vec<(&str, &[u8])> = injection.headers(&headers).collect();
    let (last, rest) = upstream
        .split_last()
        .expect("at least the Authorization line");
    let replaced = |name: &str| {
        let folded = name.to_ascii_lowercase().replace('_', "-");
        folded == "authorization" || folded == "x-authenticated-user"
    };
    let expected: Vec<(&str, &[u8])> = headers
        .iter()
        .filter(|(n, _)| !replaced(n))
        .map(|(n, v)| (n.as_str(), *v))
        .collect();
    assert_eq!(rest, expected.as_slice());
    assert_eq!(last.0, "Authorization");
    let token = std::str::from_utf8(last.1)
        .expect("a token is ASCII")
        .strip_prefix("Bearer ")
        .expect("a bearer token");
    let keys = PUBLIC.get_or_init(|| {
        SigningKey::from_pkcs8_pem(ED25519)
            .and_then(|k| k.public_key_set())
            .expect("the fixture key's public key")
    });
    let validation = Validation::new(Issuer::new(ISSUER), service.audience());
    let claims = verify(token, keys, &validation, addon_jwt_now()).expect("the token verifies");
    assert_eq!(claims.subject(), user);
    Outcome::Accepted
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte, any other `%` an error.
fn go_unescape(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = [bytes.next()?, bytes.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
            }
            b => out.push(b),
        }
    }
    Some(out)
}

/// The forward proxy's HTTP/1.1 response decoder (`addon_jwt::http1::ResponseDecoder`). Input:
/// the first byte chooses the request method (`HEAD` when its low bit is set, else `GET`) and
/// the size of the pieces the rest arrives in (its other bits, plus one); the rest is what the
/// upstream sent, then the connection ends.
///
/// However the bytes arrive (in those pieces or at once), the decoder reads the same: the same
/// head, body and trailers, or the same error. It consumes only what it reads, never more than
/// the input; the head comes first, exactly once, and nothing follows the end; a `HEAD`, 204 or
/// 304 response has no body, and a body of stated length has exactly that length.
/// Accepted: a complete response.
pub fn addon_jwt_http1_response(data: &[u8]) -> Outcome {
    let Some((first, input)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let method = if first & 1 == 1 {
        http::Method::HEAD
    } else {
        http::Method::GET
    };
    let piece = usize::from(first >> 1) + 1;
    let pieces = decode_response(&method, input, piece);
    let whole = decode_response(&method, input, input.len().max(1));
    assert_eq!(
        pieces, whole,
        "the decoder reads alike however the bytes arrive"
    );
    let Ok((status, headers, body, _)) = pieces else {
        return Outcome::Rejected;
    };
    assert!(body.len() <= input.len());
    if method == http::Method::HEAD || status == 204 || status == 304 {
        assert!(body.is_empty());
    } else if let Some(length) = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.trim().parse::<usize>().ok())
    {
        assert_eq!(body.len(), length);
    }
    Outcome::Accepted
}

/// Header or trailer lines, in order.
type Lines = Vec<(String, Vec<u8>)>;
/// A response's status, header lines, body and trailer lines.
type Response = (u16, Lines, Vec<u8>, Lines);

/// What a decoder reads from `input` fed in pieces of `piece` bytes, then the end of the
/// connection.
fn decode_response(
    method: &http::Method,
    input: &[u8],
    piece: usize,
) -> Result<Response, addon_jwt::http1::Http1Error> {
    use addon_jwt::http1::{Decoded, ResponseDecoder};
    let lines = |map: &http::HeaderMap| -> Lines {
        map.iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect()
    };
    let mut decoder = ResponseDecoder::new(method);
    let mut buf = bytes::BytesMut::new();
    let mut head: Option<(u16, Lines)> = None;
    let (mut body, mut trailers, mut ended) = (Vec::new(), Vec::new(), false);
    let mut take = |decoded: Decoded| {
        assert!(!ended, "nothing after the end");
        match decoded {
            Decoded::Head(h) => {
                assert!(head.is_none(), "one head");
                head = Some((h.status().as_u16(), lines(h.headers())));
            }
            Decoded::Informational(s) => {
                assert!(head.is_none() && s.is_informational() && s != 101);
            }
            Decoded::Data(d) => {
                assert!(head.is_some() && !d.is_empty());
                body.extend_from_slice(&d);
            }
            Decoded::Trailers(t) => {
                assert!(head.is_some() && !t.is_empty());
                trailers = lines(&t);
            }
            Decoded::End => {
                assert!(head.is_some());
                ended = true;
            }
            _ => panic!("an unknown part"),
        }
    };
    let mut consumed = 0;
    for chunk in input.chunks(piece) {
        buf.extend_from_slice(chunk);
        consumed += chunk.len();
        while let Some(decoded) = decoder.decode(&mut buf)? {
            take(decoded);
        }
        assert!(buf.len() <= consumed);
        if decoder.is_done() {
            break;
        }
    }
    while let Some(decoded) = decoder.decode_eof(&mut buf)? {
        take(decoded);
    }
    assert!(decoder.is_done() && ended);
    let (status, headers) = head.expect("a complete response has a head");
    Ok((status, headers, body, trailers))
}

/// `addon_jwt_http1_differential`: the decoder held to hyper's client on the same response
/// bytes. Input: a byte choosing the method (its low bit: `HEAD`, else `GET`) and the piece
/// size the decoder is fed in, then the bytes an add-on sends. Both must read the same
/// status, header lines (as the decoder hands them on: a `Content-Length` list of one number
/// repeated as that number; no invalid `Content-Length` on a bodiless response), body and
/// trailers, or both refuse the response; the decoder may refuse what hyper reads only where
/// it is stricter on purpose (a response that could be framed two ways, an unasked 101, a
/// malformed chunk, a bare LF in the trailer section, which hyper refuses within a trailer
/// field but takes as the section's end).
pub fn addon_jwt_http1_differential(data: &[u8]) -> Outcome {
    let Some((first, input)) = data.split_first() else {
        return Outcome::Rejected;
    };
    let method = if first & 1 == 1 {
        http::Method::HEAD
    } else {
        http::Method::GET
    };
    let piece = usize::from(first >> 1) + 1;
    let ours =
        decode_response(&method, input, piece).map(|(status, mut headers, body, mut trailers)| {
            headers.sort_by(|a, b| a.0.cmp(&b.0));
            trailers.sort_by(|a, b| a.0.cmp(&b.0));
            (status, headers, body, trailers)
        });
    let theirs = hyper_reads(&method, input).map(|read| as_forwarded(read, &method));
    let shown = String::from_utf8_lossy(input);
    match (ours, theirs) {
        (Ok(ours), Some(theirs)) => {
            assert_eq!(ours, theirs, "the decoder and hyper read alike: {shown:?}");
            Outcome::Accepted
        }
        (Err(e), Some(_)) => {
            use addon_jwt::http1::Http1Error;
            assert!(
                matches!(
                    e,
                    Http1Error::ContentLengthWithTransferEncoding
                        | Http1Error::TransferEncodingInHttp10
                        | Http1Error::InvalidTransferEncoding
                        | Http1Error::UnexpectedUpgrade
                        | Http1Error::MalformedChunk
                        | Http1Error::MalformedTrailers
                ),
                "hyper reads what the decoder refuses ({e:?}): {shown:?}"
            );
            Outcome::Rejected
        }
        (Ok(ours), None) => panic!("the decoder reads what hyper refuses ({ours:?}): {shown:?}"),
        (Err(_), None) => Outcome::Rejected,
    }
}

/// hyper's client reading `input` as the answer to a `method` request, the connection closed
/// after it (lines sorted by name); `None` when hyper refuses it.
fn hyper_reads(method: &http::Method, input: &[u8]) -> Option<Response> {
    use http_body_util::BodyExt as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
    }
    let lines = |map: &http::HeaderMap| -> Lines {
        let mut lines: Lines = map
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect();
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        lines
    };
    RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let (client, mut server) = tokio::io::duplex(1 << 20);
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(client))
                    .await
                    .ok()?;
            let driven = tokio::spawn(connection);
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
                let mut rest = Vec::new();
                let _ = server.read_to_end(&mut rest).await;
            });
            let request = http::Request::builder()
                .method(method.clone())
                .uri("/")
                .header("host", "addon")
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .ok()?;
            let read = async {
                let response = sender.send_request(request).await.ok()?;
                let (parts, body) = response.into_parts();
                let collected = body.collect().await.ok()?;
                Some((
                    parts.status.as_u16(),
                    lines(&parts.headers),
                    collected.trailers().map(&lines).unwrap_or_default(),
                    collected.to_bytes().to_vec(),
                ))
            }
            .await;
            drop(sender);
            addon.abort();
            driven.abort();
            read.map(|(status, headers, trailers, body)| (status, headers, body, trailers))
        })
    })
}

/// hyper's reading as the decoder hands it on: a `Content-Length` list of one number
/// repeated (a comma, or several lines) becomes that number on one line; a response without
/// a body (`HEAD`, 204, 304) loses a `Content-Length` that is no valid length.
fn as_forwarded(mut read: Response, method: &http::Method) -> Response {
    let headers = &mut read.1;
    let lengths: Vec<usize> = (0..headers.len())
        .filter(|i| headers[*i].0 == "content-length")
        .collect();
    let Some(&first) = lengths.first() else {
        return read;
    };
    let items: Vec<Option<u64>> = lengths
        .iter()
        .flat_map(|i| headers[*i].1.split(|b| *b == b','))
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
    let listed = lengths.len() > 1 || headers[first].1.contains(&b',');
    let bodiless = method == http::Method::HEAD || read.0 == 204 || read.0 == 304;
    match same {
        Some(_) if !listed => {}
        Some(n) => {
            headers[first].1 = n.to_string().into_bytes();
            for i in lengths.iter().skip(1).rev() {
                headers.remove(*i);
            }
        }
        None if bodiless => {
            for i in lengths.iter().rev() {
                headers.remove(*i);
            }
        }
        None => {}
    }
    read
}
