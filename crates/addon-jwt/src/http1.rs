//! HTTP/1.1 framing for a proxy in front of an add-on (feature `http`), sans-IO: the request
//! head it sends upstream ([`encode_request_head`], [`encode_chunk`], [`encode_last_chunk`])
//! and the upstream's responses read back ([`ResponseDecoder`], RFC 9112).
//!
//! The decoder is strict where a lenient reading could let a response be read two ways
//! (request smuggling, response splitting) and bounded everywhere: the head, the number of
//! header lines, the chunk lines, the chunk extensions, the trailer section and the number of
//! informational responses all have limits, and a close-delimited body is passed on as it
//! arrives, never collected.
//!
//! ```
//! use addon_jwt::http1::{Decoded, ResponseDecoder};
//! use bytes::BytesMut;
//!
//! let mut decoder = ResponseDecoder::new(&http::Method::GET);
//! let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"[..]);
//! let Some(Decoded::Head(head)) = decoder.decode(&mut buf)? else { panic!() };
//! assert_eq!(head.status(), 200);
//! let Some(Decoded::Data(data)) = decoder.decode(&mut buf)? else { panic!() };
//! assert_eq!(&data[..], b"hi");
//! assert!(matches!(decoder.decode(&mut buf)?, Some(Decoded::End)));
//! assert!(decoder.is_reusable());
//! # Ok::<(), addon_jwt::http1::Http1Error>(())
//! ```

use std::mem::MaybeUninit;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Version};

/// The largest response head read: hyper's default buffer limit for a client (8 KiB and
/// 4 KiB for each of 100 header lines).
pub const MAX_RESPONSE_HEAD_BYTES: usize = 8192 + 4096 * 100;
/// The most header lines a response head (or a trailer section) may have, hyper's default.
pub const MAX_RESPONSE_HEADERS: usize = 100;
/// The longest chunk-size line, extensions included.
pub const MAX_CHUNK_LINE_BYTES: usize = 4096;
/// The most chunk-extension bytes in one body, hyper's limit.
pub const MAX_CHUNK_EXTENSION_BYTES: usize = 16 * 1024;
/// The largest trailer section, hyper's limit.
pub const MAX_TRAILER_BYTES: usize = 16 * 1024;
/// The most informational (1xx) responses before the final one.
pub const MAX_INFORMATIONAL_RESPONSES: usize = 32;

/// Why a response could not be read. Messages name the rule broken, never the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Http1Error {
    /// The head is larger than [`MAX_RESPONSE_HEAD_BYTES`].
    #[error("response head exceeds the limit of {MAX_RESPONSE_HEAD_BYTES} bytes")]
    HeadTooLarge,
    /// The head has more than [`MAX_RESPONSE_HEADERS`] header lines.
    #[error("response head has more than {MAX_RESPONSE_HEADERS} header lines")]
    TooManyHeaders,
    /// The head is not an HTTP/1.x status line and header section.
    #[error("malformed response head: invalid {part}")]
    MalformedHead {
        /// What is invalid (`status line`, `header name`, `header value`, ...).
        part: &'static str,
    },
    /// A 101 response, though the request asked for no protocol switch.
    #[error("101 switching protocols without an upgrade request")]
    UnexpectedUpgrade,
    /// More than [`MAX_INFORMATIONAL_RESPONSES`] 1xx responses.
    #[error("more than {MAX_INFORMATIONAL_RESPONSES} informational responses")]
    TooManyInformational,
    /// `Content-Length` is not one decimal number (or a list of one number repeated).
    #[error("invalid content-length")]
    InvalidContentLength,
    /// Both `Content-Length` and `Transfer-Encoding`: the body could be read two ways.
    #[error("both content-length and transfer-encoding")]
    ContentLengthWithTransferEncoding,
    /// `Transfer-Encoding` holds a byte no list of codings has (a control character or a
    /// byte above ASCII): whether the body is chunked cannot be read from it.
    #[error("invalid transfer-encoding")]
    InvalidTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 response, which has no such framing.
    #[error("transfer-encoding in an HTTP/1.0 response")]
    TransferEncodingInHttp10,
    /// A chunk-size line, or the line end after a chunk's data, is malformed or too long.
    #[error("malformed chunk")]
    MalformedChunk,
    /// The body's chunk extensions exceed [`MAX_CHUNK_EXTENSION_BYTES`].
    #[error("chunk extensions exceed the limit of {MAX_CHUNK_EXTENSION_BYTES} bytes")]
    ChunkExtensionsTooLarge,
    /// The trailer section exceeds [`MAX_TRAILER_BYTES`] or [`MAX_RESPONSE_HEADERS`] lines.
    #[error("trailer section exceeds the limit of {MAX_TRAILER_BYTES} bytes")]
    TrailersTooLarge,
    /// The trailer section is malformed.
    #[error("malformed trailer section")]
    MalformedTrailers,
    /// The connection ended before any byte of a response.
    #[error("connection closed before a response")]
    ClosedBeforeResponse,
    /// The connection ended within a response.
    #[error("connection closed within the response")]
    ClosedWithinResponse,
}

/// What [`ResponseDecoder::decode`] read.
#[derive(Debug)]
#[non_exhaustive]
pub enum Decoded {
    /// An informational response (1xx other than 101), read and passed over; the final
    /// response follows. `100` is the go-ahead for a request sent with `Expect: 100-continue`.
    Informational(StatusCode),
    /// The final response's head (status, version, header lines in order, framing headers
    /// included).
    Head(Response<()>),
    /// Body bytes, as they arrived (without chunk framing).
    Data(Bytes),
    /// The trailer section of a chunked body, when it has fields.
    Trailers(HeaderMap),
    /// The response is complete.
    End,
}

/// Reads one response from the bytes of a connection, as they arrive.
///
/// Feed it the connection's read buffer: [`decode`](ResponseDecoder::decode) consumes what it
/// reads from the front and returns `Ok(None)` when it needs more bytes; at the end of the
/// connection call [`decode_eof`](ResponseDecoder::decode_eof). Bytes after the response
/// (there should be none) are left in the buffer. The body's framing follows RFC 9112 §6.3:
/// none for `HEAD`, 204 and 304; chunked when `Transfer-Encoding` ends with `chunked`;
/// `Content-Length`; otherwise until the connection closes.
#[derive(Debug)]
pub struct ResponseDecoder {
    state: State,
    head_request: bool,
    keep_alive: bool,
    informational: usize,
    extension_bytes: usize,
    /// How far the buffer was searched for the end of the head.
    scanned: usize,
    /// Whether any byte of a response arrived.
    received: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkDataEnd,
    Trailers,
    UntilClose,
    Ending,
    Done,
}

impl ResponseDecoder {
    /// A decoder for the response to a request with `method` (a `HEAD` response has no body).
    #[must_use]
    pub fn new(method: &Method) -> ResponseDecoder {
        ResponseDecoder {
            state: State::Head,
            head_request: method == Method::HEAD,
            keep_alive: false,
            informational: 0,
            extension_bytes: 0,
            scanned: 0,
            received: false,
        }
    }

    /// Reads the next part of the response from the front of `buf`; `Ok(None)` when `buf`
    /// holds no complete part yet (or the response is complete).
    ///
    /// # Errors
    ///
    /// [`Http1Error`] when the bytes are not a valid response or exceed a limit; the
    /// connection must then be closed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, Http1Error> {
        loop {
            match self.state {
                State::Head => return self.head(buf),
                State::Length(remaining) => {
                    return Ok(take(buf, remaining).map(|(data, left)| {
                        self.state = if left == 0 {
                            State::Ending
                        } else {
                            State::Length(left)
                        };
                        Decoded::Data(data)
                    }));
                }
                State::ChunkSize => {
                    let Some(size) = self.chunk_size(buf)? else {
                        return Ok(None);
                    };
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::ChunkData(remaining) => {
                    return Ok(take(buf, remaining).map(|(data, left)| {
                        self.state = if left == 0 {
                            State::ChunkDataEnd
                        } else {
                            State::ChunkData(left)
                        };
                        Decoded::Data(data)
                    }));
                }
                State::ChunkDataEnd => {
                    match buf.get(..2) {
                        Some(b"\r\n") => buf.advance(2),
                        Some(_) => return Err(Http1Error::MalformedChunk),
                        None if buf.first().is_none_or(|b| *b == b'\r') => return Ok(None),
                        None => return Err(Http1Error::MalformedChunk),
                    }
                    self.state = State::ChunkSize;
                }
                State::Trailers => return self.trailers(buf),
                State::UntilClose => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    return Ok(Some(Decoded::Data(buf.split().freeze())));
                }
                State::Ending => {
                    self.state = State::Done;
                    return Ok(Some(Decoded::End));
                }
                State::Done => return Ok(None),
            }
        }
    }

    /// Reads the rest of `buf` once the connection has ended: the end of a body that lasts
    /// until the connection closes, or whatever [`decode`](ResponseDecoder::decode) still has
    /// to return; `Ok(None)` once the response is complete.
    ///
    /// # Errors
    ///
    /// As [`decode`](ResponseDecoder::decode); [`Http1Error::ClosedBeforeResponse`] when no
    /// byte of a response arrived (a kept connection the server closed: the request may be
    /// sent again on a new one if that is safe), [`Http1Error::ClosedWithinResponse`] when the
    /// response is incomplete.
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, Http1Error> {
        if let Some(decoded) = self.decode(buf)? {
            return Ok(Some(decoded));
        }
        if self.state == State::Head && !buf.is_empty() {
            // An unfinished head is parsed once more, so a malformed one is reported as such
            // however it arrived.
            self.scanned = 0;
            if let Some(decoded) = self.head(buf)? {
                return Ok(Some(decoded));
            }
        }
        match self.state {
            State::UntilClose => {
                self.state = State::Done;
                Ok(Some(Decoded::End))
            }
            State::Done => Ok(None),
            State::Head if !self.received && buf.is_empty() => {
                Err(Http1Error::ClosedBeforeResponse)
            }
            _ => Err(Http1Error::ClosedWithinResponse),
        }
    }

    /// Whether no byte of a response has arrived yet: a connection that ends now ended before
    /// the response ([`Http1Error::ClosedBeforeResponse`]).
    #[must_use]
    pub fn awaits_first_byte(&self) -> bool {
        self.state == State::Head && !self.received
    }

    /// Whether the response is complete.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the response is complete and the connection may carry another request: its
    /// body was framed by length or chunks (or it had none), and the server did not ask to
    /// close (`Connection: close`; an HTTP/1.0 response needs `Connection: keep-alive`).
    #[must_use]
    pub fn is_reusable(&self) -> bool {
        self.is_done() && self.keep_alive
    }

    /// How many body bytes are still to come, when the framing says (`Content-Length`, or no
    /// body); `None` before the head and for chunked or close-delimited bodies.
    #[must_use]
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(n) => Some(n),
            State::Ending | State::Done => Some(0),
            _ => None,
        }
    }

    fn head(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, Http1Error> {
        if !buf.is_empty() {
            self.received = true;
        }
        // A head usually arrives whole and is parsed at once. After a partial parse, it is
        // parsed again only once its end is there, so a head that arrives in pieces is
        // searched once, not parsed again for every piece.
        if self.scanned > 0 && !head_ends(buf, &mut self.scanned) {
            return if buf.len() > MAX_RESPONSE_HEAD_BYTES {
                Err(Http1Error::HeadTooLarge)
            } else {
                Ok(None)
            };
        }
        // The lines are written as they are parsed, not cleared first (a 3.2 KiB store per
        // response otherwise).
        let mut lines =
            [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_RESPONSE_HEADERS];
        let mut parsed = httparse::Response::new(&mut []);
        let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut parsed,
            buf,
            &mut lines,
        ) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                // What is here has no blank line (else the parse would be complete or an
                // error): the search for one starts after it.
                self.scanned = buf.len().max(1);
                return if buf.len() > MAX_RESPONSE_HEAD_BYTES {
                    Err(Http1Error::HeadTooLarge)
                } else {
                    Ok(None)
                };
            }
            Err(httparse::Error::TooManyHeaders) => return Err(Http1Error::TooManyHeaders),
            Err(e) => return Err(malformed(e)),
        };
        if len > MAX_RESPONSE_HEAD_BYTES {
            return Err(Http1Error::HeadTooLarge);
        }
        let version = match parsed.version {
            Some(1) => Version::HTTP_11,
            Some(0) => Version::HTTP_10,
            _ => return Err(Http1Error::MalformedHead { part: "version" }),
        };
        let status = parsed
            .code
            .and_then(|code| StatusCode::from_u16(code).ok())
            .ok_or(Http1Error::MalformedHead {
                part: "status code",
            })?;
        if status.is_informational() {
            if status == StatusCode::SWITCHING_PROTOCOLS {
                return Err(Http1Error::UnexpectedUpgrade);
            }
            self.informational = self.informational.saturating_add(1);
            if self.informational > MAX_INFORMATIONAL_RESPONSES {
                return Err(Http1Error::TooManyInformational);
            }
            buf.advance(len);
            self.scanned = 0;
            return Ok(Some(Decoded::Informational(status)));
        }
        // Names are built now; values become slices of the head, shared, not copied.
        let start = buf.as_ptr() as usize;
        let mut fields = Vec::with_capacity(parsed.headers.len());
        for line in parsed.headers.iter() {
            let name = HeaderName::from_bytes(line.name.as_bytes()).map_err(|_| {
                Http1Error::MalformedHead {
                    part: "header name",
                }
            })?;
            let from = (line.value.as_ptr() as usize).wrapping_sub(start);
            fields.push((name, from, from.saturating_add(line.value.len())));
        }
        let head = buf.split_to(len).freeze();
        let mut headers = HeaderMap::with_capacity(fields.len());
        for (name, from, to) in fields {
            if from > to || to > head.len() {
                return Err(Http1Error::MalformedHead {
                    part: "header value",
                });
            }
            let value = HeaderValue::from_maybe_shared(head.slice(from..to)).map_err(|_| {
                Http1Error::MalformedHead {
                    part: "header value",
                }
            })?;
            headers.append(name, value);
        }
        self.scanned = 0;
        self.frame(version, status, &mut headers)?;
        let mut response = Response::new(());
        *response.status_mut() = status;
        *response.version_mut() = version;
        *response.headers_mut() = headers;
        Ok(Some(Decoded::Head(response)))
    }

    /// Chooses how the body is framed and whether the connection may be kept, and leaves
    /// one `Content-Length` value in `headers`: a list of one number repeated
    /// (`Content-Length: 2, 2`, or several lines) becomes that number, as RFC 9110 §8.6 allows
    /// a recipient to read it; a response without a body (`HEAD`, 204, 304) whose
    /// `Content-Length` is no valid length loses it (it describes nothing that is sent).
    fn frame(
        &mut self,
        version: Version,
        status: StatusCode,
        headers: &mut HeaderMap,
    ) -> Result<(), Http1Error> {
        let (close, keep_alive) = connection_options(headers);
        self.keep_alive = !close && (version == Version::HTTP_11 || keep_alive);
        self.state = if self.head_request
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            match content_length(headers) {
                Ok(Some(n)) => normalise_length(headers, n),
                Ok(None) => {}
                Err(_) => {
                    headers.remove(CONTENT_LENGTH);
                }
            }
            State::Ending
        } else if headers.contains_key(TRANSFER_ENCODING) {
            if headers.contains_key(CONTENT_LENGTH) {
                return Err(Http1Error::ContentLengthWithTransferEncoding);
            }
            if version == Version::HTTP_10 {
                return Err(Http1Error::TransferEncodingInHttp10);
            }
            if !codings_readable(headers) {
                return Err(Http1Error::InvalidTransferEncoding);
            }
            if ends_chunked(headers) {
                State::ChunkSize
            } else {
                self.keep_alive = false;
                State::UntilClose
            }
        } else {
            match content_length(headers)? {
                Some(n) => {
                    normalise_length(headers, n);
                    if n == 0 {
                        State::Ending
                    } else {
                        State::Length(n)
                    }
                }
                None => {
                    self.keep_alive = false;
                    State::UntilClose
                }
            }
        };
        Ok(())
    }

    /// The size from a complete chunk-size line (consumed), `None` until the line is there.
    fn chunk_size(&mut self, buf: &mut BytesMut) -> Result<Option<u64>, Http1Error> {
        let Some(newline) = buf
            .iter()
            .take(MAX_CHUNK_LINE_BYTES)
            .position(|b| *b == b'\n')
        else {
            return if buf.len() >= MAX_CHUNK_LINE_BYTES {
                Err(Http1Error::MalformedChunk)
            } else {
                Ok(None)
            };
        };
        let line = buf
            .get(..newline)
            .and_then(|line| line.strip_suffix(b"\r"))
            .ok_or(Http1Error::MalformedChunk)?;
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 {
            return Err(Http1Error::MalformedChunk);
        }
        let mut size: u64 = 0;
        for b in line.iter().take(digits) {
            let digit = char::from(*b)
                .to_digit(16)
                .ok_or(Http1Error::MalformedChunk)?;
            size = size
                .checked_mul(16)
                .and_then(|s| s.checked_add(u64::from(digit)))
                .ok_or(Http1Error::MalformedChunk)?;
        }
        // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-value ] ): read past, not
        // interpreted, but only visible characters, blanks and obs-text, and bounded.
        let rest = line.get(digits..).unwrap_or_default();
        let blanks = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let extension = rest.get(blanks..).unwrap_or_default();
        if !extension.is_empty() {
            if extension.first() != Some(&b';')
                || extension
                    .iter()
                    .any(|b| b.is_ascii_control() && *b != b'\t')
            {
                return Err(Http1Error::MalformedChunk);
            }
            self.extension_bytes = self.extension_bytes.saturating_add(extension.len());
            if self.extension_bytes > MAX_CHUNK_EXTENSION_BYTES {
                return Err(Http1Error::ChunkExtensionsTooLarge);
            }
        }
        buf.advance(newline.saturating_add(1));
        Ok(Some(size))
    }

    fn trailers(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, Http1Error> {
        let mut lines = [httparse::EMPTY_HEADER; MAX_RESPONSE_HEADERS];
        let (len, fields) = match httparse::parse_headers(buf, &mut lines) {
            Ok(httparse::Status::Complete(parsed)) => parsed,
            Ok(httparse::Status::Partial) => {
                return if buf.len() > MAX_TRAILER_BYTES {
                    Err(Http1Error::TrailersTooLarge)
                } else {
                    Ok(None)
                };
            }
            Err(httparse::Error::TooManyHeaders) => return Err(Http1Error::TrailersTooLarge),
            Err(_) => return Err(Http1Error::MalformedTrailers),
        };
        if len > MAX_TRAILER_BYTES {
            return Err(Http1Error::TrailersTooLarge);
        }
        // Each line of the trailer section ends with CRLF, as hyper requires (httparse takes a
        // bare LF too): the section ends where both readings agree.
        let section = buf.get(..len).unwrap_or_default();
        let bare_lf = section.iter().enumerate().any(|(i, b)| {
            *b == b'\n' && (i == 0 || section.get(i.wrapping_sub(1)) != Some(&b'\r'))
        });
        if bare_lf {
            return Err(Http1Error::MalformedTrailers);
        }
        let mut trailers = HeaderMap::with_capacity(fields.len());
        for field in fields {
            let name = HeaderName::from_bytes(field.name.as_bytes())
                .map_err(|_| Http1Error::MalformedTrailers)?;
            let value =
                HeaderValue::from_bytes(field.value).map_err(|_| Http1Error::MalformedTrailers)?;
            trailers.append(name, value);
        }
        buf.advance(len);
        self.state = State::Ending;
        if trailers.is_empty() {
            return self.decode(buf);
        }
        Ok(Some(Decoded::Trailers(trailers)))
    }
}

/// Up to `remaining` bytes from the front of `buf` and what is left after them; `None` when
/// `buf` is empty.
fn take(buf: &mut BytesMut, remaining: u64) -> Option<(Bytes, u64)> {
    if buf.is_empty() {
        return None;
    }
    let n = usize::try_from(remaining).map_or(buf.len(), |r| r.min(buf.len()));
    let left = remaining.saturating_sub(n as u64);
    Some((buf.split_to(n).freeze(), left))
}

/// Whether `buf` holds the blank line that ends a head (`\n\r\n` or `\n\n`), searching only
/// what was not searched before.
fn head_ends(buf: &[u8], scanned: &mut usize) -> bool {
    let from = scanned.saturating_sub(2);
    let found = buf
        .get(from..)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .any(|(i, b)| {
            *b == b'\n' && {
                let next = buf.get(from.saturating_add(i).saturating_add(1)..);
                matches!(next, Some([b'\n', ..] | [b'\r', b'\n', ..]))
            }
        });
    *scanned = buf.len();
    found
}

fn malformed(e: httparse::Error) -> Http1Error {
    let part = match e {
        httparse::Error::HeaderName => "header name",
        httparse::Error::HeaderValue => "header value",
        httparse::Error::NewLine => "line end",
        httparse::Error::Status => "status code",
        httparse::Error::Version => "version",
        _ => "status line",
    };
    Http1Error::MalformedHead { part }
}

/// The `Content-Length`: every value, each a comma-separated list, must be the same decimal
/// number.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Http1Error> {
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for item in value.as_bytes().split(|b| *b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                return Err(Http1Error::InvalidContentLength);
            }
            let mut n: u64 = 0;
            for digit in item {
                n = n
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(u64::from(digit.saturating_sub(b'0'))))
                    .ok_or(Http1Error::InvalidContentLength)?;
            }
            if length.is_some_and(|l| l != n) {
                return Err(Http1Error::InvalidContentLength);
            }
            length = Some(n);
        }
    }
    Ok(length)
}

/// Leaves one `Content-Length` line, `length`, when `headers` hold a list or several lines (of
/// `length` repeated, as [`content_length`] checked); a single plain value stays as it came.
fn normalise_length(headers: &mut HeaderMap, length: u64) {
    let mut values = headers.get_all(CONTENT_LENGTH).iter();
    let plain = values.next().is_some_and(|v| !v.as_bytes().contains(&b','));
    if plain && values.next().is_none() {
        return;
    }
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
}

/// Whether every `Transfer-Encoding` line holds only visible ASCII, spaces and tabs: the
/// bytes a list of codings (with their parameters) is written in.
fn codings_readable(headers: &HeaderMap) -> bool {
    headers.get_all(TRANSFER_ENCODING).iter().all(|v| {
        v.as_bytes()
            .iter()
            .all(|b| matches!(b, b'\t' | b' '..=b'~'))
    })
}

/// Whether the last transfer coding is `chunked`.
fn ends_chunked(headers: &HeaderMap) -> bool {
    headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .next_back()
        .and_then(|v| v.as_bytes().rsplit(|b| *b == b',').next())
        .is_some_and(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// Whether `Connection` lists `close`, and whether it lists `keep-alive`.
fn connection_options(headers: &HeaderMap) -> (bool, bool) {
    let (mut close, mut keep_alive) = (false, false);
    for value in headers.get_all(CONNECTION) {
        for token in value.as_bytes().split(|b| *b == b',') {
            let token = token.trim_ascii();
            close |= token.eq_ignore_ascii_case(b"close");
            keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    (close, keep_alive)
}

/// How a request's body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestBody {
    /// No body, and no framing header.
    None,
    /// `Content-Length`, then exactly that many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`, then [`encode_chunk`]s and [`encode_last_chunk`].
    Chunked,
}

/// Appends an HTTP/1.1 request head to `out`: the request line (`target` in origin form, `/`
/// when `None`), every header line of `headers` except `Content-Length` and
/// `Transfer-Encoding`, the framing header `body` asks for, and the blank line. Every part is
/// already validated by the `http` types, so nothing can break the framing.
pub fn encode_request_head(
    method: &Method,
    target: Option<&http::uri::PathAndQuery>,
    headers: &HeaderMap,
    body: RequestBody,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.map_or("/", |t| t.as_str()).as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        put_field(out, name, value);
    }
    match body {
        RequestBody::None => {}
        RequestBody::Length(n) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(n.to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        RequestBody::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the chunk-size line for a chunk of `len` bytes (not zero) to `out`; the chunk's
/// data and `\r\n` follow it on the wire.
pub fn encode_chunk(len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("{len:x}\r\n").as_bytes());
}

/// Appends the end of a chunked body to `out`: the last chunk, `trailers` and the blank line.
pub fn encode_last_chunk(trailers: Option<&HeaderMap>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        put_field(out, name, value);
    }
    out.extend_from_slice(b"\r\n");
}

fn put_field(out: &mut Vec<u8>, name: &HeaderName, value: &HeaderValue) {
    out.extend_from_slice(name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes, then the end of the connection; the
    /// events in order, or the first error.
    fn decode_all(method: &Method, input: &[u8], step: usize) -> Result<Vec<String>, Http1Error> {
        let mut decoder = ResponseDecoder::new(method);
        let mut buf = BytesMut::new();
        let mut events = Vec::new();
        let mut body = Vec::new();
        let record = |d: Decoded, body: &mut Vec<u8>, events: &mut Vec<String>| match d {
            Decoded::Informational(s) => events.push(format!("info {}", s.as_u16())),
            Decoded::Head(h) => {
                let mut line = format!("head {} {:?}", h.status().as_u16(), h.version());
                for (n, v) in h.headers() {
                    line.push_str(&format!(" {n}={}", String::from_utf8_lossy(v.as_bytes())));
                }
                events.push(line);
            }
            Decoded::Data(d) => body.extend_from_slice(&d),
            Decoded::Trailers(t) => {
                events.push(format!("body {}", String::from_utf8_lossy(body)));
                body.clear();
                let mut line = "trailers".to_owned();
                for (n, v) in &t {
                    line.push_str(&format!(" {n}={}", String::from_utf8_lossy(v.as_bytes())));
                }
                events.push(line);
            }
            Decoded::End => {
                if !body.is_empty() {
                    events.push(format!("body {}", String::from_utf8_lossy(body)));
                    body.clear();
                }
                events.push("end".to_owned());
            }
        };
        for piece in input.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            while let Some(d) = decoder.decode(&mut buf)? {
                record(d, &mut body, &mut events);
            }
        }
        while let Some(d) = decoder.decode_eof(&mut buf)? {
            record(d, &mut body, &mut events);
        }
        if decoder.is_reusable() {
            events.push("reusable".to_owned());
        }
        Ok(events)
    }

    fn check(method: Method, input: &str, expected: Result<&[&str], Http1Error>) {
        for step in [1, 2, 3, 7, input.len()] {
            let got = decode_all(&method, input.as_bytes(), step);
            let want = expected
                .clone()
                .map(|e| e.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
            assert_eq!(got, want, "{input:?} in pieces of {step}");
        }
    }

    #[test]
    fn framings() {
        let get = || Method::GET;
        check(
            get(),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            Ok(&[
                "head 200 HTTP/1.1 content-length=5",
                "body hello",
                "end",
                "reusable",
            ]),
        );
        check(
            get(),
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1 \r\n!\r\n0\r\nx-t: 1\r\n\r\n",
            Ok(&[
                "head 200 HTTP/1.1 transfer-encoding=chunked",
                "body hello!",
                "trailers x-t=1",
                "end",
                "reusable",
            ]),
        );
        check(
            get(),
            "HTTP/1.1 200 OK\r\n\r\nuntil close",
            Ok(&["head 200 HTTP/1.1", "body until close", "end"]),
        );
        check(
            get(),
            "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nraw",
            Ok(&[
                "head 200 HTTP/1.1 transfer-encoding=gzip",
                "body raw",
                "end",
            ]),
        );
        check(
            Method::HEAD,
            "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n",
            Ok(&["head 200 HTTP/1.1 content-length=9", "end", "reusable"]),
        );
        check(
            get(),
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
            Ok(&["info 100", "head 204 HTTP/1.1", "end", "reusable"]),
        );
        check(
            get(),
            "HTTP/1.1 304 Not Modified\r\ncontent-length: 3\r\nconnection: close\r\n\r\n",
            Ok(&["head 304 HTTP/1.1 content-length=3 connection=close", "end"]),
        );
        check(
            get(),
            "HTTP/1.0 200 OK\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n",
            Ok(&[
                "head 200 HTTP/1.0 content-length=0 connection=keep-alive",
                "end",
                "reusable",
            ]),
        );
        check(
            get(),
            "HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
            Ok(&["head 200 HTTP/1.0 content-length=0", "end"]),
        );
        check(
            get(),
            "HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\ncontent-length: 2\r\n\r\nok",
            Ok(&[
                "head 200 HTTP/1.1 content-length=2",
                "body ok",
                "end",
                "reusable",
            ]),
        );
    }

    /// A `Content-Length` list of one number repeated is read as that number and handed on as
    /// one line; one without a body keeps a valid length (normalised) and loses an invalid one.
    #[test]
    fn content_length_lists_are_normalised() {
        check(
            Method::GET,
            "HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\nok",
            Ok(&[
                "head 200 HTTP/1.1 content-length=2",
                "body ok",
                "end",
                "reusable",
            ]),
        );
        check(
            Method::HEAD,
            "HTTP/1.1 200 OK\r\ncontent-length: 7,7\r\ncontent-length: 7\r\n\r\n",
            Ok(&["head 200 HTTP/1.1 content-length=7", "end", "reusable"]),
        );
        check(
            Method::GET,
            "HTTP/1.1 304 Not Modified\r\ncontent-length: 7, 8\r\nx: y\r\n\r\n",
            Ok(&["head 304 HTTP/1.1 x=y", "end", "reusable"]),
        );
        check(
            Method::GET,
            "HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok",
            Err(Http1Error::InvalidContentLength),
        );
    }

    #[test]
    fn refusals() {
        let cases: &[(&str, Http1Error)] = &[
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
                Http1Error::ContentLengthWithTransferEncoding,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
                Http1Error::InvalidContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: +1\r\n\r\n",
                Http1Error::InvalidContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 18446744073709551616\r\n\r\n",
                Http1Error::InvalidContentLength,
            ),
            (
                "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                Http1Error::TransferEncodingInHttp10,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding:\u{80}gzip, chunked\r\n\r\n",
                Http1Error::InvalidTransferEncoding,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\u{e9}\r\ntransfer-encoding: chunked\r\n\r\n",
                Http1Error::InvalidTransferEncoding,
            ),
            (
                "HTTP/1.1 101 Switching Protocols\r\n\r\n",
                Http1Error::UnexpectedUpgrade,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n",
                Http1Error::MalformedChunk,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nx\r\n",
                Http1Error::MalformedChunk,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nxy\r\n",
                Http1Error::MalformedChunk,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10000000000000000\r\n",
                Http1Error::MalformedChunk,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;\0\r\n",
                Http1Error::MalformedChunk,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel",
                Http1Error::ClosedWithinResponse,
            ),
            ("HTTP/1.1 200 OK\r\n", Http1Error::ClosedWithinResponse),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\n",
                Http1Error::MalformedTrailers,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: 1\n\r\n",
                Http1Error::MalformedTrailers,
            ),
            ("", Http1Error::ClosedBeforeResponse),
            (
                "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n",
                Http1Error::MalformedHead {
                    part: "header name",
                },
            ),
            (
                "HTTP/2 200 OK\r\n\r\n",
                Http1Error::MalformedHead { part: "version" },
            ),
        ];
        for (input, error) in cases {
            check(Method::GET, input, Err(error.clone()));
        }
    }

    #[test]
    fn limits() {
        let many = "x: y\r\n".repeat(MAX_RESPONSE_HEADERS + 1);
        check(
            Method::GET,
            &format!("HTTP/1.1 200 OK\r\n{many}\r\n"),
            Err(Http1Error::TooManyHeaders),
        );
        let big = format!("x: {}\r\n", "v".repeat(MAX_RESPONSE_HEAD_BYTES));
        let got = decode_all(
            &Method::GET,
            format!("HTTP/1.1 200 OK\r\n{big}\r\n").as_bytes(),
            4096,
        );
        assert_eq!(got, Err(Http1Error::HeadTooLarge));
        let line = format!("1;{}\r\n", "e".repeat(MAX_CHUNK_LINE_BYTES));
        check(
            Method::GET,
            &format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{line}"),
            Err(Http1Error::MalformedChunk),
        );
        let ext = format!("1;{}\r\nx\r\n", "e".repeat(1000)).repeat(17);
        check(
            Method::GET,
            &format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{ext}"),
            Err(Http1Error::ChunkExtensionsTooLarge),
        );
        let info = "HTTP/1.1 103 Early Hints\r\n\r\n".repeat(MAX_INFORMATIONAL_RESPONSES + 1);
        let got = decode_all(&Method::GET, info.as_bytes(), 64);
        assert_eq!(got, Err(Http1Error::TooManyInformational));
        let trailers = format!("x: {}\r\n", "t".repeat(MAX_TRAILER_BYTES));
        check(
            Method::GET,
            &format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n{trailers}\r\n"),
            Err(Http1Error::TrailersTooLarge),
        );
    }

    #[test]
    fn request_heads() {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("addon:8080"));
        headers.insert("content-length", HeaderValue::from_static("99"));
        headers.insert("transfer-encoding", HeaderValue::from_static("gzip"));
        headers.append("x-a", HeaderValue::from_static("1"));
        headers.append("x-a", HeaderValue::from_static("2"));
        let target = http::uri::PathAndQuery::from_static("/apis/x?watch=1");
        let mut out = Vec::new();
        encode_request_head(
            &Method::PUT,
            Some(&target),
            &headers,
            RequestBody::Chunked,
            &mut out,
        );
        encode_chunk(26, &mut out);
        out.extend_from_slice(b"abcdefghijklmnopqrstuvwxyz\r\n");
        let mut trailers = HeaderMap::new();
        trailers.insert("x-sum", HeaderValue::from_static("7"));
        encode_last_chunk(Some(&trailers), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PUT /apis/x?watch=1 HTTP/1.1\r\nhost: addon:8080\r\nx-a: 1\r\nx-a: 2\r\n\
             transfer-encoding: chunked\r\n\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-sum: 7\r\n\r\n"
        );
        let mut out = Vec::new();
        encode_request_head(
            &Method::GET,
            None,
            &HeaderMap::new(),
            RequestBody::Length(0),
            &mut out,
        );
        assert_eq!(out, b"GET / HTTP/1.1\r\ncontent-length: 0\r\n\r\n");
    }
}
