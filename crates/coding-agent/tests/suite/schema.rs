//! The committed schema is exactly what the Rust types generate.

use coding_agent::hooks::config::generated_schema_text;

#[test]
fn committed_schema_equals_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/hooks-schema.json");
    let generated = generated_schema_text();
    if std::env::var_os("ELPH_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/hooks-schema.json is out of date with the Rust types; regenerate it with\n  ELPH_UPDATE_SCHEMA=1 cargo test -p coding-agent committed_schema"
    );
}

#[test]
fn committed_mcp_schema_equals_the_generated_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/mcp-schema.json");
    let generated = coding_agent::mcp::file::generated_schema_text();
    if std::env::var_os("ELPH_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/mcp-schema.json is out of date with the Rust types; regenerate it with\n  ELPH_UPDATE_SCHEMA=1 cargo test -p coding-agent committed_mcp_schema"
    );
}

#[test]
fn the_mcp_example_of_the_docs_validates_against_the_published_schema() {
    let docs =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md"))
            .unwrap();
    let schema = coding_agent::mcp::file::generated_schema();
    let validator = elph_agent::json_schema::Validator::new(&schema).unwrap();
    let mut checked = 0;
    for block in docs.split("```json\n").skip(1) {
        let text = &block[..block.find("```").unwrap()];
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        if value.get("mcpServers").is_some() || value.get("servers").is_some() {
            let errors: Vec<String> = validator
                .violations(&value)
                .into_iter()
                .map(|v| v.message)
                .collect();
            assert!(errors.is_empty(), "{text}: {errors:?}");
            checked += 1;
        }
    }
    assert!(checked >= 1);
    let bad = serde_json::json!({"mcpServers": {"a": {"type": "websocket", "command": "x"}}});
    assert!(!validator.is_valid(&bad));
}
