//! What a plugin writes to stderr: a bounded summary for errors and a line stream for GUIs.

use crate::hint::sanitize_install_hint;

/// Bytes of stderr kept in a [`StderrSummary`] (the end of the stream, where errors are).
pub const STDERR_SUMMARY_BYTES: usize = 1024;

/// Longest line [`StderrLines`] returns; longer lines are split.
pub const MAX_STDERR_LINE: usize = 4096;

/// A bounded, sanitised summary of a failed plugin's stderr: at most the last
/// [`STDERR_SUMMARY_BYTES`] bytes, invalid UTF-8 replaced, control characters other than tab
/// and newline shown as `U+XXXX`.
///
/// A plugin may print a secret on stderr, so the summary is never part of an error's
/// `Display` or `Debug` (which prints only its length); the caller decides whether to show
/// [`StderrSummary::as_str`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct StderrSummary {
    text: String,
    truncated: bool,
}

impl StderrSummary {
    /// Summarises captured stderr bytes (pass an empty slice when stderr went to the terminal).
    #[must_use]
    pub fn new(stderr: &[u8]) -> StderrSummary {
        let start = stderr.len().saturating_sub(STDERR_SUMMARY_BYTES);
        let tail = stderr.get(start..).unwrap_or_default();
        let text = String::from_utf8_lossy(tail);
        let text = text.trim_start_matches(|c: char| c == '\u{fffd}' || c.is_whitespace());
        StderrSummary {
            text: sanitize_install_hint(text.trim_end()),
            truncated: start > 0,
        }
    }

    /// The summary text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when earlier output was dropped.
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// True when nothing was captured.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

impl core::fmt::Debug for StderrSummary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "StderrSummary(<{} bytes>)", self.text.len())
    }
}

/// Turns a plugin's stderr into display lines for programs without a terminal (IDEs, GUIs), so
/// that prompts and messages can be surfaced instead of swallowed.
///
/// Feed chunks as they arrive with [`push`](Self::push), take complete lines with
/// [`next_line`](Self::next_line), and show [`pending`](Self::pending) as the current prompt
/// (prompts usually do not end with a newline). ANSI escape sequences are removed and other
/// control characters shown as `U+XXXX`; lines longer than [`MAX_STDERR_LINE`] are split.
///
/// ```
/// use exec_credential::StderrLines;
///
/// let mut lines = StderrLines::new();
/// // Chunks as they arrive from the plugin's stderr pipe.
/// lines.push(b"\x1b[1mTo sign in, open https://login.example/device\x1b[0m\n");
/// lines.push(b"Code: ABCD-EFGH");
/// assert_eq!(lines.next_line().as_deref(), Some("To sign in, open https://login.example/device"));
/// assert_eq!(lines.next_line(), None);
/// // Show the unfinished line as the current prompt.
/// assert_eq!(lines.pending().as_deref(), Some("Code: ABCD-EFGH"));
/// ```
#[derive(Debug, Default)]
pub struct StderrLines {
    buf: Vec<u8>,
}

impl StderrLines {
    /// An empty stream.
    #[must_use]
    pub fn new() -> StderrLines {
        StderrLines::default()
    }

    /// Appends a chunk of stderr.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line, without its line ending.
    pub fn next_line(&mut self) -> Option<String> {
        let cut = match self.buf.iter().position(|&b| b == b'\n') {
            Some(i) if i <= MAX_STDERR_LINE => i,
            _ if self.buf.len() > MAX_STDERR_LINE => MAX_STDERR_LINE,
            _ => return None,
        };
        let mut line: Vec<u8> = self.buf.drain(..cut).collect();
        if self.buf.first() == Some(&b'\n') {
            self.buf.remove(0);
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(clean_line(&line))
    }

    /// The incomplete last line (typically a prompt such as `Password: `), if any.
    #[must_use]
    pub fn pending(&self) -> Option<String> {
        if self.buf.is_empty() {
            None
        } else {
            Some(clean_line(&self.buf))
        }
    }

    /// Ends the stream and returns the incomplete last line, if any.
    pub fn finish(&mut self) -> Option<String> {
        let rest = self.pending();
        self.buf.clear();
        rest
    }
}

fn clean_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                // CSI: ESC [ parameters intermediates final (0x40..=0x7e).
                Some('[') => {
                    chars.next();
                    for n in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC: ESC ] ... BEL or ESC \.
                Some(']') => {
                    chars.next();
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' {
                            break;
                        }
                        if n == '\u{1b}' {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        out.push(c);
    }
    sanitize_install_hint(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_prompt() {
        let mut s = StderrLines::new();
        s.push(b"\x1b[1mOpen https://login.example/device\x1b[0m\r\nEnter co");
        s.push(b"de: ");
        assert_eq!(
            s.next_line().as_deref(),
            Some("Open https://login.example/device")
        );
        assert_eq!(s.next_line(), None);
        assert_eq!(s.pending().as_deref(), Some("Enter code: "));
        assert_eq!(s.finish().as_deref(), Some("Enter code: "));
        assert_eq!(s.pending(), None);
    }

    #[test]
    fn long_lines_are_split() {
        let mut s = StderrLines::new();
        s.push(&vec![b'a'; MAX_STDERR_LINE * 2 + 3]);
        assert_eq!(s.next_line().unwrap().len(), MAX_STDERR_LINE);
        assert_eq!(s.next_line().unwrap().len(), MAX_STDERR_LINE);
        assert_eq!(s.next_line(), None);
        assert_eq!(s.pending().unwrap().len(), 3);
    }

    #[test]
    fn summary_is_bounded_and_hidden_from_debug() {
        let mut big = vec![b'x'; 5000];
        big.extend_from_slice(b"\nerror: CANARY-secret\x1b[0m\n");
        let s = StderrSummary::new(&big);
        assert!(s.is_truncated());
        assert!(s.as_str().len() <= STDERR_SUMMARY_BYTES + 16);
        assert!(s.as_str().ends_with("error: CANARY-secretU+001B[0m"));
        assert!(!format!("{s:?}").contains("CANARY"));
    }
}
