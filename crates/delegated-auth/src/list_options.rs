//! What a list or watch request's query says about its verb and name, as Kubernetes decodes
//! `ListOptions` from it (`metainternalversionscheme.ParameterCodec.DecodeParameters`) in
//! `RequestInfoFactory.NewRequestInfo`.

use crate::label_selector;
use crate::query::ListParams;

/// The verb and name a `GET` without a name in its path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListOutcome {
    /// `watch` or `list`.
    pub(crate) verb: &'static str,
    /// The name from an exact `metadata.name` field selector, if the options decoded and the
    /// name is a valid path segment.
    pub(crate) name: Option<String>,
}

/// Decodes the options of a collection `GET` as Kubernetes does: `watch` true unless absent,
/// `0` or `false` (any case); on a decoding failure (a malformed field or label selector, a
/// `limit` or `timeoutSeconds` that is no integer) the name is not taken and `watch` is read
/// again on its own.
pub(crate) fn resolve(params: &ListParams<'_>) -> ListOutcome {
    let field = params
        .field_selector
        .as_ref()
        .map(|v| (v.exact, exact_name(&v.value)));
    let int_ok = |v: &Option<crate::query::QueryValue<'_>>| {
        v.as_ref().is_none_or(|v| v.value.parse::<i64>().is_ok())
    };
    let decodes = int_ok(&params.limit)
        && int_ok(&params.timeout_seconds)
        && field.as_ref().is_none_or(|(_, name)| name.is_ok())
        && params
            .label_selector
            .as_ref()
            .is_none_or(|v| label_selector::is_valid(&v.value));
    if decodes {
        let watch = params
            .watch
            .as_ref()
            .is_some_and(|v| !is_false_folded(&v.value));
        let name = match field {
            Some((true, Ok(Some(name)))) if is_valid_path_segment(&name) => Some(name),
            _ => None,
        };
        ListOutcome {
            verb: if watch { "watch" } else { "list" },
            name,
        }
    } else {
        let watch = params.watch.as_ref().is_some_and(|v| {
            let lower = v.value.to_lowercase();
            lower != "false" && lower != "0"
        });
        ListOutcome {
            verb: if watch { "watch" } else { "list" },
            name: None,
        }
    }
}

/// Go's `Convert_Slice_string_To_bool` false: `0`, or `false` under Unicode simple case
/// folding (`strings.EqualFold`, where `ſ` folds to `s`).
fn is_false_folded(v: &str) -> bool {
    if v == "0" {
        return true;
    }
    let mut chars = v.chars();
    for want in ['f', 'a', 'l', 's', 'e'] {
        let Some(c) = chars.next() else { return false };
        let same = c.eq_ignore_ascii_case(&want) || (want == 's' && c == '\u{17f}');
        if !same {
            return false;
        }
    }
    chars.next().is_none()
}

/// Parses a field selector as `fields.ParseSelector` does and returns the value it requires
/// for `metadata.name` (`RequiresExactMatch`), if any. `Err` when the selector does not parse.
fn exact_name(selector: &str) -> Result<Option<String>, ()> {
    let mut terms = split_terms(selector);
    terms.sort_unstable();
    let mut found = None;
    for term in terms {
        if term.is_empty() {
            continue;
        }
        let (lhs, op, rhs) = split_term(term).ok_or(())?;
        let value = unescape_value(rhs)?;
        if op != "!=" && lhs == "metadata.name" && found.is_none() {
            found = Some(value);
        }
    }
    Ok(found)
}

/// Splits on commas not escaped by a backslash (the backslash stays in the term).
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(selector.get(start..i).unwrap_or_default());
            start = i.saturating_add(1);
        }
    }
    terms.push(selector.get(start..).unwrap_or_default());
    terms
}

/// The left side, operator and right side at the first operator (`!=`, `==`, `=`).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = term.get(i..)?;
        for op in ["!=", "==", "="] {
            if rest.starts_with(op) {
                let rhs = rest.get(op.len()..)?;
                return Some((term.get(..i)?, op, rhs));
            }
        }
    }
    None
}

/// `fields.UnescapeValue`: `\\`, `\,` and `\=` are the only escapes; a bare `,` or `=` is an
/// error, as is a trailing backslash.
fn unescape_value(s: &str) -> Result<String, ()> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(());
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(()),
            c => out.push(c),
        }
    }
    if in_slash { Err(()) } else { Ok(out) }
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, and no `/` or `%`.
fn is_valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_selector_names() {
        assert_eq!(exact_name("metadata.name=a"), Ok(Some("a".into())));
        assert_eq!(exact_name("metadata.name==a"), Ok(Some("a".into())));
        assert_eq!(exact_name("metadata.name!=a"), Ok(None));
        assert_eq!(
            exact_name("metadata.name=b,metadata.name=a"),
            Ok(Some("a".into()))
        );
        assert_eq!(
            exact_name("x=1,metadata.name=a\\,b"),
            Ok(Some("a,b".into()))
        );
        assert_eq!(exact_name("metadata.name=name1,foo"), Err(()));
        assert_eq!(exact_name("metadata.name=a=b"), Err(()));
        assert_eq!(exact_name("metadata.name=a\\"), Err(()));
        assert_eq!(exact_name(""), Ok(None));
        assert_eq!(exact_name(",,"), Ok(None));
    }

    fn resolve(q: &str) -> ListOutcome {
        super::resolve(&ListParams::read(q))
    }

    #[test]
    fn watch_values() {
        assert_eq!(resolve("watch=true").verb, "watch");
        assert_eq!(resolve("watch=").verb, "watch");
        assert_eq!(resolve("watch=FALSE").verb, "list");
        assert_eq!(resolve("watch=fal\u{17f}e").verb, "list");
        assert_eq!(resolve("watch=0").verb, "list");
        assert_eq!(resolve("").verb, "list");
        // Decoding fails on the limit; watch is read again on its own.
        assert_eq!(
            resolve("limit=x&watch=1&fieldSelector=metadata.name=a").verb,
            "watch"
        );
        assert_eq!(
            resolve("limit=x&watch=1&fieldSelector=metadata.name=a").name,
            None
        );
        assert_eq!(
            resolve("labelSelector=a=(&fieldSelector=metadata.name=a").name,
            None
        );
        assert_eq!(resolve("fieldSelector=metadata.name=..").name, None);
        assert_eq!(resolve("fieldSelector=metadata.name=a%25b").name, None);
        assert_eq!(resolve("fieldSelector=metadata.name=%ff").name, None);
        assert_eq!(
            resolve("limit=5&fieldSelector=metadata.name=a").name,
            Some("a".into())
        );
    }
}
