//! Label and field selectors, in the forms kubectl and kube send.

use serde_json::Value;

use super::status::ApiError;

/// Most requirements one selector may hold (a bound on untrusted input).
const MAX_REQUIREMENTS: usize = 64;

#[derive(Debug, Clone)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone)]
struct Requirement {
    key: String,
    op: Op,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            (Op::Eq(v), Some(x)) => v == x,
            (Op::Eq(_), None) => false,
            (Op::NotEq(v), x) => x != Some(v.as_str()),
            (Op::In(vs), Some(x)) => vs.iter().any(|v| v == x),
            (Op::In(_), None) => false,
            (Op::NotIn(vs), x) => x.is_none_or(|x| !vs.iter().any(|v| v == x)),
            (Op::Exists, x) => x.is_some(),
            (Op::DoesNotExist, x) => x.is_none(),
        }
    }
}

/// A parsed `labelSelector` and `fieldSelector`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selector {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

impl Selector {
    /// Parse both selectors; `fields_allowed` lists the field paths the resource supports.
    pub(crate) fn parse(
        label: Option<&str>,
        field: Option<&str>,
        fields_allowed: &[&str],
    ) -> Result<Selector, ApiError> {
        let labels = match label {
            Some(s) => parse_labels(s)?,
            None => Vec::new(),
        };
        let fields = match field {
            Some(s) => parse_fields(s, fields_allowed)?,
            None => Vec::new(),
        };
        Ok(Selector { labels, fields })
    }

    /// Whether `object` is selected.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label_ok = self.labels.iter().all(|r| {
            let value = labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str);
            r.matches(value)
        });
        label_ok
            && self.fields.iter().all(|r| {
                let pointer = match r.key.as_str() {
                    "metadata.name" => "/metadata/name",
                    "metadata.namespace" => "/metadata/namespace",
                    "type" => "/type",
                    "status.phase" => "/status/phase",
                    "spec.signerName" => "/spec/signerName",
                    _ => return false,
                };
                r.matches(Some(
                    object
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                ))
            })
    }
}

/// Split on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth = depth.saturating_add(1),
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(s.get(start..i).unwrap_or_default());
                start = i.saturating_add(1);
            }
            _ => {}
        }
    }
    parts.push(s.get(start..).unwrap_or_default());
    parts
}

fn parse_labels(s: &str) -> Result<Vec<Requirement>, ApiError> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let parts = split_top(s);
    if parts.len() > MAX_REQUIREMENTS {
        return Err(ApiError::bad_request(
            "unable to parse requirement: too many requirements",
        ));
    }
    parts.into_iter().map(parse_label).collect()
}

fn bad_label(part: &str) -> ApiError {
    let shown: String = part.chars().take(64).collect();
    ApiError::bad_request(format!("unable to parse requirement: {shown:?}"))
}

fn parse_label(part: &str) -> Result<Requirement, ApiError> {
    let p = part.trim();
    let key_ok = |k: &str| {
        !k.is_empty()
            && k.len() <= 317
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    };
    let req = |key: &str, op: Op| {
        if key_ok(key) {
            Ok(Requirement {
                key: key.to_owned(),
                op,
            })
        } else {
            Err(bad_label(part))
        }
    };
    if let Some(key) = p.strip_prefix('!') {
        return req(key.trim(), Op::DoesNotExist);
    }
    if let Some((k, v)) = p.split_once("!=") {
        return req(k.trim(), Op::NotEq(v.trim().to_owned()));
    }
    if let Some((k, v)) = p.split_once("==") {
        return req(k.trim(), Op::Eq(v.trim().to_owned()));
    }
    if let Some((k, v)) = p.split_once('=') {
        return req(k.trim(), Op::Eq(v.trim().to_owned()));
    }
    for (word, notin) in [(" notin ", true), (" in ", false)] {
        if let Some((k, rest)) = p.split_once(word) {
            let list = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| bad_label(part))?;
            let values: Vec<String> = list.split(',').map(|v| v.trim().to_owned()).collect();
            if values.len() > MAX_REQUIREMENTS {
                return Err(bad_label(part));
            }
            return req(
                k.trim(),
                if notin {
                    Op::NotIn(values)
                } else {
                    Op::In(values)
                },
            );
        }
    }
    req(p, Op::Exists)
}

fn parse_fields(s: &str, allowed: &[&str]) -> Result<Vec<Requirement>, ApiError> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() > MAX_REQUIREMENTS {
        return Err(ApiError::bad_request(
            "invalid field selector: too many requirements",
        ));
    }
    parts
        .into_iter()
        .map(|p| {
            let (key, op) = if let Some((k, v)) = p.split_once("!=") {
                (k, Op::NotEq(v.to_owned()))
            } else if let Some((k, v)) = p.split_once("==") {
                (k, Op::Eq(v.to_owned()))
            } else if let Some((k, v)) = p.split_once('=') {
                (k, Op::Eq(v.to_owned()))
            } else {
                let shown: String = p.chars().take(64).collect();
                return Err(ApiError::bad_request(format!(
                    "invalid selector: {shown:?}; can't understand '{shown}'"
                )));
            };
            let key = key.trim();
            if !allowed.contains(&key) {
                let shown: String = key.chars().take(64).collect();
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {shown}"
                )));
            }
            Ok(Requirement {
                key: key.to_owned(),
                op,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Selector;

    fn sel(label: &str) -> Selector {
        Selector::parse(Some(label), None, &[]).unwrap()
    }

    #[test]
    fn label_forms() {
        let o = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        for (s, want) in [
            ("a=1", true),
            ("a==1", true),
            ("a!=1", false),
            ("a in (1,3)", true),
            ("a notin (1,3)", false),
            ("a,b", true),
            ("!c", true),
            ("!a", false),
            ("a=1,b in (3)", false),
            ("", true),
        ] {
            assert_eq!(sel(s).matches(&o), want, "{s}");
        }
        assert!(Selector::parse(Some("a in (1"), None, &[]).is_err());
        assert!(Selector::parse(Some("a b"), None, &[]).is_err());
    }

    #[test]
    fn field_forms() {
        let o = json!({"metadata": {"name": "x", "namespace": "n"}, "type": "t"});
        let f = |s: &str| Selector::parse(None, Some(s), &["metadata.name", "type"]);
        assert!(f("metadata.name=x,type=t").unwrap().matches(&o));
        assert!(!f("type!=t").unwrap().matches(&o));
        assert!(f("metadata.namespace=n").is_err());
        assert!(f("nonsense").is_err());
    }
}
