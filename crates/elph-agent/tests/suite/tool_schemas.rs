//! What the model sees of each native tool's input: its JSON Schema, serialized, byte for byte.
//! The schemas are generated from the tools' argument types (`tools::schema`); the files in
//! `tests/tool_schemas/` were captured from the hand-written schemas they replaced, so a change to
//! an argument type, a doc comment or the generator's settings that changes what the model sees
//! fails here. Regenerate on purpose with `ELPH_UPDATE_TOOL_SCHEMAS=1`.

use std::path::PathBuf;

use elph_agent::tools::native;

fn assert_schema_unchanged(tool: &str) {
    let tool = native::all()
        .into_iter()
        .find(|candidate| candidate.name() == tool)
        .expect("a native tool of that name");
    let mut generated = serde_json::to_string_pretty(&tool.input_schema()).unwrap();
    generated.push('\n');
    let file: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "tool_schemas"]
        .iter()
        .collect::<PathBuf>()
        .join(format!("{}.json", tool.name()));
    if std::env::var_os("ELPH_UPDATE_TOOL_SCHEMAS").is_some() {
        std::fs::write(&file, &generated).unwrap();
    }
    let expected = std::fs::read_to_string(&file).unwrap();
    pretty_assertions::assert_eq!(generated, expected, "{}", tool.name());
}

macro_rules! schema_tests {
    ($($test:ident: $tool:literal,)*) => {$(
        #[test]
        fn $test() {
            assert_schema_unchanged($tool);
        }
    )*};
}

schema_tests! {
    read_file_schema_is_what_the_model_always_saw: "read_file",
    write_file_schema_is_what_the_model_always_saw: "write_file",
    edit_file_schema_is_what_the_model_always_saw: "edit_file",
    list_dir_schema_is_what_the_model_always_saw: "list_dir",
    find_path_schema_is_what_the_model_always_saw: "find_path",
    grep_schema_is_what_the_model_always_saw: "grep",
    shell_exec_schema_is_what_the_model_always_saw: "shell_exec",
}

#[test]
fn every_native_tool_has_its_schema_test() {
    let tested = [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "find_path",
        "grep",
        "shell_exec",
    ];
    let mut names: Vec<String> = native::all().iter().map(|tool| tool.name().to_string()).collect();
    names.sort();
    let mut tested: Vec<String> = tested.iter().map(|name| name.to_string()).collect();
    tested.sort();
    assert_eq!(names, tested);
}
