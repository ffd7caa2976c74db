//! Bounded YAML/JSON document parsing and a small deterministic YAML emitter.

use serde_json::Value;

use crate::error::Error;

/// The largest kubeconfig accepted, in bytes: a ConfigMap cannot be bigger than 1 MiB.
pub const MAX_KUBECONFIG_BYTES: usize = 1024 * 1024;

/// The deepest nesting of sequences and mappings accepted in a kubeconfig.
pub const MAX_KUBECONFIG_DEPTH: usize = 64;

/// The most YAML nodes (scalars, sequences, mappings) accepted in a kubeconfig.
pub const MAX_KUBECONFIG_NODES: usize = 100_000;

/// The most alias (`*ref`) uses accepted in a kubeconfig; expansion is bounded as well.
pub const MAX_KUBECONFIG_ALIASES: usize = 64;

/// Parse one YAML (or JSON) document into a JSON value under the documented budget.
///
/// Policies: a single document only; duplicate mapping keys are an error (two parsers must
/// never disagree on which value a signed document holds); merge keys (`<<`) are expanded as
/// kubectl's YAML 1.1 parser expands them; anchors, aliases and merges are bounded.
pub(crate) fn parse_document(input: &[u8]) -> Result<Value, Error> {
    if input.len() > MAX_KUBECONFIG_BYTES {
        return Err(Error::TooLarge {
            what: "kubeconfig",
            len: input.len(),
            max: MAX_KUBECONFIG_BYTES,
        });
    }
    let text = std::str::from_utf8(input).map_err(|_| Error::KubeconfigSyntax {
        reason: "not UTF-8",
        line: 0,
        column: 0,
    })?;
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_KUBECONFIG_BYTES),
            max_events: 4 * MAX_KUBECONFIG_NODES,
            max_aliases: MAX_KUBECONFIG_ALIASES,
            max_anchors: MAX_KUBECONFIG_ALIASES,
            max_depth: MAX_KUBECONFIG_DEPTH,
            max_documents: 1,
            max_nodes: MAX_KUBECONFIG_NODES,
            max_total_scalar_bytes: MAX_KUBECONFIG_BYTES,
            max_merge_keys: 16,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_KUBECONFIG_NODES,
            max_replay_stack_depth: 8,
        },
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::Error,
        merge_keys: serde_saphyr::options::MergeKeyPolicy::Merge,
        with_snippet: false,
    };
    let mut docs =
        serde_saphyr::from_multiple_with_options::<Value>(text, options).map_err(|e| {
            let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
            let reason = match e {
                serde_saphyr::Error::Budget { .. } => "resource budget exceeded",
                serde_saphyr::Error::MultipleDocuments { .. } => "more than one document",
                _ => "malformed YAML or JSON, or a parser limit was exceeded",
            };
            Error::KubeconfigSyntax {
                reason,
                line,
                column,
            }
        })?;
    match (docs.pop(), docs.is_empty()) {
        (Some(doc), true) => Ok(doc),
        (None, _) => Ok(Value::Null),
        (Some(_), false) => Err(Error::KubeconfigSyntax {
            reason: "more than one document",
            line: 0,
            column: 0,
        }),
    }
}

/// Appends YAML in the shape Go's `sigs.k8s.io/yaml` writes (block style, two-space indent,
/// sequences not indented under their key, keys in the order given).
pub(crate) struct YamlWriter {
    out: String,
}

impl YamlWriter {
    pub(crate) fn new() -> YamlWriter {
        YamlWriter { out: String::new() }
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }

    /// `key: scalar` at `indent`, with an optional `- ` sequence marker replacing the last two
    /// columns of indentation.
    pub(crate) fn line(&mut self, indent: usize, dash: bool, key: &str, scalar: &str) {
        self.prefix(indent, dash);
        self.out.push_str(key);
        self.out.push(':');
        if !scalar.is_empty() {
            self.out.push(' ');
            self.out.push_str(scalar);
        }
        self.out.push('\n');
    }

    fn prefix(&mut self, indent: usize, dash: bool) {
        if dash {
            for _ in 0..indent.saturating_sub(2) {
                self.out.push(' ');
            }
            self.out.push_str("- ");
        } else {
            for _ in 0..indent {
                self.out.push(' ');
            }
        }
    }

    /// `key:` followed by `value` as a block at `indent + 2` (maps) or `indent` (sequences).
    pub(crate) fn value(&mut self, indent: usize, dash: bool, key: &str, value: &Value) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                self.line(indent, dash, key, "");
                let inner = indent.saturating_add(2);
                for (k, v) in map {
                    self.value(inner, false, &scalar(k), v);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                self.line(indent, dash, key, "");
                let inner = indent.saturating_add(2);
                for item in items {
                    self.item(inner, item);
                }
            }
            other => self.line(indent, dash, key, &inline(other)),
        }
    }

    /// A sequence item whose dash sits at `indent - 2`.
    fn item(&mut self, indent: usize, value: &Value) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (i, (k, v)) in map.iter().enumerate() {
                    self.value(indent, i == 0, &scalar(k), v);
                }
            }
            other => {
                self.prefix(indent, true);
                self.out.push_str(&inline(other));
                self.out.push('\n');
            }
        }
    }
}

/// A scalar or empty collection on one line; non-empty nested sequences fall back to JSON
/// flow style (valid YAML).
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s),
        Value::Array(a) if a.is_empty() => "[]".to_owned(),
        Value::Object(o) if o.is_empty() => "{}".to_owned(),
        other => yaml_safe(other.to_string()),
    }
}

/// The longest implicit mapping key YAML allows, in characters (YAML 1.2, section 7.4.2): a
/// longer key cannot be written in the block layout kubectl reads.
pub(crate) const MAX_IMPLICIT_KEY_CHARS: usize = 1024;

/// True when every mapping key inside `value`, as [`scalar`] writes it, fits in an implicit
/// key. Depth is bounded by the parser's budget.
pub(crate) fn keys_writable(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| scalar(k).chars().count() <= MAX_IMPLICIT_KEY_CHARS && keys_writable(v)),
        Value::Array(items) => items.iter().all(keys_writable),
        _ => true,
    }
}

/// JSON text made valid YAML: characters YAML does not allow raw in a document (DEL, C1
/// controls, U+FFFE/U+FFFF) and those a YAML 1.1 reader takes as line breaks or a byte-order
/// mark (U+0085, U+2028, U+2029, U+FEFF) are written as `\uXXXX` escapes. They can only occur
/// inside JSON strings, where YAML's double-quoted style reads the escape back.
fn yaml_safe(json: String) -> String {
    let needs_escape = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !json.chars().any(needs_escape) {
        return json;
    }
    let mut out = String::with_capacity(json.len().saturating_add(16));
    for c in json.chars() {
        if needs_escape(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A string as a YAML scalar: plain when that reads back as the same string, else a JSON
/// double-quoted string (always valid YAML).
pub(crate) fn scalar(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else {
        yaml_safe(Value::String(s.to_owned()).to_string())
    }
}

pub(crate) fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || first == '/' || first == '.') {
        return false;
    }
    if s.ends_with(':') || s.contains(": ") || s.contains(" #") {
        return false;
    }
    let reserved = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", ".nan",
    ];
    if reserved.iter().any(|r| s.eq_ignore_ascii_case(r)) {
        return false;
    }
    if s.parse::<f64>().is_ok() || s.starts_with("0x") || s.starts_with("0o") {
        return false;
    }
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._/:@[]+=%~".contains(c))
        && !s
            .chars()
            .all(|c| c.is_ascii_digit() || c == '_' || c == ':' || c == '.')
}

/// A whole document from a JSON value (a mapping at the top), keys sorted.
pub(crate) fn document(value: &Value) -> String {
    let mut w = YamlWriter::new();
    if let Value::Object(map) = value {
        for (k, v) in map {
            w.value(0, false, &scalar(k), v);
        }
    }
    w.finish()
}
