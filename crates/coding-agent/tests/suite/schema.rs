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
