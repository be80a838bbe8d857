//! JSON Schema validation: a tool's arguments against its input schema (native or an MCP
//! server's), and `coding-agent`'s hooks.json against the published schema.
//!
//! Built on `boon` (draft 2020-12 by default, 2019-09, 7, 6 and 4 by `$schema`), which compiles in
//! a fraction of the time of the `jsonschema` crate this replaced. A schema is compiled once and
//! loads nothing from outside itself: a `$ref` to another document (a URL, a file) is a compile
//! error, so a schema from an MCP server cannot make Elph read a file or open a connection. Formats
//! (`"format": "email"`) are annotations, as 2020-12 says by default.
//!
//! Each problem comes back as a [`Violation`]: the JSON pointer of the value, which rule it broke,
//! and a sentence in the words the messages always used (`3 is not of type "string"`).

use std::fmt::Write as _;

use boon::{Compiler, ErrorKind, SchemaIndex, Schemas, UrlLoader, ValidationError};
use serde_json::Value;

/// Where the schema being compiled lives, for boon's resolver (a relative `$ref` resolves against
/// it, then is refused by [`NoLoader`]); `.invalid` is a name reserved never to exist.
const ROOT_URL: &str = "https://elph.invalid/schema.json";

/// A compiled schema.
pub struct Validator {
    schemas: Schemas,
    root: SchemaIndex,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").finish_non_exhaustive()
    }
}

/// Why a schema did not compile: the compiler's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(String);

/// One place where a value breaks the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The JSON pointer of the offending value (`""` for the whole value).
    pub pointer: String,
    /// The offending value itself.
    pub instance: Value,
    /// The rule it broke.
    pub rule: Rule,
    /// The problem in a sentence, e.g. `3 is not of type "string"`.
    pub message: String,
}

/// The schema keyword a [`Violation`] broke, with what a caller needs to word it its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(missing_docs, reason = "each variant is the JSON Schema keyword of its name")]
pub enum Rule {
    /// Fields the schema does not allow (`additionalProperties`), by name.
    AdditionalProperties {
        unexpected: Vec<String>,
    },
    /// A field that must be there (`required`); one violation per missing field.
    Required {
        property: String,
    },
    /// The value is not allowed here at all (a `false` schema).
    FalseSchema,
    Const,
    Enum,
    Type,
    Pattern,
    MinLength,
    MaxLength,
    MinItems,
    MaxItems,
    Minimum,
    Maximum,
    /// Any other keyword (`oneOf`, `multipleOf`, `uniqueItems`, …).
    Other,
}

/// boon's loader for documents the schema names but does not contain: none is loaded.
struct NoLoader;

impl UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("a schema may not refer to another document ({url})").into())
    }
}

impl Validator {
    /// Compiles `schema`; a schema that is not valid JSON Schema, or refers to another document,
    /// is an error.
    pub fn new(schema: &Value) -> Result<Validator, SchemaError> {
        let mut compiler = Compiler::new();
        compiler.use_loader(Box::new(NoLoader));
        let mut schemas = Schemas::new();
        let not_compiled = |error: boon::CompileError| SchemaError(error_chain(&error));
        compiler
            .add_resource(ROOT_URL, schema.clone())
            .map_err(not_compiled)?;
        let root = compiler.compile(ROOT_URL, &mut schemas).map_err(not_compiled)?;
        Ok(Validator { schemas, root })
    }

    /// Whether `instance` passes.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.schemas.validate(instance, self.root).is_ok()
    }

    /// Every problem of `instance`, in the order of the schema's keywords; empty when it passes.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        let mut found = Vec::new();
        if let Err(error) = self.schemas.validate(instance, self.root) {
            collect(&error, instance, &mut found);
        }
        found
    }
}

/// The leaves of boon's error tree: each keyword that failed where it failed. A `oneOf` or
/// `anyOf` stays one problem ("not valid under any of …"): the failures of each alternative
/// would only be noise.
fn collect(error: &ValidationError<'_, '_>, root: &Value, found: &mut Vec<Violation>) {
    let descend = matches!(
        error.kind,
        ErrorKind::Group | ErrorKind::Schema { .. } | ErrorKind::Reference { .. } | ErrorKind::AllOf
    ) || (matches!(error.kind, ErrorKind::PropertyName { .. }) && !error.causes.is_empty());
    if descend && !error.causes.is_empty() {
        for cause in &error.causes {
            collect(cause, root, found);
        }
        return;
    }
    let pointer = error.instance_location.to_string();
    let instance = root.pointer(&pointer).cloned().unwrap_or(Value::Null);
    let (rule, message) = match &error.kind {
        ErrorKind::AdditionalProperties { got } => {
            let unexpected: Vec<String> = got.iter().map(|name| name.to_string()).collect();
            let quoted: Vec<String> = unexpected.iter().map(|name| format!("'{name}'")).collect();
            let verb = if unexpected.len() == 1 { "was" } else { "were" };
            let message = format!(
                "Additional properties are not allowed ({} {verb} unexpected)",
                quoted.join(", ")
            );
            (Rule::AdditionalProperties { unexpected }, message)
        }
        ErrorKind::Required { want } => {
            for property in want {
                found.push(Violation {
                    pointer: pointer.clone(),
                    instance: instance.clone(),
                    rule: Rule::Required {
                        property: (*property).to_string(),
                    },
                    message: format!("{} is a required property", Value::from(*property)),
                });
            }
            return;
        }
        ErrorKind::FalseSchema => (
            Rule::FalseSchema,
            format!("False schema does not allow {instance}"),
        ),
        ErrorKind::Const { want } => (Rule::Const, format!("{want} was expected")),
        ErrorKind::Enum { want } => (Rule::Enum, format!("{instance} is not one of {}", list(want))),
        ErrorKind::Type { want, .. } => {
            let types: Vec<String> = want.iter().map(|t| format!("\"{t}\"")).collect();
            let kind = if types.len() == 1 { "type" } else { "types" };
            (
                Rule::Type,
                format!("{instance} is not of {kind} {}", types.join(", ")),
            )
        }
        ErrorKind::Pattern { want, .. } => (Rule::Pattern, format!("{instance} does not match \"{want}\"")),
        ErrorKind::MinLength { want, .. } => (
            Rule::MinLength,
            format!("{instance} is shorter than {want} character{}", plural(*want)),
        ),
        ErrorKind::MaxLength { want, .. } => (
            Rule::MaxLength,
            format!("{instance} is longer than {want} character{}", plural(*want)),
        ),
        ErrorKind::MinItems { want, .. } => (
            Rule::MinItems,
            format!("{instance} has less than {want} item{}", plural(*want)),
        ),
        ErrorKind::MaxItems { want, .. } => (
            Rule::MaxItems,
            format!("{instance} has more than {want} item{}", plural(*want)),
        ),
        ErrorKind::Minimum { want, .. } => (
            Rule::Minimum,
            format!("{instance} is less than the minimum of {want}"),
        ),
        ErrorKind::Maximum { want, .. } => (
            Rule::Maximum,
            format!("{instance} is greater than the maximum of {want}"),
        ),
        ErrorKind::OneOf(None) => (
            Rule::Other,
            format!("{instance} is not valid under any of the schemas listed in the 'oneOf' keyword"),
        ),
        ErrorKind::OneOf(Some(_)) => (
            Rule::Other,
            format!("{instance} is valid under more than one of the schemas listed in the 'oneOf' keyword"),
        ),
        ErrorKind::AnyOf => (
            Rule::Other,
            format!("{instance} is not valid under any of the schemas listed in the 'anyOf' keyword"),
        ),
        ErrorKind::Not => (Rule::Other, format!("{instance} is not allowed here ('not')")),
        other => (Rule::Other, other.to_string()),
    };
    found.push(Violation {
        pointer,
        instance,
        rule,
        message,
    });
}

fn list(values: &[Value]) -> String {
    let mut text = String::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{value}");
    }
    text
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// An error and its sources on one line: boon puts the cause of a compile error in `source()`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn problems(schema: Value, instance: Value) -> Vec<(String, Rule, String)> {
        Validator::new(&schema)
            .unwrap()
            .violations(&instance)
            .into_iter()
            .map(|v| (v.pointer, v.rule, v.message))
            .collect()
    }

    #[test]
    fn a_valid_value_has_no_violations() {
        let schema =
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        assert!(Validator::new(&schema).unwrap().is_valid(&json!({"path": "a"})));
        assert!(problems(schema, json!({"path": "a"})).is_empty());
    }

    #[test]
    fn each_problem_names_its_place_and_rule() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10}
            },
            "required": ["path", "mode"],
            "additionalProperties": false
        });
        let found = problems(schema, json!({"path": "", "limit": 11, "extra": true}));
        assert!(found.contains(&(
            "/path".into(),
            Rule::MinLength,
            "\"\" is shorter than 1 character".into()
        )));
        assert!(found.contains(&(
            "/limit".into(),
            Rule::Maximum,
            "11 is greater than the maximum of 10".into()
        )));
        assert!(found.contains(&(
            "".into(),
            Rule::Required {
                property: "mode".into()
            },
            "\"mode\" is a required property".into()
        )));
        assert!(found.contains(&(
            "".into(),
            Rule::AdditionalProperties {
                unexpected: vec!["extra".into()]
            },
            "Additional properties are not allowed ('extra' was unexpected)".into()
        )));
    }

    #[test]
    fn type_errors_read_as_they_always_did() {
        let found = problems(json!({"type": "object"}), json!([]));
        assert_eq!(
            found,
            vec![("".into(), Rule::Type, "[] is not of type \"object\"".into())]
        );
    }

    #[test]
    fn a_one_of_is_one_problem() {
        let schema = json!({"oneOf": [{"const": "a"}, {"const": "b"}]});
        let found = problems(schema, json!("c"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].2.contains("'oneOf'"), "{found:?}");
    }

    #[test]
    fn a_schema_that_refers_to_another_document_does_not_compile() {
        for reference in ["file:///etc/passwd", "https://example.com/s.json", "other.json"] {
            let schema = json!({"properties": {"a": {"$ref": reference}}});
            let error = Validator::new(&schema).unwrap_err();
            assert!(
                error.to_string().contains("another document"),
                "{reference}: {error}"
            );
        }
    }

    #[test]
    fn a_local_reference_resolves() {
        let schema = json!({"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}});
        let found = problems(schema, json!({"a": "x"}));
        assert_eq!(
            found,
            vec![("/a".into(), Rule::Type, "\"x\" is not of type \"integer\"".into())]
        );
    }

    #[test]
    fn a_schema_that_is_not_json_schema_does_not_compile() {
        assert!(Validator::new(&json!({"type": 3})).is_err());
        assert!(Validator::new(&json!({"minLength": "x"})).is_err());
    }

    #[test]
    fn pointers_escape_field_names() {
        let schema = json!({"properties": {"a/b": {"type": "string"}}});
        let found = problems(schema, json!({"a/b": 1}));
        assert_eq!(found[0].0, "/a~1b");
    }
}
