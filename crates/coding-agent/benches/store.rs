//! The session store with 10,000-entry sessions, against serde_json alone on the same entries
//! (the baseline: the encoding work every store must do anyway). Appends are one transaction
//! each, as in real use. The database sits under the target folder, on a real disk.
//! Run with `cargo bench -p coding-agent --bench store`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::path::Path;

use coding_agent::store::SessionStore;
use elph_agent::harness::Entry;
use elph_agent::messages::{ContentBlock, Message, ToolCall};
use serde_json::json;

const ENTRIES: usize = 10_000;

fn main() {
    divan::main();
}

/// A turn-shaped mix: prompt, tool call, tool output (~1.5 KB), answer; a summary every 1,000.
fn entry(n: usize) -> Entry {
    if n % 1_000 == 999 {
        return Entry::Summary {
            summary: "The story so far. ".repeat(40),
            entries_compacted: n as u64,
            first_kept: n - 10,
        };
    }
    let message = match n % 4 {
        0 => Message::user(format!(
            "Please look at src/module_{n}.rs and fix the failing test in it."
        )),
        1 => Message::assistant(
            "Let me look at the file first.",
            vec![ToolCall {
                id: format!("call_{n}"),
                name: "read_file".into(),
                input: json!({"path": format!("src/module_{n}.rs")}),
            }],
        ),
        2 => Message::tool_result(
            format!("call_{n}"),
            vec![ContentBlock::text("fn main() {}\n".repeat(120))],
            false,
        ),
        _ => Message::assistant(
            "The test failed because the fixture path was wrong; fixed it. ".repeat(4),
            vec![],
        ),
    };
    Entry::Message { message }
}

fn entries() -> Vec<Entry> {
    (0..ENTRIES).map(entry).collect()
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn store_with(dir: &Path, entries: &[Entry]) -> SessionStore {
    let store = SessionStore::open(dir).unwrap();
    store
        .create_session("bench", Path::new("/project"), "scripted/bench.json")
        .unwrap();
    for entry in entries {
        store.append("bench", entry).unwrap();
    }
    store
}

#[divan::bench(sample_count = 20)]
fn baseline_serialize_10k_entries(bencher: divan::Bencher) {
    let entries = entries();
    bencher.bench(|| {
        let mut out = Vec::new();
        for entry in &entries {
            serde_json::to_writer(&mut out, entry).unwrap();
            out.push(b'\n');
        }
        out
    });
}

#[divan::bench(sample_count = 20)]
fn baseline_deserialize_10k_entries(bencher: divan::Bencher) {
    let lines: Vec<String> = entries()
        .iter()
        .map(|entry| serde_json::to_string(entry).unwrap())
        .collect();
    bencher.bench(|| {
        lines
            .iter()
            .map(|line| serde_json::from_str::<Entry>(line).unwrap())
            .collect::<Vec<_>>()
    });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_10k_entries_one_transaction_each(bencher: divan::Bencher) {
    let entries = entries();
    bencher
        .with_inputs(|| {
            let dir = temp_dir();
            let store = store_with(dir.path(), &[]);
            (dir, store)
        })
        .bench_local_values(|(dir, store)| {
            for entry in &entries {
                store.append("bench", entry).unwrap();
            }
            (dir, store)
        });
}

#[divan::bench(sample_count = 20)]
fn load_10k_entry_session(bencher: divan::Bencher) {
    let dir = temp_dir();
    let store = store_with(dir.path(), &entries());
    bencher.bench(|| store.load_entries("bench").unwrap());
}

#[divan::bench(sample_count = 20)]
fn list_and_last_session_beside_a_10k_entry_session(bencher: divan::Bencher) {
    let dir = temp_dir();
    let store = store_with(dir.path(), &entries());
    for n in 0..100 {
        let id = format!("other-{n}");
        store
            .create_session(&id, Path::new("/project"), "scripted/bench.json")
            .unwrap();
        store.append(&id, &entry(0)).unwrap();
    }
    bencher.bench(|| {
        let last = store.last_session(Path::new("/project")).unwrap();
        (last, store.list(Path::new("/project")).unwrap())
    });
}
