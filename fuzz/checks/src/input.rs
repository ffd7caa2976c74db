//! Splitting one fuzz input into the several inputs an entry point takes.

/// The bytes before the first `separator` and those after it; all of `data` and nothing if
/// there is none.
pub(crate) fn split_at_first(data: &[u8], separator: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == separator) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// `data` split at every `\0\0`.
pub(crate) fn split_at_double_nul(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\0\0") {
        out.push(&rest[..pos]);
        rest = &rest[pos + 2..];
    }
    out.push(rest);
    out
}
