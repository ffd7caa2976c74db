//! PEM blocks (RFC 7468): strict, bounded, no headers, nothing outside the blocks.

use crate::error::Error;

/// One decoded PEM block.
pub(crate) struct Block {
    pub(crate) label: String,
    pub(crate) der: Vec<u8>,
}

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const DASHES: &str = "-----";

/// Splits `input` into at most `max_blocks` PEM blocks. Blank lines between blocks are
/// allowed; any other text outside a block, PEM headers and mismatched END lines are errors.
pub(crate) fn blocks(
    input: &[u8],
    what: &'static str,
    max_blocks: usize,
) -> Result<Vec<Block>, Error> {
    let pem = |reason| Error::Pem { what, reason };
    let text = std::str::from_utf8(input).map_err(|_| pem("not UTF-8"))?;
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let Some(label) = line
            .strip_prefix(BEGIN)
            .and_then(|l| l.strip_suffix(DASHES))
        else {
            return Err(pem("data outside a PEM block"));
        };
        let mut body = String::new();
        let mut ended = false;
        for line in lines.by_ref() {
            if let Some(end) = line.strip_prefix(END).and_then(|l| l.strip_suffix(DASHES)) {
                if end != label {
                    return Err(pem("mismatched PEM END line"));
                }
                ended = true;
                break;
            }
            if line.contains(':') {
                return Err(pem("PEM headers are not allowed"));
            }
            body.push_str(line);
        }
        if !ended {
            return Err(pem("PEM block without END line"));
        }
        if out.len() >= max_blocks {
            return Err(pem("too many PEM blocks"));
        }
        let der =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, body.as_bytes())
                .map_err(|_| pem("invalid base64 in a PEM block"))?;
        if der.is_empty() {
            return Err(pem("empty PEM block"));
        }
        out.push(Block {
            label: label.to_owned(),
            der,
        });
    }
    Ok(out)
}

/// One PEM block as Go's `pem.Decode` finds it (see [`go_pem_blocks`]).
#[derive(Clone, PartialEq, Eq)]
pub struct GoPemBlock {
    pub(crate) label: String,
    pub(crate) headers: bool,
    pub(crate) der: Vec<u8>,
}

pub(crate) type GoBlock = GoPemBlock;

impl GoPemBlock {
    /// The type on the BEGIN line (`CERTIFICATE`, `CERTIFICATE REQUEST`, ...).
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether the block had RFC 1421 headers (`Key: value` lines; Kubernetes refuses them in
    /// `status.certificate`).
    #[must_use]
    pub fn has_headers(&self) -> bool {
        self.headers
    }

    /// The decoded body.
    #[must_use]
    pub fn der(&self) -> &[u8] {
        &self.der
    }
}

impl core::fmt::Debug for GoPemBlock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The body may be a private key: its length only.
        f.debug_struct("GoPemBlock")
            .field("label", &self.label)
            .field("headers", &self.headers)
            .field("der_len", &self.der.len())
            .finish()
    }
}

/// The first `max_blocks` PEM blocks of `input`, as Go's `pem.Decode` called in a loop finds
/// them: text before, between and after blocks is skipped, and so is a BEGIN line whose block
/// does not end well or whose body is not base64. This is how Kubernetes reads PEM fields it
/// does not own the format of (`spec.request`, `status.certificate`, CA bundles). Linear in the
/// input.
#[must_use]
pub fn go_pem_blocks(input: &[u8], max_blocks: usize) -> Vec<GoPemBlock> {
    go_blocks(input, max_blocks)
}

const GO_BEGIN: &[u8] = b"\n-----BEGIN ";
const GO_END: &[u8] = b"\n-----END ";
/// The same without the newline, for the very start.
const GO_BEGIN_AT_START: &[u8] = b"-----BEGIN ";
const GO_END_AT_START: &[u8] = b"-----END ";

/// The first `max_blocks` PEM blocks of `input`, as Go's `pem.Decode` called in a loop finds
/// them: text before, between and after blocks is skipped (RFC 7468 section 5.2's explanatory
/// text), and so is a BEGIN line whose block does not end well or whose body is not base64.
/// Headers are recorded, not interpreted. Linear in the input: the END lines are indexed
/// once, and a body known to hold a character base64 refuses is not decoded again for a later
/// BEGIN line that shares its END (Go would, quadratically).
pub(crate) fn go_blocks(input: &[u8], max_blocks: usize) -> Vec<GoBlock> {
    let ends: Vec<usize> = positions(input, GO_END);
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut bad = None;
    while out.len() < max_blocks {
        match go_decode(input, at, &ends, &mut bad) {
            Some((block, next)) => {
                out.push(block);
                at = next;
            }
            None => break,
        }
    }
    out
}

/// Go's `pem.Decode` on `input[at..]`: the block and where the rest starts. `bad` remembers
/// the last body that held a byte outside base64 and whitespace: (its END, that byte's
/// position).
fn go_decode(
    input: &[u8],
    mut at: usize,
    ends: &[usize],
    bad: &mut Option<(usize, usize)>,
) -> Option<(GoBlock, usize)> {
    loop {
        let rest = input.get(at..)?;
        // The first BEGIN: at the very start without a newline, else after one.
        if rest.starts_with(GO_BEGIN_AT_START) {
            at = at.saturating_add(GO_BEGIN_AT_START.len());
        } else {
            let i = find(rest, GO_BEGIN)?;
            at = at.saturating_add(i).saturating_add(GO_BEGIN.len());
        }
        let (type_line, next) = get_line(input, at);
        at = next;
        let Some(label) = type_line.strip_suffix(b"-----") else {
            continue;
        };
        // Headers: lines with a colon, until the first without.
        let mut headers = false;
        loop {
            if at >= input.len() {
                return None;
            }
            let (line, next) = get_line(input, at);
            if !line.contains(&b':') {
                break;
            }
            headers = true;
            at = next;
        }
        let rest = input.get(at..)?;
        // Where the body ends, and where the END line's label starts.
        let (end_index, trailer_index) = if !headers && rest.starts_with(GO_END_AT_START) {
            (at, at.saturating_add(GO_END_AT_START.len()))
        } else {
            // The first "\n-----END " at or after `at`; none at all means no later BEGIN can
            // end either.
            let first = ends.partition_point(|&e| e < at);
            let end = *ends.get(first)?;
            (end, end.saturating_add(GO_END.len()))
        };
        let trailer = input.get(trailer_index..).unwrap_or_default();
        let trailer_len = label.len().saturating_add(5);
        let (Some(end_trailer), Some(rest_of_end_line)) =
            (trailer.get(..trailer_len), trailer.get(trailer_len..))
        else {
            continue;
        };
        if !end_trailer.starts_with(label) || !end_trailer.ends_with(b"-----") {
            continue;
        }
        if !get_line(rest_of_end_line, 0).0.is_empty() {
            continue;
        }
        // A body that still holds a byte base64 refuses cannot decode.
        if matches!(*bad, Some((end, pos)) if end == end_index && pos >= at) {
            continue;
        }
        let raw = input.get(at..end_index).unwrap_or_default();
        let body: Vec<u8> = raw
            .iter()
            .copied()
            .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .collect();
        let Ok(der) = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &body)
        else {
            *bad = raw
                .iter()
                .rposition(|b| {
                    !(b.is_ascii_alphanumeric()
                        || matches!(b, b'+' | b'/' | b'=' | b' ' | b'\t' | b'\r' | b'\n'))
                })
                .map(|i| (end_index, at.saturating_add(i)));
            continue;
        };
        let Ok(label) = std::str::from_utf8(label) else {
            continue;
        };
        // The rest starts on the line after the END line.
        let after_end = end_index.saturating_add(GO_END_AT_START.len());
        let (_, next) = get_line(input, after_end);
        return Some((
            GoBlock {
                label: label.to_owned(),
                headers,
                der,
            },
            next,
        ));
    }
}

/// Go's `getLine` on `input[at..]`: the line without its end and trailing blanks, and where the
/// next starts.
fn get_line(input: &[u8], at: usize) -> (&[u8], usize) {
    let rest = input.get(at..).unwrap_or_default();
    let (mut line, next) = match rest.iter().position(|b| *b == b'\n') {
        Some(i) => {
            let line = rest.get(..i).unwrap_or_default();
            (
                line.strip_suffix(b"\r").unwrap_or(line),
                at.saturating_add(i).saturating_add(1),
            )
        }
        None => (rest, input.len()),
    };
    while let Some(l) = line.strip_suffix(b" ").or_else(|| line.strip_suffix(b"\t")) {
        line = l;
    }
    (line, next)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0usize;
    while let Some(i) = haystack.get(from..).and_then(|h| find(h, needle)) {
        let at = from.saturating_add(i);
        out.push(at);
        from = at.saturating_add(1);
    }
    out
}

/// Encodes one block, 64 columns, `\n` line ends, as Go's `pem.Encode` does.
pub(crate) fn encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der);
    let mut out =
        String::with_capacity(b64.len().saturating_add(b64.len() / 64).saturating_add(64));
    out.push_str(BEGIN);
    out.push_str(label);
    out.push_str(DASHES);
    out.push('\n');
    let mut rest = b64.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at(rest.len().min(64));
        out.push_str(line);
        out.push('\n');
        rest = tail;
    }
    out.push_str(END);
    out.push_str(label);
    out.push_str(DASHES);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let der: Vec<u8> = (0..200u8).collect();
        let text = encode("CERTIFICATE", &der);
        assert!(text.lines().all(|l| l.len() <= 64));
        let blocks = blocks(text.as_bytes(), "t", 4).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].label, "CERTIFICATE");
        assert_eq!(blocks[0].der, der);
    }

    #[test]
    fn rejects_junk() {
        let ok = encode("X", b"abc");
        for bad in [
            format!("{ok}junk"),
            format!("junk\n{ok}"),
            ok.replace("-----END X-----", "-----END Y-----"),
            ok.replace("-----END X-----\n", ""),
            ok.replace("YWJj", "Proc-Type: 4,ENCRYPTED\nYWJj"),
            ok.replace("YWJj", "!!!!"),
            "-----BEGIN X-----\n-----END X-----\n".to_owned(),
        ] {
            assert!(blocks(bad.as_bytes(), "t", 4).is_err(), "{bad}");
        }
        let many = ok.repeat(3);
        assert!(blocks(many.as_bytes(), "t", 2).is_err());
        assert_eq!(blocks(many.as_bytes(), "t", 3).unwrap().len(), 3);
        assert!(blocks(&[0xff, 0xfe], "t", 1).is_err());
    }

    /// Go's `pem.Decode` in a loop, case by case (the behaviour of its decoder as documented
    /// and tested in Go's `encoding/pem`).
    #[test]
    fn go_decoder() {
        let one = encode("X", b"abc");
        let two = encode("Y", b"defg");
        let labels = |input: &str| -> Vec<(String, Vec<u8>, bool)> {
            go_blocks(input.as_bytes(), 8)
                .into_iter()
                .map(|b| (b.label, b.der, b.headers))
                .collect()
        };
        let x = ("X".to_owned(), b"abc".to_vec(), false);
        let y = ("Y".to_owned(), b"defg".to_vec(), false);
        // Text before, between and after is skipped.
        assert_eq!(
            labels(&format!("intro\n{one}middle\n{two}end")),
            [x.clone(), y.clone()]
        );
        // CRLF and trailing blanks on lines.
        assert_eq!(labels(&one.replace('\n', " \r\n")), vec![x.clone()]);
        // A block without END, or whose END names another type, or whose body is not base64,
        // is skipped; the search goes on after its BEGIN line.
        assert_eq!(
            labels(&format!("-----BEGIN Z-----\nYWJj\n{one}")),
            vec![x.clone()]
        );
        assert_eq!(
            labels(&format!("{}{two}", one.replace("END X", "END Q"))),
            vec![y.clone()]
        );
        assert_eq!(
            labels(&format!("{}{two}", one.replace("YWJj", "!!!!"))),
            vec![y.clone()]
        );
        // BEGIN must start a line (or the input).
        assert!(labels(&format!("x{one}")).is_empty());
        // Junk after the END marker on its line: not a block.
        assert!(labels(&one.replace("-----END X-----", "-----END X----- junk")).is_empty());
        // Headers are recorded.
        let with_headers = one.replace("YWJj", "Proc-Type: 4,ENCRYPTED\n\nYWJj");
        assert_eq!(
            labels(&with_headers),
            [("X".to_owned(), b"abc".to_vec(), true)]
        );
        // An empty block.
        assert_eq!(
            labels("-----BEGIN E-----\n-----END E-----\n"),
            [("E".to_owned(), Vec::new(), false)]
        );
        // Bounded: at most `max_blocks`, and nothing but BEGIN lines is quick.
        assert_eq!(go_blocks(one.repeat(100).as_bytes(), 3).len(), 3);
        let begins = "-----BEGIN A-----\n".repeat(10_000);
        assert!(go_blocks(begins.as_bytes(), 8).is_empty());
        let begins_then_end = format!("{begins}-----END A-----\n");
        assert_eq!(go_blocks(begins_then_end.as_bytes(), 8).len(), 1);
    }
}
