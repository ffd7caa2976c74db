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
}
