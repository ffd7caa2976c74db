//! Validation of server URLs and `host:port` endpoints.

use crate::error::Error;

/// Check a kubeconfig `server`: `https://`, a non-empty host, no userinfo, no whitespace or
/// control characters.
pub(crate) fn validate_server(server: &str, field: &str) -> Result<(), Error> {
    let bad = |reason| {
        Err(Error::InvalidServer {
            field: field.to_owned(),
            reason,
        })
    };
    if server.is_empty() {
        return bad("empty");
    }
    if server.len() > 2048 {
        return bad("longer than 2048 bytes");
    }
    if server.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("contains whitespace or control characters");
    }
    let Some((scheme, rest)) = server.split_once("://") else {
        return bad("not an absolute URL");
    };
    if !scheme.eq_ignore_ascii_case("https") {
        return bad("the scheme must be https");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return bad("userinfo is not allowed");
    }
    validate_host_port(authority, false).map_err(|reason| Error::InvalidServer {
        field: field.to_owned(),
        reason,
    })
}

/// Check a `host[:port]` (port required when `port_required`), as Go's `net.SplitHostPort`
/// would split it.
pub(crate) fn validate_host_port(authority: &str, port_required: bool) -> Result<(), &'static str> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err("missing ']' in address");
        };
        if host.is_empty() {
            return Err("empty host");
        }
        match after {
            "" => (host, None),
            p => match p.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err("unexpected text after ']'"),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => return Err("too many colons in address"),
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("empty host");
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:%".contains(c))
    {
        return Err("invalid character in host");
    }
    match port {
        None if port_required => Err("missing port in address"),
        None => Ok(()),
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            match p.parse::<u32>() {
                Ok(n) if n <= 65535 => Ok(()),
                _ => Err("invalid port"),
            }
        }
        Some(_) => Err("invalid port"),
    }
}
