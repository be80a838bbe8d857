//! The YAML frontmatter of a Markdown file (`---` lines around `key: value` pairs), as the Agent
//! Skills format and the prompt-file conventions of other agents write it.

use gray_matter::Matter;
use gray_matter::engine::YAML;
use serde_json::{Map, Value};

/// A Markdown file split into its frontmatter fields and its body.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Document {
    /// Whether the file opened with a frontmatter block at all.
    pub(crate) has_frontmatter: bool,
    pub fields: Map<String, Value>,
    pub body: String,
}

impl Document {
    /// Splits `text`; an error says what is wrong with the frontmatter, in words.
    pub(super) fn parse(text: &str) -> Result<Document, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let opens = text.starts_with("---\n") || text.starts_with("---\r\n");
        if !opens {
            return Ok(Document {
                has_frontmatter: false,
                fields: Map::new(),
                body: text.to_string(),
            });
        }
        let matter = Matter::<YAML>::new();
        let parsed = matter
            .parse::<gray_matter::Pod>(text)
            .map_err(|error| format!("its frontmatter is not valid YAML ({error})"))?;
        let fields = match parsed.data {
            None => Map::new(),
            Some(pod) => match pod
                .deserialize::<Value>()
                .map_err(|error| format!("its frontmatter could not be read ({error})"))?
            {
                Value::Object(fields) => fields,
                Value::Null => Map::new(),
                _ => return Err("its frontmatter is not a list of `key: value` lines".into()),
            },
        };
        Ok(Document {
            has_frontmatter: true,
            fields,
            body: parsed.content,
        })
    }

    /// A text field: `Ok(None)` when absent, an error naming the field when it is not text.
    pub(super) fn text(&self, field: &str) -> Result<Option<String>, String> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!(
                "frontmatter field '{field}' must be text, not {}",
                kind(other)
            )),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fields_and_body() {
        let doc =
            Document::parse("---\nname: pdf\ndescription: Fill PDF forms\n---\n# Steps\n1. read\n").unwrap();
        assert!(doc.has_frontmatter);
        assert_eq!(doc.text("name").unwrap().as_deref(), Some("pdf"));
        assert_eq!(
            doc.text("description").unwrap().as_deref(),
            Some("Fill PDF forms")
        );
        assert_eq!(doc.body.trim(), "# Steps\n1. read");
    }

    #[test]
    fn no_frontmatter_is_all_body() {
        let doc = Document::parse("Review $ARGUMENTS\n").unwrap();
        assert!(!doc.has_frontmatter);
        assert_eq!(doc.body, "Review $ARGUMENTS\n");
    }

    #[test]
    fn a_bom_is_ignored() {
        let doc = Document::parse("\u{feff}---\ndescription: x\n---\nbody").unwrap();
        assert_eq!(doc.text("description").unwrap().as_deref(), Some("x"));
    }

    #[test]
    fn bad_yaml_and_wrong_types_are_errors() {
        assert!(
            Document::parse("---\nname: [unclosed\n---\nbody")
                .unwrap_err()
                .contains("not valid YAML")
        );
        let doc = Document::parse("---\nname: 12\n---\n").unwrap();
        assert_eq!(
            doc.text("name").unwrap_err(),
            "frontmatter field 'name' must be text, not a number"
        );
    }

    #[test]
    fn a_later_rule_line_stays_in_the_body() {
        let doc = Document::parse("---\ndescription: d\n---\nabove\n---\nbelow\n").unwrap();
        assert_eq!(doc.body.trim(), "above\n---\nbelow");
    }
}
