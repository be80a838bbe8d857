//! Strict JSON for config files: a byte-order mark is accepted, a duplicate key is an error.
//!
//! `serde_json` keeps the last of two equal keys, so `{"/p": false, "/p": true}` trusts `/p` and a
//! second `"hooks"` array silently replaces the first one a reviewer read. Here the second key is an
//! error that names its JSON pointer, line and column.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a config file is not usable JSON.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JsonError {
    /// The JSON pointer of the offending value (for a duplicate key: of the second one).
    pub pointer: Option<String>,
    /// What is wrong, with the line and column when the text did not parse.
    pub message: String,
}

/// Parses the bytes of a config file: an optional UTF-8 byte-order mark, then one JSON value with no
/// duplicate keys in any object.
pub fn parse_json(bytes: &[u8]) -> Result<Value, JsonError> {
    // Editors on some systems write a byte-order mark; it carries no meaning in UTF-8.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|err| JsonError {
        pointer: None,
        message: format!("is not valid UTF-8 (at byte {})", err.valid_up_to()),
    })?;
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = ValueSeed {
        pointer: String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|err| {
        let at = format!("line {} column {}", err.line(), err.column());
        match duplicate.into_inner() {
            Some((pointer, key)) => JsonError {
                message: format!(
                    "duplicate key \"{key}\" at {pointer} ({at}); each key may appear once, remove one of them"
                ),
                pointer: Some(pointer),
            },
            None => JsonError {
                pointer: None,
                message: format!("is not valid JSON: {} at {at}", without_position(&err)),
            },
        }
    })
}

/// `serde_json` appends " at line L column C" to its message; callers say that themselves.
fn without_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rsplit_once(" at line ") {
        Some((message, _)) => message.to_string(),
        None => text,
    }
}

/// A JSON pointer segment (RFC 6901): `~` is `~0`, `/` is `~1`.
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Checks that the number at `pointer`, if there is one, is written as a whole number: `1e3` and
/// `1.5` are errors at that pointer (`timeoutMs is 1000.0; it must be a whole number`). Anything else
/// (absent, another type, a negative whole number) is left to the schema or serde.
pub fn whole_number_at(value: &Value, pointer: &str) -> Result<(), JsonError> {
    match value.pointer(pointer) {
        Some(Value::Number(number)) if number.is_f64() => Err(JsonError {
            pointer: Some(pointer.to_string()),
            message: format!(
                "{} is {number}; it must be a whole number",
                pointer.rsplit('/').next().unwrap_or(pointer)
            ),
        }),
        _ => Ok(()),
    }
}

struct ValueSeed<'a> {
    pointer: String,
    duplicate: &'a RefCell<Option<(String, String)>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let seed = ValueSeed {
                pointer: format!("{}/{}", self.pointer, items.len()),
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let pointer = format!("{}/{}", self.pointer, pointer_segment(&key));
            if map.contains_key(&key) {
                let message = format!("duplicate key \"{key}\"");
                *self.duplicate.borrow_mut() = Some((pointer, key));
                return Err(A::Error::custom(message));
            }
            let value = access.next_value_seed(ValueSeed {
                pointer,
                duplicate: self.duplicate,
            })?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_json_parses_like_serde_json() {
        let text = br#"{"a": [1, -2, 3.5, true, null, "x"], "b": {"c": {}}}"#;
        assert_eq!(
            parse_json(text).unwrap(),
            serde_json::from_slice::<Value>(text).unwrap()
        );
    }

    #[test]
    fn a_bom_is_accepted() {
        assert_eq!(parse_json(b"\xEF\xBB\xBF{\"a\": 1}").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn a_duplicate_key_names_the_second_ones_pointer() {
        let err = parse_json(br#"{"directories": {"/p": false, "/p": true}}"#).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/directories/~1p"));
        assert!(err.message.contains("duplicate key \"/p\""), "{}", err.message);
        assert!(err.message.contains("line 1 column"), "{}", err.message);
        let err = parse_json(b"{\"hooks\": [],\n \"hooks\": [{\"id\": 1}]}").unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/hooks"));
        assert!(err.message.contains("line 2"), "{}", err.message);
        let err = parse_json(br#"{"hooks": [{"id": "a", "id": "b"}]}"#).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/hooks/0/id"));
    }

    #[test]
    fn bad_json_and_bad_utf8_are_errors_with_a_position() {
        let err = parse_json(b"{\"a\": }").unwrap_err();
        assert!(err.message.starts_with("is not valid JSON"), "{}", err.message);
        assert!(err.message.contains("line 1 column 7"), "{}", err.message);
        assert!(parse_json(b"{} {}").is_err(), "trailing data");
        assert!(parse_json(b"\xFF").unwrap_err().message.contains("UTF-8"));
    }

    #[test]
    fn whole_numbers_report_their_own_pointer() {
        let value = parse_json(br#"{"hooks": [{"timeoutMs": 1e3}, {"timeoutMs": 5}]}"#).unwrap();
        let err = whole_number_at(&value, "/hooks/0/timeoutMs").unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/hooks/0/timeoutMs"));
        assert_eq!(err.message, "timeoutMs is 1000.0; it must be a whole number");
        assert!(whole_number_at(&value, "/hooks/1/timeoutMs").is_ok());
        assert!(whole_number_at(&value, "/hooks/2/timeoutMs").is_ok());
    }
}
