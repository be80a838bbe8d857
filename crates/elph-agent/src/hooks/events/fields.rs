//! The serde field names of a struct, read from its `Deserialize` implementation: the fields an
//! outcome type declares are the fields its event honours, so no list is written by hand.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The JSON names of `T`'s fields (after `rename_all`); empty for a type that is not a struct with
/// named fields.
pub(super) fn of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // The probe always fails once it has seen the fields; the error carries nothing.
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// A deserializer that records the field list serde asks it for, then gives up.
struct Probe<'a>(&'a mut &'static [&'static str]);

#[derive(Debug)]
struct Seen;

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fields seen")
    }
}

impl std::error::Error for Seen {}

impl de::Error for Seen {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        Seen
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Seen;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Seen> {
        Err(Seen)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Seen> {
        *self.0 = fields;
        Err(Seen)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[expect(dead_code, reason = "only the field names are read")]
    struct Example {
        tool_input: Option<u8>,
        block: Option<bool>,
    }

    #[derive(Deserialize)]
    struct Unit;

    #[test]
    fn reads_the_json_names_of_a_struct() {
        assert_eq!(super::of::<Example>(), ["toolInput", "block"]);
        assert!(super::of::<Unit>().is_empty());
    }
}
