//! An elicitation's form: the server's `requestedSchema` read into fields a front end can show
//! (MCP restricts it to a flat object of primitive properties: strings with a format and length
//! bounds, numbers and integers with bounds, booleans, single- and multi-select enums with
//! titles), checked before anyone is asked, and the rules an answer must meet before it goes back.
//!
//! rmcp's typed schema has already refused what is not a flat object of primitives; what is
//! checked here is what it lets through and a form cannot honour: a `required` name that is no
//! property, an enum without options, bounds that exclude everything, a default that breaks its
//! own field's rules.

use serde_json::{Map, Number, Value};

/// A string field's `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    fn parse(name: &str) -> Option<TextFormat> {
        match name {
            "email" => Some(TextFormat::Email),
            "uri" => Some(TextFormat::Uri),
            "date" => Some(TextFormat::Date),
            "date-time" => Some(TextFormat::DateTime),
            _ => None,
        }
    }

    /// What the field shows as a hint.
    pub fn hint(self) -> &'static str {
        match self {
            TextFormat::Email => "an email address",
            TextFormat::Uri => "a URI",
            TextFormat::Date => "a date, YYYY-MM-DD",
            TextFormat::DateTime => "a date and time, RFC 3339",
        }
    }

    fn accepts(self, text: &str) -> bool {
        match self {
            TextFormat::Email => {
                text.split_once('@').is_some_and(|(user, host)| {
                    !user.is_empty() && host.contains('.') && !host.ends_with('.')
                }) && !text.chars().any(char::is_whitespace)
            }
            TextFormat::Uri => reqwest::Url::parse(text).is_ok(),
            TextFormat::Date => {
                let format = time::macros::format_description!("[year]-[month]-[day]");
                time::Date::parse(text, format).is_ok()
            }
            TextFormat::DateTime => {
                time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).is_ok()
            }
        }
    }
}

/// One option of an enum: the value sent and the title shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub title: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    Text {
        format: Option<TextFormat>,
        min_length: Option<u64>,
        max_length: Option<u64>,
        default: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
        default: Option<Number>,
    },
    Boolean {
        default: Option<bool>,
    },
    /// One of `options`.
    Choice {
        options: Vec<Choice>,
        default: Option<String>,
    },
    /// Any number of `options`, within the bounds.
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
        default: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The property's name: the key of its value in the answer.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
}

impl Field {
    /// The title, or the property's name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// Why `value` is not an answer for this field, if it is not.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (&self.kind, value) {
            (
                FieldKind::Text {
                    format,
                    min_length,
                    max_length,
                    ..
                },
                Value::String(text),
            ) => {
                let length = text.chars().count() as u64;
                if let Some(min) = min_length
                    && length < *min
                {
                    return Err(format!("needs at least {min} characters"));
                }
                if let Some(max) = max_length
                    && length > *max
                {
                    return Err(format!("takes at most {max} characters"));
                }
                match format {
                    Some(format) if !format.accepts(text) => Err(format!("must be {}", format.hint())),
                    _ => Ok(()),
                }
            }
            (
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                    ..
                },
                Value::Number(number),
            ) => {
                if *integer && number.as_i64().is_none() {
                    return Err("must be a whole number".into());
                }
                let Some(value) = number.as_f64() else {
                    return Err("must be a number".into());
                };
                if let Some(min) = minimum
                    && value < *min
                {
                    return Err(format!("must be at least {min}"));
                }
                if let Some(max) = maximum
                    && value > *max
                {
                    return Err(format!("must be at most {max}"));
                }
                Ok(())
            }
            (FieldKind::Boolean { .. }, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice { options, .. }, Value::String(value)) => {
                if options.iter().any(|option| option.value == *value) {
                    Ok(())
                } else {
                    Err(format!("'{value}' is not one of the options"))
                }
            }
            (
                FieldKind::Choices {
                    options,
                    min_items,
                    max_items,
                    ..
                },
                Value::Array(values),
            ) => {
                let mut seen = std::collections::HashSet::new();
                for value in values {
                    let Some(value) = value.as_str() else {
                        return Err("takes a list of options".into());
                    };
                    if !options.iter().any(|option| option.value == value) {
                        return Err(format!("'{value}' is not one of the options"));
                    }
                    if !seen.insert(value) {
                        return Err(format!("'{value}' is chosen twice"));
                    }
                }
                let count = values.len() as u64;
                if let Some(min) = min_items
                    && count < *min
                {
                    return Err(format!("choose at least {min}"));
                }
                if let Some(max) = max_items
                    && count > *max
                {
                    return Err(format!("choose at most {max}"));
                }
                Ok(())
            }
            (kind, _) => Err(format!("must be {}", kind_name(kind))),
        }
    }

    /// The field's default as an answer, if it has one.
    pub fn default_value(&self) -> Option<Value> {
        match &self.kind {
            FieldKind::Text { default, .. } => default.clone().map(Value::String),
            FieldKind::Number { default, .. } => default.clone().map(Value::Number),
            FieldKind::Boolean { default } => default.map(Value::Bool),
            FieldKind::Choice { default, .. } => default.clone().map(Value::String),
            FieldKind::Choices { default, .. } => (!default.is_empty())
                .then(|| Value::Array(default.iter().cloned().map(Value::String).collect())),
        }
    }
}

fn kind_name(kind: &FieldKind) -> &'static str {
    match kind {
        FieldKind::Text { .. } => "text",
        FieldKind::Number { integer: true, .. } => "a whole number",
        FieldKind::Number { .. } => "a number",
        FieldKind::Boolean { .. } => "true or false",
        FieldKind::Choice { .. } => "one of the options",
        FieldKind::Choices { .. } => "a list of options",
    }
}

/// A server's form, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    /// The server's schema as it sent it, for an editor that shows the form itself.
    pub schema: Value,
    pub title: Option<String>,
    pub description: Option<String>,
    /// In the server's order.
    pub fields: Vec<Field>,
}

impl Form {
    /// Reads `schema` (an elicitation's `requestedSchema`, as JSON in the server's property order)
    /// into a form, or says what is wrong with it.
    pub fn from_schema(schema: &Value) -> Result<Form, String> {
        let Some(object) = schema.as_object() else {
            return Err("the requested schema is not an object".into());
        };
        if object.get("type").and_then(Value::as_str) != Some("object") {
            return Err("the requested schema's type is not \"object\"".into());
        }
        let empty = Map::new();
        let properties = match object.get("properties") {
            Some(Value::Object(properties)) => properties,
            None => &empty,
            Some(_) => return Err("its \"properties\" is not an object".into()),
        };
        let required: Vec<&str> = match object.get("required") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| {
                    name.as_str()
                        .ok_or("its \"required\" holds something other than names")
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("its \"required\" is not a list".into()),
        };
        if let Some(unknown) = required.iter().find(|name| !properties.contains_key(**name)) {
            return Err(format!(
                "it requires '{unknown}', which is not one of its properties"
            ));
        }
        let fields = properties
            .iter()
            .map(|(name, property)| {
                field(name, property, required.contains(&name.as_str()))
                    .map_err(|problem| format!("field '{name}': {problem}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Form {
            schema: schema.clone(),
            title: text(object, "title"),
            description: text(object, "description"),
            fields,
        })
    }

    /// Checks an answer's `content`: only the form's fields, each valid, every required one
    /// there. The message names the field.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), String> {
        for (name, value) in content {
            let Some(field) = self.fields.iter().find(|field| field.name == *name) else {
                return Err(format!("'{name}' is not a field of the form"));
            };
            field
                .check(value)
                .map_err(|problem| format!("{}: {problem}", field.label()))?;
        }
        match self
            .fields
            .iter()
            .find(|field| field.required && !content.contains_key(&field.name))
        {
            Some(missing) => Err(format!("{} is required", missing.label())),
            None => Ok(()),
        }
    }
}

fn text(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_string)
}

fn bound(object: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("its {key} is not a count")),
    }
}

fn number(object: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("its {key} is not a number")),
    }
}

/// `[{const, title}]` (oneOf/anyOf), or `enum` with `enumNames` (the legacy form) or without.
fn options(object: &Map<String, Value>) -> Result<Vec<Choice>, String> {
    let titled = object
        .get("oneOf")
        .or_else(|| object.get("anyOf"))
        .and_then(Value::as_array);
    let options: Vec<Choice> = if let Some(titled) = titled {
        titled
            .iter()
            .map(|option| {
                let value = option.get("const").and_then(Value::as_str);
                let title = option.get("title").and_then(Value::as_str);
                match (value, title) {
                    (Some(value), title) => Ok(Choice {
                        value: value.to_string(),
                        title: title.unwrap_or(value).to_string(),
                    }),
                    (None, _) => Err("an option has no string \"const\"".to_string()),
                }
            })
            .collect::<Result<_, _>>()?
    } else {
        let values = object
            .get("enum")
            .and_then(Value::as_array)
            .ok_or("it has neither \"enum\" nor \"oneOf\"")?;
        let names = object.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let value = value.as_str().ok_or("an option is not a string")?;
                let title = names
                    .and_then(|names| names.get(index))
                    .and_then(Value::as_str)
                    .unwrap_or(value);
                Ok(Choice {
                    value: value.to_string(),
                    title: title.to_string(),
                })
            })
            .collect::<Result<_, String>>()?
    };
    if options.is_empty() {
        return Err("it offers no options".into());
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = options.iter().find(|option| !seen.insert(option.value.as_str())) {
        return Err(format!("the option '{}' is listed twice", twice.value));
    }
    Ok(options)
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, String> {
    let object = property.as_object().ok_or("its schema is not an object")?;
    let kind = match object.get("type").and_then(Value::as_str) {
        Some("string") if object.contains_key("enum") || object.contains_key("oneOf") => FieldKind::Choice {
            options: options(object)?,
            default: text(object, "default"),
        },
        Some("string") => {
            let format = match object.get("format").and_then(Value::as_str) {
                None => None,
                Some(name) => Some(
                    TextFormat::parse(name).ok_or(format!("the format '{name}' is not one MCP allows"))?,
                ),
            };
            FieldKind::Text {
                format,
                min_length: bound(object, "minLength")?,
                max_length: bound(object, "maxLength")?,
                default: text(object, "default"),
            }
        }
        Some(kind @ ("number" | "integer")) => FieldKind::Number {
            integer: kind == "integer",
            minimum: number(object, "minimum")?,
            maximum: number(object, "maximum")?,
            default: match object.get("default") {
                None | Some(Value::Null) => None,
                Some(Value::Number(number)) => Some(number.clone()),
                Some(_) => return Err("its default is not a number".into()),
            },
        },
        Some("boolean") => FieldKind::Boolean {
            default: object.get("default").and_then(Value::as_bool),
        },
        Some("array") => {
            let items = object
                .get("items")
                .and_then(Value::as_object)
                .ok_or("a list without \"items\"")?;
            FieldKind::Choices {
                options: options(items)?,
                min_items: bound(object, "minItems")?,
                max_items: bound(object, "maxItems")?,
                default: match object.get("default") {
                    Some(Value::Array(values)) => values
                        .iter()
                        .map(|value| {
                            value
                                .as_str()
                                .map(str::to_string)
                                .ok_or("its default holds something other than options")
                        })
                        .collect::<Result<_, _>>()?,
                    _ => Vec::new(),
                },
            }
        }
        Some(other) => return Err(format!("the type '{other}' is not one a form can ask")),
        None => return Err("it has no type".into()),
    };
    let contradiction = match &kind {
        FieldKind::Text {
            min_length: Some(min),
            max_length: Some(max),
            ..
        } => (min > max).then(|| format!("minLength {min} is above maxLength {max}")),
        FieldKind::Number {
            minimum: Some(min),
            maximum: Some(max),
            ..
        } => (min > max).then(|| format!("minimum {min} is above maximum {max}")),
        FieldKind::Choices {
            min_items: Some(min),
            max_items: Some(max),
            ..
        } => (min > max).then(|| format!("minItems {min} is above maxItems {max}")),
        _ => None,
    };
    if let Some(contradiction) = contradiction {
        return Err(contradiction);
    }
    let field = Field {
        name: name.to_string(),
        title: text(object, "title"),
        description: text(object, "description"),
        required,
        kind,
    };
    if let Some(default) = field.default_value() {
        field
            .check(&default)
            .map_err(|problem| format!("its default {default} breaks its own rule: {problem}"))?;
    }
    Ok(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_keeps_the_servers_order_titles_and_required_marks() {
        let form = Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "Your name"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
                "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}, "default": ["f1"]},
                "ok": {"type": "boolean"}
            },
            "required": ["name"]
        }))
        .unwrap();
        let names: Vec<&str> = form.fields.iter().map(|field| field.name.as_str()).collect();
        assert_eq!(names, ["name", "age", "hero", "pet", "fish", "ok"]);
        assert!(form.fields[0].required && !form.fields[1].required);
        assert_eq!(form.fields[0].label(), "Name");
        assert_eq!(form.fields[1].label(), "age");
        let FieldKind::Choice { options, .. } = &form.fields[3].kind else {
            panic!("{:?}", form.fields[3]);
        };
        assert_eq!(options[1].title, "Dogs");
        assert_eq!(form.fields[4].default_value(), Some(json!(["f1"])));
    }

    #[test]
    fn what_a_form_cannot_honour_is_refused_with_the_field_named() {
        let refused = |schema: Value| Form::from_schema(&schema).unwrap_err();
        assert_eq!(
            refused(json!({"type": "object", "properties": {}, "required": ["x"]})),
            "it requires 'x', which is not one of its properties"
        );
        assert_eq!(
            refused(
                json!({"type": "object", "properties": {"n": {"type": "number", "minimum": 5, "maximum": 1}}})
            ),
            "field 'n': minimum 5 is above maximum 1"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"c": {"type": "string", "enum": []}}})),
            "field 'c': it offers no options"
        );
        assert_eq!(
            refused(
                json!({"type": "object", "properties": {"i": {"type": "integer", "maximum": 3, "default": 9}}})
            ),
            "field 'i': its default 9 breaks its own rule: must be at most 3"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"o": {"type": "object"}}})),
            "field 'o': the type 'object' is not one a form can ask"
        );
    }

    #[test]
    fn answers_are_checked_against_every_rule_of_their_field() {
        let form = Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email"},
                "born": {"type": "string", "format": "date"},
                "site": {"type": "string", "format": "uri", "maxLength": 30},
                "count": {"type": "integer", "minimum": 1},
                "size": {"type": "number", "maximum": 2.5},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}
            },
            "required": ["email"]
        }))
        .unwrap();
        let check = |content: Value| form.check(content.as_object().unwrap());
        assert_eq!(
            check(
                json!({"email": "ada@example.org", "born": "1815-12-10", "count": 3, "size": 2.5, "tags": ["a"]})
            ),
            Ok(())
        );
        assert_eq!(check(json!({})), Err("email is required".into()));
        assert_eq!(
            check(json!({"email": "not mail"})),
            Err("email: must be an email address".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "born": "1815-13-10"})),
            Err("born: must be a date, YYYY-MM-DD".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "count": 1.5})),
            Err("count: must be a whole number".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "count": 0})),
            Err("count: must be at least 1".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "size": "big"})),
            Err("size: must be a number".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "tags": ["a", "b"]})),
            Err("tags: choose at most 1".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "tags": ["c"]})),
            Err("tags: 'c' is not one of the options".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "site": "no scheme"})),
            Err("site: must be a URI".into())
        );
        assert_eq!(
            check(json!({"email": "a@b.co", "extra": 1})),
            Err("'extra' is not a field of the form".into())
        );
    }
}
