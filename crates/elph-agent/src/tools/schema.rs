//! A native tool's input schema, generated from its argument type (`#[derive(JsonSchema)]`) so the
//! schema the model sees and the type that parses the call cannot drift apart.
//!
//! The generator is set up to give the plain schemas the tools always sent: JSON Schema 2020-12,
//! `additionalProperties: false` (from `#[serde(deny_unknown_fields)]`), one `description` per
//! field (its doc comment, lines joined by spaces), and nothing the model does not need: no
//! `title`, no `format` (`uint64`), no `default`, no `null` for an `Option` (an optional field is
//! one left out of `required`). Keys come in the order the hand-written schemas used, so the
//! serialized schema is byte for byte what it was (test `schemas_are_the_ones_the_model_always_saw`).

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The input schema of a tool whose arguments are `T`.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .with_transform(Plain)
        .into_generator()
        .into_root_schema_for::<T>();
    if let Some(object) = schema.as_object_mut() {
        // The tool's description says what it does; the type's doc comment is for readers.
        object.shift_remove("description");
        // A tool without required fields still says so (`"required": []`), as it always did.
        object
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        order(object, ROOT_ORDER);
    }
    schema.to_value()
}

/// The order of the keys at the top of a tool's schema.
const ROOT_ORDER: &[&str] = &[
    "$schema",
    "type",
    "properties",
    "required",
    "additionalProperties",
];
/// The order of the keys of one field's schema.
const FIELD_ORDER: &[&str] = &["type", "minLength", "minimum", "maximum", "description"];

#[derive(Clone)]
struct Plain;

impl Transform for Plain {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        for noise in ["title", "format", "default"] {
            object.remove(noise);
        }
        // `Option<T>` is `"type": [T, "null"]`: the model leaves the field out instead.
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|kind| kind != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                object.insert("type".to_string(), only);
            }
        }
        if let Some(Value::String(description)) = object.get_mut("description") {
            *description = description.replace('\n', " ");
        }
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for field in properties.values_mut() {
                if let Value::Object(field) = field {
                    order(field, FIELD_ORDER);
                }
            }
        }
    }
}

/// Puts the keys named in `first` first, in that order; any other key keeps its place after them.
fn order(object: &mut Map<String, Value>, first: &[&str]) {
    let mut rest = std::mem::take(object);
    for key in first {
        if let Some(value) = rest.shift_remove(*key) {
            object.insert((*key).to_string(), value);
        }
    }
    object.extend(rest);
}
