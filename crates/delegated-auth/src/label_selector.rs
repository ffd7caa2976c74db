//! Whether a `labelSelector` query value parses, as `k8s.io/apimachinery/pkg/labels.Parse`
//! decides it (its lexer, grammar and the key and value rules of `NewRequirement`).
//!
//! Request info needs only the verdict: a list whose options fail to decode gets no name from
//! its field selector. Where this reading is unsure it says "invalid", the side that never
//! narrows an authorization.

/// Whether `selector` is a valid label selector.
pub(crate) fn is_valid(selector: &str) -> bool {
    let Some(tokens) = lex(selector) else {
        return false;
    };
    Parser { tokens, at: 0 }.parse().is_some()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    In,
    NotIn,
    OpenPar,
    ClosedPar,
    Comma,
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    End,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn symbol(s: &str) -> Option<Token<'static>> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::Bang,
        "==" => Token::DoubleEq,
        "=" => Token::Eq,
        ">" => Token::Gt,
        "<" => Token::Lt,
        "!=" => Token::NotEq,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// The tokens of `s`; `None` for an unknown operator or a NUL (Go's lexer stops at a NUL,
/// which this reading refuses instead).
fn lex(s: &str) -> Option<Vec<Token<'_>>> {
    let mut tokens = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(is_space);
        let Some(c) = rest.chars().next() else {
            tokens.push(Token::End);
            return Some(tokens);
        };
        if c == '\0' {
            return None;
        }
        if is_special(c) {
            // The longest run of special characters that is an operator, as Go's
            // scanSpecialSymbol takes it.
            let run_len = rest.find(|c: char| !is_special(c)).unwrap_or(rest.len());
            let mut best = None;
            for end in 1..=run_len {
                let candidate = rest.get(..end)?;
                match symbol(candidate) {
                    Some(t) => best = Some((t, end)),
                    None if best.is_some() => break,
                    None => {}
                }
            }
            let (token, len) = best?;
            tokens.push(token);
            rest = rest.get(len..)?;
        } else {
            let len = rest
                .find(|c: char| is_space(c) || is_special(c) || c == '\0')
                .unwrap_or(rest.len());
            let word = rest.get(..len)?;
            tokens.push(match word {
                "in" => Token::In,
                "notin" => Token::NotIn,
                w => Token::Ident(w),
            });
            rest = rest.get(len..)?;
        }
    }
}

struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    at: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    DoesNotExist,
    Set,
    Exact,
    Compare,
}

impl<'a> Parser<'a> {
    /// The next token, in "values" mode (`in`/`notin` read as identifiers) or not.
    fn peek(&self, values: bool) -> Token<'a> {
        let t = self.tokens.get(self.at).copied().unwrap_or(Token::End);
        match (values, t) {
            (true, Token::In) => Token::Ident("in"),
            (true, Token::NotIn) => Token::Ident("notin"),
            (_, t) => t,
        }
    }

    fn next(&mut self, values: bool) -> Token<'a> {
        let t = self.peek(values);
        self.at = self.at.saturating_add(1);
        t
    }

    fn parse(&mut self) -> Option<()> {
        loop {
            match self.peek(true) {
                Token::Ident(_) | Token::Bang => {
                    self.requirement()?;
                    match self.next(true) {
                        Token::End => return Some(()),
                        Token::Comma => {
                            if !matches!(self.peek(true), Token::Ident(_) | Token::Bang) {
                                return None;
                            }
                        }
                        _ => return None,
                    }
                }
                Token::End => return Some(()),
                _ => return None,
            }
        }
    }

    fn requirement(&mut self) -> Option<()> {
        let mut op = None;
        let mut t = self.next(true);
        if t == Token::Bang {
            op = Some(Op::DoesNotExist);
            t = self.next(true);
        }
        let Token::Ident(key) = t else { return None };
        if !is_qualified_name(key) {
            return None;
        }
        if matches!(self.peek(true), Token::End | Token::Comma) {
            return match op {
                Some(Op::DoesNotExist) | None => Some(()),
                Some(_) => None,
            };
        }
        if op.is_some() {
            // `!key` followed by an operator.
            return None;
        }
        let op = match self.next(false) {
            Token::In | Token::NotIn => Op::Set,
            Token::Eq | Token::DoubleEq | Token::NotEq => Op::Exact,
            Token::Gt | Token::Lt => Op::Compare,
            _ => return None,
        };
        let values = match op {
            Op::Set => self.set_values()?,
            _ => vec![self.exact_value()?],
        };
        if op == Op::Compare && values.iter().any(|v| v.parse::<i64>().is_err()) {
            return None;
        }
        values.iter().all(|v| is_label_value(v)).then_some(())
    }

    fn set_values(&mut self) -> Option<Vec<&'a str>> {
        if self.next(true) != Token::OpenPar {
            return None;
        }
        match self.peek(true) {
            Token::Ident(_) | Token::Comma => {
                let list = self.identifiers()?;
                (self.next(true) == Token::ClosedPar).then_some(list)
            }
            Token::ClosedPar => {
                self.next(true);
                Some(vec![""])
            }
            _ => None,
        }
    }

    fn identifiers(&mut self) -> Option<Vec<&'a str>> {
        let mut list = Vec::new();
        loop {
            match self.next(true) {
                Token::Ident(v) => {
                    list.push(v);
                    match self.peek(true) {
                        Token::Comma => {}
                        Token::ClosedPar => return Some(list),
                        _ => return None,
                    }
                }
                Token::Comma => {
                    if list.is_empty() {
                        list.push("");
                    }
                    match self.peek(true) {
                        Token::ClosedPar => {
                            list.push("");
                            return Some(list);
                        }
                        Token::Comma => {
                            self.next(true);
                            list.push("");
                        }
                        _ => {}
                    }
                }
                _ => return None,
            }
        }
    }

    fn exact_value(&mut self) -> Option<&'a str> {
        match self.peek(true) {
            Token::End | Token::Comma => Some(""),
            _ => match self.next(true) {
                Token::Ident(v) => Some(v),
                _ => None,
            },
        }
    }
}

/// `validation.IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then a name of
/// at most 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    let name = match s.split_once('/') {
        Some((prefix, name)) => {
            if name.contains('/') || !is_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
        None => s,
    };
    !name.is_empty() && is_label_value(name)
}

/// `validation.IsValidLabelValue`: empty, or at most 63 characters, alphanumeric at both ends,
/// `-`, `_`, `.` inside.
pub(crate) fn is_label_value(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let b = s.as_bytes();
    b.len() <= 63
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`.
fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            b.first().is_some_and(edge)
                && b.last().is_some_and(edge)
                && b.iter().all(|c| edge(c) || *c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_selectors() {
        for s in [
            "",
            "x=a",
            "x=a,y=b",
            "x==a",
            "x!=a",
            "x",
            "!x",
            "x in (a,b)",
            "x notin (a)",
            "x in ()",
            "x in (,a)",
            "x>1",
            "example.com/x=a",
            " x = a ",
            "x=",
            "x in (in, notin)",
        ] {
            assert!(is_valid(s), "{s:?}");
        }
    }

    #[test]
    fn invalid_selectors() {
        for s in [
            "x=a,",
            ",x=a",
            "x=(a)",
            "=a",
            "x>a",
            "x>",
            "x in a",
            "x in (a",
            "!x=a",
            "x=a b",
            "-x=a",
            "x=-a",
            "a/b/c=d",
            "/x=a",
            "Example.com/x=a",
            "x=a\u{0}",
            "x=!",
            "x <> 1",
            "x<-1",
            &format!("x={}", "a".repeat(64)),
        ] {
            assert!(!is_valid(s), "{s:?}");
        }
    }
}
