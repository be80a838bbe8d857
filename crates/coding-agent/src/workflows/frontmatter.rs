//! The YAML frontmatter of a Markdown file (`---` lines around `key: value` pairs), as the Agent
//! Skills format and the prompt-file conventions of other agents write it.

use gray_matter::engine::{Engine, YAML};
use gray_matter::{Matter, Pod};
use serde_json::{Map, Value};
use yaml_rust2::parser::{Event, Parser};

/// The deepest nesting of lists and mappings a frontmatter may have. Real frontmatter is a flat
/// list of `key: value` lines (a `metadata:` mapping at most); the tree built from it is dropped
/// and converted recursively, so a 1 MiB file of `- - - - …` (half a million levels) would
/// overflow the stack.
const MAX_DEPTH: usize = 32;

/// gray_matter's YAML engine behind a check of the parser's events: an alias (`*name`) is
/// refused, because the loader expands each one into a copy of what it names, so a few hundred
/// bytes of nested aliases (a "billion laughs") become gigabytes; and so is nesting deeper than
/// [`MAX_DEPTH`]. The check streams events and builds nothing, so it is linear in the text.
struct BoundedYaml;

impl Engine for BoundedYaml {
    fn parse(content: &str) -> gray_matter::Result<Pod> {
        check_bounds(content).map_err(gray_matter::Error::UnsupportedError)?;
        YAML::parse(content)
    }
}

/// Why `yaml` may not be loaded, in words that follow "its frontmatter".
fn check_bounds(yaml: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut depth = 0usize;
    loop {
        // A syntax error is left for the loader, which words it the same way as before.
        let Ok((event, _)) = parser.next_token() else {
            return Ok(());
        };
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err(
                    "uses a YAML alias (`*name`); aliases are refused in frontmatter, since \
                     each one copies what it names and a small file can expand to gigabytes \
                     (write the value out instead)"
                        .to_string(),
                );
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "nests lists or mappings more than {MAX_DEPTH} levels deep; frontmatter is \
                         a list of `key: value` lines"
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

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
        let quoted = quote_argument_hint(text);
        let matter = Matter::<BoundedYaml>::new();
        let parsed = matter.parse::<Pod>(&quoted).map_err(|error| match error {
            gray_matter::Error::UnsupportedError(why) => format!("its frontmatter {why}"),
            error => format!("its frontmatter is not valid YAML ({error})"),
        })?;
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

/// `text` with an `argument-hint` that starts with `[` quoted: Claude Code's documented form
/// `argument-hint: [pr-number] [priority]` is not valid YAML (and `[file]` alone would be a list),
/// yet it is meant as the text shown.
fn quote_argument_hint(text: &str) -> std::borrow::Cow<'_, str> {
    const KEY: &str = "argument-hint:";
    let mut out = String::with_capacity(text.len() + 8);
    let mut changed = false;
    let mut lines = text.split_inclusive('\n');
    // The opening `---` line.
    if let Some(first) = lines.next() {
        out.push_str(first);
    }
    let mut in_frontmatter = true;
    for line in lines {
        if in_frontmatter && line.trim_end() == "---" {
            in_frontmatter = false;
        }
        let value = line.strip_prefix(KEY).map(str::trim);
        match value {
            Some(value) if in_frontmatter && value.starts_with('[') => {
                let ending = line.strip_prefix(line.trim_end()).unwrap_or_default();
                out.push_str(&format!("{KEY} '{}'{ending}", value.replace('\'', "''")));
                changed = true;
            }
            _ => out.push_str(line),
        }
    }
    if changed {
        std::borrow::Cow::Owned(out)
    } else {
        std::borrow::Cow::Borrowed(text)
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
    fn aliases_and_deep_nesting_are_refused() {
        let laughs = "---\nname: x\na: &a [\"lol\",\"lol\"]\nb: &b [*a,*a]\nc: [*b,*b]\n---\nbody";
        let error = Document::parse(laughs).unwrap_err();
        assert!(error.starts_with("its frontmatter uses a YAML alias"), "{error}");
        // An anchor alone expands nothing.
        let doc = Document::parse("---\ndescription: &d text\n---\n").unwrap();
        assert_eq!(doc.text("description").unwrap().as_deref(), Some("text"));
        let deep = format!("---\na: {}1{}\n---\n", "[".repeat(40), "]".repeat(40));
        assert!(
            Document::parse(&deep)
                .unwrap_err()
                .contains("more than 32 levels")
        );
        let deep = format!("---\na:\n{}x\n---\n", "- ".repeat(100_000));
        assert!(
            Document::parse(&deep)
                .unwrap_err()
                .contains("more than 32 levels")
        );
        let nested = "---\nmetadata:\n  a:\n    b: [1, {c: d}]\n---\n";
        assert!(Document::parse(nested).is_ok());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn yamlish() -> impl Strategy<Value = String> {
            let pieces = prop_oneof![
                "[a-z]{1,3}: ",
                Just("\n".to_string()),
                Just("  ".to_string()),
                Just("- ".to_string()),
                Just("&a ".to_string()),
                Just("*a".to_string()),
                Just("[".to_string()),
                Just("]".to_string()),
                Just("{".to_string()),
                Just("}".to_string()),
                Just(", ".to_string()),
                Just("'".to_string()),
                Just("\"".to_string()),
                Just("!!binary ".to_string()),
                Just("? ".to_string()),
                Just("|\n".to_string()),
                Just("é日🎉".to_string()),
                Just("---\n".to_string()),
                any::<String>(),
            ];
            prop::collection::vec(pieces, 0..40).prop_map(|parts| parts.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Any frontmatter gives a document or an error in words, never a panic.
            #[test]
            fn any_frontmatter_is_a_value_or_an_error(yaml in yamlish(), body in ".{0,20}") {
                let text = format!("---\n{yaml}\n---\n{body}");
                if let Ok(doc) = Document::parse(&text) {
                    for field in ["name", "description", "argument-hint"] {
                        let _ = doc.text(field);
                    }
                }
            }
        }
    }

    #[test]
    fn an_argument_hint_in_brackets_is_text() {
        for (line, expected) in [
            (
                "argument-hint: [pr-number] [priority] [assignee]",
                "[pr-number] [priority] [assignee]",
            ),
            ("argument-hint: [file]", "[file]"),
            ("argument-hint: <file> [it's]", "<file> [it's]"),
            ("argument-hint: [it's] x", "[it's] x"),
        ] {
            let doc = Document::parse(&format!(
                "---\ndescription: d\n{line}\n---\nbody\nargument-hint: [x] y\n"
            ))
            .unwrap();
            assert_eq!(
                doc.text("argument-hint").unwrap().as_deref(),
                Some(expected),
                "{line}"
            );
            assert!(doc.body.contains("argument-hint: [x] y"));
        }
    }

    #[test]
    fn a_later_rule_line_stays_in_the_body() {
        let doc = Document::parse("---\ndescription: d\n---\nabove\n---\nbelow\n").unwrap();
        assert_eq!(doc.body.trim(), "above\n---\nbelow");
    }
}
