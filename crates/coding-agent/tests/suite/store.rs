//! The session store against real SQLite files in temp dirs: round trips, ordering, two
//! connections writing at once, and what survives a dropped store, a SIGKILL and a damaged file.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

use coding_agent::store::{
    DB_FILE, SessionInfo, SessionSink, SessionStore, StoreError, TITLE_CHARS, format_sessions, new_session_id,
};
use elph_agent::harness::{Entry, Transcript, TranscriptSink};
use elph_agent::messages::{ContentBlock, Message, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;
use time::macros::datetime;

const MODEL: &str = "scripted/demo.json";

fn store_in(dir: &Path) -> SessionStore {
    SessionStore::open(dir).expect("open the store")
}

fn user(text: &str) -> Entry {
    Entry::Message {
        message: Message::user(text),
    }
}

/// A realistic conversation: prompt, tool call, tool result (error, with an image), a summary.
fn conversation() -> Vec<Entry> {
    vec![
        user("List the files, please"),
        Entry::Message {
            message: Message::assistant(
                "Looking.",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "shell_exec".into(),
                    input: json!({"command": "ls"}),
                }],
            ),
        },
        Entry::Message {
            message: Message::tool_result(
                "call_1",
                vec![
                    ContentBlock::text("ls: permission denied"),
                    ContentBlock::Image {
                        data: "AAAA".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                true,
            ),
        },
        Entry::Summary {
            summary: "The user asked for a listing; ls failed.".into(),
            entries_compacted: 3,
            first_kept: 2,
        },
        user("Try again with sudo"),
        Entry::Message {
            message: Message::assistant("No — I will not use sudo.", vec![]),
        },
    ]
}

/// The `n`th entry the SIGKILL and concurrency tests write: big enough to span several pages.
fn numbered(n: usize) -> Entry {
    Entry::Message {
        message: Message::tool_result(
            format!("call_{n}"),
            vec![ContentBlock::text(format!("{n}:{}", "x".repeat(6_000)))],
            false,
        ),
    }
}

#[test]
fn create_append_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s1", Path::new("/proj"), MODEL).unwrap();
    let entries = conversation();
    for (index, entry) in entries.iter().enumerate() {
        assert_eq!(
            store.append("s1", entry).unwrap(),
            index as u64,
            "seq is the transcript index"
        );
    }
    assert_eq!(store.load_entries("s1").unwrap(), entries);

    let info = store.session("s1").unwrap().expect("the session exists");
    assert_eq!(info.id, "s1");
    assert_eq!(info.project_dir, Path::new("/proj"));
    assert_eq!(info.model, MODEL);
    assert_eq!(
        info.title.as_deref(),
        Some("List the files, please"),
        "the first user prompt"
    );
    assert_eq!(info.entry_count, entries.len() as u64);
    assert!(info.updated_at >= info.created_at);
}

#[test]
fn entries_are_stored_with_their_kind_and_json_body() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s1", Path::new("/proj"), MODEL).unwrap();
    for entry in conversation() {
        store.append("s1", &entry).unwrap();
    }
    drop(store);
    let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
    let rows: Vec<(i64, String, String)> = conn
        .prepare("SELECT seq, kind, body FROM entries WHERE session_id = 's1' ORDER BY seq")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let kinds: Vec<&str> = rows.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["message", "message", "message", "summary", "message", "message"]
    );
    assert_eq!(
        rows.iter().map(|(seq, ..)| *seq).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    let summary: serde_json::Value = serde_json::from_str(&rows[3].2).unwrap();
    assert_eq!(
        summary,
        json!({"kind": "summary", "summary": "The user asked for a listing; ls failed.", "entriesCompacted": 3, "firstKept": 2})
    );
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, coding_agent::store::SCHEMA_VERSION);
}

#[test]
fn title_is_the_first_user_prompt_on_one_short_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s", Path::new("/p"), MODEL).unwrap();
    assert_eq!(store.session("s").unwrap().unwrap().title, None);
    store
        .append(
            "s",
            &Entry::Message {
                message: Message::assistant("hello", vec![]),
            },
        )
        .unwrap();
    store
        .append(
            "s",
            &Entry::Summary {
                summary: "x".into(),
                entries_compacted: 1,
                first_kept: 1,
            },
        )
        .unwrap();
    assert_eq!(
        store.session("s").unwrap().unwrap().title,
        None,
        "only a user message names a session"
    );

    let prompt = format!("Fix the\n\tbuild\x1b[2J {}", "and everything else ".repeat(10));
    store.append("s", &user(&prompt)).unwrap();
    store.append("s", &user("a later prompt")).unwrap();
    let title = store.session("s").unwrap().unwrap().title.unwrap();
    assert!(
        title.starts_with("Fix the build [2J and everything else"),
        "{title}"
    );
    assert_eq!(title.chars().count(), TITLE_CHARS);
    assert!(title.ends_with('…'));
}

#[test]
fn last_session_is_the_newest_of_the_project_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let (here, elsewhere) = (Path::new("/work/here"), Path::new("/work/elsewhere"));
    assert_eq!(store.last_session(here).unwrap(), None);

    store.create_session("a", here, MODEL).unwrap();
    store.create_session("b", here, MODEL).unwrap();
    assert_eq!(
        store.last_session(here).unwrap().unwrap().id,
        "b",
        "the newer session"
    );
    store.append("a", &user("back to a")).unwrap();
    assert_eq!(
        store.last_session(here).unwrap().unwrap().id,
        "a",
        "the most recently updated one"
    );

    store.create_session("other", elsewhere, MODEL).unwrap();
    store.append("other", &user("elsewhere")).unwrap();
    assert_eq!(
        store.last_session(here).unwrap().unwrap().id,
        "a",
        "other projects are ignored"
    );
    assert_eq!(store.last_session(elsewhere).unwrap().unwrap().id, "other");
    assert_eq!(
        store.last_session(Path::new("/work")).unwrap(),
        None,
        "no prefix matching"
    );

    // Many quick alternating writes: the order stays exact even within one clock tick.
    for round in 0..50 {
        let id = if round % 2 == 0 { "b" } else { "a" };
        store.append(id, &user("again")).unwrap();
        assert_eq!(store.last_session(here).unwrap().unwrap().id, id);
    }
}

#[test]
fn list_is_newest_first_with_counts_and_camel_case_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let project = Path::new("/proj");
    for (id, prompts) in [("one", 1), ("two", 3), ("three", 2)] {
        store.create_session(id, project, MODEL).unwrap();
        for i in 0..prompts {
            store.append(id, &user(&format!("{id} prompt {i}"))).unwrap();
        }
    }
    store
        .create_session("not-listed", Path::new("/other"), MODEL)
        .unwrap();
    store.append("two", &user("latest")).unwrap();

    let sessions = store.list(project).unwrap();
    let summary: Vec<(&str, u64)> = sessions.iter().map(|s| (s.id.as_str(), s.entry_count)).collect();
    assert_eq!(summary, [("two", 4), ("three", 2), ("one", 1)]);
    assert_eq!(sessions[0].title.as_deref(), Some("two prompt 0"));

    let value = serde_json::to_value(&sessions[0]).unwrap();
    let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "projectDir",
            "createdAt",
            "updatedAt",
            "model",
            "title",
            "entryCount"
        ]
    );
    assert_eq!(value["projectDir"], "/proj");
    assert_eq!(value["entryCount"], 4);
    let updated = value["updatedAt"].as_str().unwrap();
    assert!(
        updated.ends_with('Z') && updated.contains('T'),
        "RFC 3339 in UTC: {updated}"
    );
}

#[test]
fn unknown_and_duplicate_sessions_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    assert_eq!(store.session("nope").unwrap(), None);
    let error = store.append("nope", &user("hi")).unwrap_err();
    assert!(matches!(error, StoreError::NoSuchSession { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("nope") && message.contains(DB_FILE), "{message}");
    assert!(matches!(
        store.load_entries("nope"),
        Err(StoreError::NoSuchSession { .. })
    ));

    store.create_session("s", Path::new("/p"), MODEL).unwrap();
    let error = store
        .create_session("s", Path::new("/p"), "openai/gpt")
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionExists { .. }), "{error:?}");
    assert_eq!(
        store.session("s").unwrap().unwrap().model,
        MODEL,
        "the first session is untouched"
    );
    assert_eq!(store.load_entries("s").unwrap(), []);

    store.set_model("s", "anthropic/claude").unwrap();
    assert_eq!(store.session("s").unwrap().unwrap().model, "anthropic/claude");
    assert!(matches!(
        store.set_model("nope", "x"),
        Err(StoreError::NoSuchSession { .. })
    ));
}

#[test]
fn the_database_lives_in_data_dir_in_wal_mode_and_private() {
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("deep").join("data");
    let store = store_in(&data_dir);
    assert_eq!(store.path(), data_dir.join(DB_FILE));
    assert!(store.path().is_file());
    let conn = rusqlite::Connection::open(store.path()).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data_dir), 0o700);
        assert_eq!(mode(store.path()), 0o600);
    }
}

#[test]
fn store_and_sink_are_shareable() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<SessionStore>();
    shareable::<SessionSink>();
}

#[test]
fn the_sink_persists_a_transcript_and_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(store_in(dir.path()));
    let id = new_session_id();
    assert_eq!(id.len(), 36);
    store.create_session(&id, Path::new("/p"), MODEL).unwrap();

    let mut transcript = Transcript::new().with_sink(Arc::new(SessionSink::new(Arc::clone(&store), &id)));
    for entry in conversation() {
        transcript.push(entry).unwrap();
    }
    drop(transcript);

    let mut resumed = store.transcript(&id).unwrap();
    assert_eq!(resumed.entries(), conversation());
    resumed.push_message(Message::user("one more")).unwrap();
    assert_eq!(store.load_entries(&id).unwrap().len(), conversation().len() + 1);

    let orphan = SessionSink::new(Arc::clone(&store), "missing");
    let error = orphan.append(&user("lost")).unwrap_err();
    assert!(
        error.contains("missing"),
        "the sink's error names the session: {error}"
    );
}

/// Two connections, as two `elph` processes on one DATA_DIR would have, writing at the same time.
#[test]
fn two_connections_appending_concurrently_keep_everything() {
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let stores = [Arc::new(store_in(dir.path())), Arc::new(store_in(dir.path()))];
    stores[0].create_session("left", Path::new("/p"), MODEL).unwrap();
    stores[1].create_session("right", Path::new("/p"), MODEL).unwrap();
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = [(0, "left"), (1, "right"), (0, "shared"), (1, "shared")]
        .into_iter()
        .enumerate()
        .map(|(thread, (store, session))| {
            let store = Arc::clone(&stores[store]);
            let start = Arc::clone(&start);
            if thread == 2 {
                store.create_session("shared", Path::new("/p"), MODEL).unwrap();
            }
            std::thread::spawn(move || {
                start.wait();
                for n in 0..EACH {
                    store.append(session, &numbered(thread * 10_000 + n)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("no append failed");
    }

    let check = store_in(dir.path());
    let expected: Vec<Vec<Entry>> = (0..4)
        .map(|thread| (0..EACH).map(|n| numbered(thread * 10_000 + n)).collect())
        .collect();
    assert_eq!(check.load_entries("left").unwrap(), expected[0]);
    assert_eq!(check.load_entries("right").unwrap(), expected[1]);
    // Both connections wrote the shared session: every entry once, each writer's in its order.
    let shared = check.load_entries("shared").unwrap();
    assert_eq!(shared.len(), 2 * EACH);
    for thread in [2, 3] {
        let mine: Vec<&Entry> = shared
            .iter()
            .filter(|entry| expected[thread].contains(entry))
            .collect();
        assert_eq!(mine, expected[thread].iter().collect::<Vec<_>>());
    }
    assert_eq!(
        check.session("shared").unwrap().unwrap().entry_count,
        2 * EACH as u64
    );
}

/// Stores opened at the same moment on a new DATA_DIR, each closing (and so checkpointing under an
/// exclusive lock) as soon as its session is written, while the others are still opening. SQLite
/// answers the switch to WAL with "database is locked" at once, without waiting, while another
/// connection holds the file; every open must still succeed. Rounds on fresh folders, because the
/// race is lost only when the opens line up.
#[test]
fn stores_opened_together_on_a_new_folder_all_open() {
    const OPENERS: usize = 6;
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = Arc::new(dir.path().join("data"));
        let start = Arc::new(Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|n| {
                let (data_dir, start) = (Arc::clone(&data_dir), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    let store = SessionStore::open(&data_dir)?;
                    store.create_session(&format!("s-{n}"), Path::new("/project"), MODEL)?;
                    Ok::<_, StoreError>(())
                })
            })
            .collect();
        for (n, opener) in openers.into_iter().enumerate() {
            if let Err(error) = opener.join().unwrap() {
                panic!("round {round}: opener {n} failed: {error}");
            }
        }
        assert_eq!(
            store_in(&data_dir).list(Path::new("/project")).unwrap().len(),
            OPENERS
        );
    }
}

#[test]
fn a_store_dropped_without_closing_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s", Path::new("/p"), MODEL).unwrap();
    for entry in conversation() {
        store.append("s", &entry).unwrap();
    }
    // Never closed and never checkpointed: the entries are only in the WAL file.
    std::mem::forget(store);
    assert!(dir.path().join(format!("{DB_FILE}-wal")).exists());

    let reopened = store_in(dir.path());
    assert_eq!(reopened.load_entries("s").unwrap(), conversation());
    assert_eq!(
        reopened
            .last_session(Path::new("/p"))
            .unwrap()
            .unwrap()
            .entry_count,
        6
    );
}

#[test]
fn the_wal_file_is_kept_at_close_and_everything_is_in_the_main_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s", Path::new("/p"), MODEL).unwrap();
    for entry in conversation() {
        store.append("s", &entry).unwrap();
    }
    drop(store);
    // Kept, so the next `elph` does not create it again (SQLite would fsync the folder before the
    // first model request).
    let wal = dir.path().join(format!("{DB_FILE}-wal"));
    assert!(wal.is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&wal).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Checkpointed at close all the same: the main file alone holds every entry.
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(dir.path().join(DB_FILE), copy.path().join(DB_FILE)).unwrap();
    let alone = store_in(copy.path());
    assert_eq!(alone.load_entries("s").unwrap(), conversation());
    // And the kept file is read correctly by the next run, which appends to it.
    let next = store_in(dir.path());
    assert_eq!(next.load_entries("s").unwrap(), conversation());
    next.append("s", &numbered(99)).unwrap();
    drop(next);
    let mut expected = conversation();
    expected.push(numbered(99));
    assert_eq!(store_in(dir.path()).load_entries("s").unwrap(), expected);
}

const KILL_CHILD_ENV: &str = "ELPH_STORE_TEST_KILL_CHILD";
const KILL_SESSION: &str = "killed";

/// Not a test on its own: the child process of `sigkill_mid_append_loses_nothing_committed`.
/// With the env var set it appends numbered entries forever, printing each committed seq.
#[test]
fn sigkill_child_appender() {
    let Some(data_dir) = std::env::var_os(KILL_CHILD_ENV) else {
        return;
    };
    let store = store_in(Path::new(&data_dir));
    let start = match store.session(KILL_SESSION).unwrap() {
        Some(info) => info.entry_count as usize,
        None => {
            store
                .create_session(KILL_SESSION, Path::new("/p"), MODEL)
                .unwrap();
            0
        }
    };
    let mut out = std::io::stdout().lock();
    for n in start.. {
        let seq = store.append(KILL_SESSION, &numbered(n)).unwrap();
        assert_eq!(seq, n as u64);
        writeln!(out, "committed {seq}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_mid_append_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let mut committed = 0;
    // Three children in turn, each killed at a different point while appending to one session.
    for (round, kill_after) in [40, 75, 130].into_iter().enumerate() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "suite::store::sigkill_child_appender",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(KILL_CHILD_ENV, dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (lines, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest's own "test … ... " may share the first line.
                if let Some((_, seq)) = line.rsplit_once("committed ")
                    && lines.send(seq.parse::<usize>().unwrap()).is_err()
                {
                    break;
                }
            }
        });
        let mut reported = Vec::new();
        while reported.len() < kill_after {
            match seen.recv_timeout(Duration::from_secs(60)) {
                Ok(seq) => reported.push(seq),
                Err(error) => {
                    let _ = child.kill();
                    panic!("round {round}: the child stopped reporting ({error})");
                }
            }
        }
        child.kill().unwrap(); // SIGKILL, while it keeps appending
        let status = child.wait().unwrap();
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{status}"
        );
        assert_eq!(
            reported[0], committed,
            "round {round}: the child went on from the last entry"
        );
        let last_reported = *reported.last().unwrap();

        // Reopen without any repair step.
        let store = store_in(dir.path());
        let entries = store.load_entries(KILL_SESSION).unwrap();
        assert!(
            entries.len() > last_reported,
            "round {round}: {} <= {last_reported}",
            entries.len()
        );
        for (n, entry) in entries.iter().enumerate() {
            assert_eq!(entry, &numbered(n), "round {round}: entry {n}");
        }
        store.integrity_check().unwrap();
        drop(store);
        let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        committed = entries.len();
    }
}

fn assert_names_path_and_says_move(error: &StoreError, db: &Path) {
    assert!(error.is_corrupt(), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&db.display().to_string()), "{message}");
    assert!(message.contains("move it away"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_is_reported_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(DB_FILE);
    let junk = "this is not an SQLite database, just text\n".repeat(200);
    std::fs::write(&db, &junk).unwrap();

    let error = SessionStore::open(dir.path()).unwrap_err();
    assert_names_path_and_says_move(&error, &db);
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        junk,
        "the file is left as it was"
    );
}

#[test]
fn damaged_pages_are_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    store.create_session("s", Path::new("/p"), MODEL).unwrap();
    for n in 0..50 {
        store.append("s", &numbered(n)).unwrap();
    }
    drop(store); // the last connection closes: checkpointed into the main file
    // The -wal file is kept between runs and still holds copies of the pages, which SQLite would
    // read instead of the main file's: remove it (and its index), so the damaged file is read.
    for kept in ["-wal", "-shm"] {
        std::fs::remove_file(dir.path().join(format!("{DB_FILE}{kept}"))).unwrap();
    }
    let db = dir.path().join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8 * 4096);
    bytes[4096..].fill(0x55); // every page but the first (the header and the schema)
    std::fs::write(&db, &bytes).unwrap();

    let error = SessionStore::open(dir.path())
        .and_then(|store| store.load_entries("s").map(drop))
        .unwrap_err();
    assert_names_path_and_says_move(&error, &db);
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(store_in(dir.path()));
    let db = dir.path().join(DB_FILE);
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let error = SessionStore::open(dir.path()).unwrap_err();
    assert!(matches!(error, StoreError::TooNew { found: 99, .. }), "{error:?}");
    assert!(error.to_string().contains(&db.display().to_string()));
}

#[test]
fn sessions_table_for_people() {
    let now = datetime!(2025-06-10 12:00 UTC);
    let session = |id: &str, minutes: i64, entries: u64, title: Option<&str>| SessionInfo {
        id: id.into(),
        project_dir: "/p".into(),
        created_at: now - time::Duration::days(1),
        updated_at: now - time::Duration::minutes(minutes),
        model: MODEL.into(),
        title: title.map(String::from),
        entry_count: entries,
    };
    let table = format_sessions(
        &[
            session(
                "0197a1b2-0000-7000-8000-000000000001",
                3,
                12,
                Some("Fix the build"),
            ),
            session("0197a1b2-0000-7000-8000-000000000000", 60 * 30, 140, None),
        ],
        now,
    );
    assert_eq!(
        table,
        "\
ID                                    UPDATED    ENTRIES  TITLE
0197a1b2-0000-7000-8000-000000000001  3 min ago       12  Fix the build
0197a1b2-0000-7000-8000-000000000000  1 day ago      140  (no prompt yet)
"
    );
    assert_eq!(format_sessions(&[], now), "No sessions for this project yet.\n");
}
