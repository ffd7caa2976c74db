//! Strict JSON: objects only, no duplicate member names, bounded depth and width.
//!
//! `serde_json` keeps the last of duplicate members and deserialises structs from arrays; this
//! module parses into a [`serde_json::Value`] through its own visitor so that every object at every
//! level is checked, and reports failures without echoing any input.

use core::cell::Cell;
use core::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::error::{Error, JsonProblem};

/// Maximum nesting depth of any JSON document this crate parses.
pub const MAX_JSON_DEPTH: usize = 32;
/// Maximum members of one object or elements of one array.
pub const MAX_JSON_MEMBERS: usize = 256;

/// Parses `bytes` as exactly one JSON object under the limits above.
pub(crate) fn parse_object(bytes: &[u8], what: &'static str) -> Result<Map<String, Value>, Error> {
    let problem = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Seed {
        depth: 0,
        problem: &problem,
    };
    let fail = |p: JsonProblem| Error::Json { what, problem: p };
    let value = match seed.deserialize(&mut de) {
        Ok(v) => v,
        Err(_) => return Err(fail(problem.get().unwrap_or(JsonProblem::Syntax))),
    };
    if de.end().is_err() {
        return Err(fail(JsonProblem::Syntax));
    }
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(fail(JsonProblem::NotObject)),
    }
}

#[derive(Clone, Copy)]
struct Seed<'a> {
    depth: usize,
    problem: &'a Cell<Option<JsonProblem>>,
}

impl Seed<'_> {
    fn fail<E: de::Error>(self, p: JsonProblem) -> E {
        self.problem.set(Some(p));
        E::custom("rejected")
    }

    fn nested<E: de::Error>(self) -> Result<Self, E> {
        let depth = self.depth.saturating_add(1);
        if depth > MAX_JSON_DEPTH {
            return Err(self.fail(JsonProblem::TooDeep));
        }
        Ok(Seed {
            depth,
            problem: self.problem,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(n) => Ok(Value::Number(n)),
            None => Err(self.fail(JsonProblem::Syntax)),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            if out.len() >= MAX_JSON_MEMBERS {
                return Err(self.fail(JsonProblem::TooManyMembers));
            }
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let full = out.len() >= MAX_JSON_MEMBERS;
            // One lookup per member: the vacant slot found by the duplicate check takes the value.
            let Entry::Vacant(slot) = out.entry(key) else {
                return Err(self.fail(JsonProblem::DuplicateMember));
            };
            if full {
                return Err(self.fail(JsonProblem::TooManyMembers));
            }
            slot.insert(map.next_value_seed(inner)?);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(input: &str) -> JsonProblem {
        match parse_object(input.as_bytes(), "test") {
            Err(Error::Json { problem, .. }) => problem,
            other => panic!("expected a JSON error for {input:?}, got {other:?}"),
        }
    }

    #[test]
    fn accepts_objects() {
        let m = parse_object(br#"{"a":1,"b":{"c":[1,2,"x"]},"d":null}"#, "t").unwrap();
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn rejects_non_objects_and_garbage() {
        assert_eq!(problem(r#"["RS256","k1"]"#), JsonProblem::NotObject);
        assert_eq!(problem("null"), JsonProblem::NotObject);
        assert_eq!(problem("\"x\""), JsonProblem::NotObject);
        assert_eq!(problem("1"), JsonProblem::NotObject);
        assert_eq!(problem("{} {}"), JsonProblem::Syntax);
        assert_eq!(problem("{}x"), JsonProblem::Syntax);
        assert_eq!(problem("\u{feff}{}"), JsonProblem::Syntax);
        assert_eq!(problem(r#"{"a":"\ud800"}"#), JsonProblem::Syntax);
        assert_eq!(problem(r#"{"a":1e400}"#), JsonProblem::Syntax);
        assert_eq!(problem(""), JsonProblem::Syntax);
        assert!(parse_object(b"{\"a\":\"\xff\"}", "t").is_err());
    }

    #[test]
    fn rejects_duplicates_at_any_depth() {
        assert_eq!(problem(r#"{"a":1,"a":2}"#), JsonProblem::DuplicateMember);
        assert_eq!(
            problem(r#"{"x":{"a":1,"a":1}}"#),
            JsonProblem::DuplicateMember
        );
        assert_eq!(
            problem(r#"{"x":[{"a":1,"\u0061":1}]}"#),
            JsonProblem::DuplicateMember
        );
    }

    #[test]
    fn bounds_depth_and_width() {
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        assert!(matches!(
            problem(&deep),
            JsonProblem::TooDeep | JsonProblem::Syntax
        ));
        let arrays = format!("{{\"a\":{}{}}}", "[".repeat(40), "]".repeat(40));
        assert_eq!(problem(&arrays), JsonProblem::TooDeep);
        let wide = format!("{{\"a\":[{}]}}", vec!["1"; MAX_JSON_MEMBERS + 1].join(","));
        assert_eq!(problem(&wide), JsonProblem::TooManyMembers);
    }
}
