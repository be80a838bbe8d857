//! What a project's `.elph/` holds, read without trusting it (nothing runs, nothing is written):
//! for the trust question ("its .elph/ holds 2 hooks and 1 MCP server") and for the notices that
//! name the hooks left off while the project is not trusted.

use std::path::Path;

use elph_agent::hooks::HookEvent;

use crate::hooks::HookScope;
use crate::hooks::discovery::FileLoad;
use crate::mcp::config::McpScope;
use crate::paths::Paths;

/// One hook of the project's `.elph/hooks.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectHook {
    pub id: String,
    pub event: HookEvent,
    pub enabled: bool,
}

/// What one of the project's files holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listing<T> {
    /// The file does not exist.
    Absent,
    /// It exists but does not load (why).
    Unreadable(String),
    Items(Vec<T>),
}

impl<T> Listing<T> {
    fn count(&self) -> usize {
        match self {
            Listing::Items(items) => items.len(),
            _ => 0,
        }
    }
}

/// The project's hooks, MCP servers, skills and prompt templates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectContents {
    pub hooks: Listing<ProjectHook>,
    /// Server names of `.elph/mcp.json`.
    pub mcp_servers: Listing<String>,
    /// Server names of `.mcp.json` at the project's root (read like `.elph/mcp.json`).
    pub root_mcp_servers: Listing<String>,
    pub skills: usize,
    pub templates: usize,
    /// What trusting cannot pin (files its hooks and servers load at run time), in words.
    pub not_pinned: Vec<String>,
}

impl ProjectContents {
    /// Reads the project's `.elph/hooks.json` and `.elph/mcp.json` (bounded, non-blocking reads, as
    /// every config read) and counts its skills and templates.
    pub fn survey(paths: &Paths) -> ProjectContents {
        let [elph_file, root_file] = crate::mcp::config::project_files(paths);
        let elph = paths.project_dir.join(".elph");
        ProjectContents {
            hooks: project_hooks(paths),
            mcp_servers: mcp_servers(paths, &elph_file),
            root_mcp_servers: mcp_servers(paths, &root_file),
            skills: count_entries(&elph.join("skills"), |entry| {
                entry.is_dir() && entry.join("SKILL.md").exists()
            }),
            templates: count_entries(&elph.join("prompts"), |entry| {
                entry.extension().and_then(|e| e.to_str()) == Some("md")
            }),
            not_pinned: super::pins::not_pinned(&paths.project_dir),
        }
    }

    /// Whether there is nothing in `.elph/` that trusting would load.
    pub fn is_empty(&self) -> bool {
        matches!(self.hooks, Listing::Absent)
            && matches!(self.mcp_servers, Listing::Absent)
            && matches!(self.root_mcp_servers, Listing::Absent)
            && self.skills == 0
            && self.templates == 0
    }

    /// One sentence: `Its .elph/ holds 2 hooks, 1 MCP server and no skills or prompt templates.`,
    /// or that it holds none of them.
    /// A `.mcp.json` at the root adds `Its .mcp.json names 1 MCP server.`
    pub fn sentence(&self) -> String {
        let root = match &self.root_mcp_servers {
            Listing::Absent => String::new(),
            Listing::Unreadable(_) => " Its .mcp.json does not load.".to_string(),
            Listing::Items(servers) if servers.len() == 1 => " Its .mcp.json names 1 MCP server.".to_string(),
            Listing::Items(servers) => format!(" Its .mcp.json names {} MCP servers.", servers.len()),
        };
        self.elph_sentence() + &root
    }

    fn elph_sentence(&self) -> String {
        if matches!(self.hooks, Listing::Absent)
            && matches!(self.mcp_servers, Listing::Absent)
            && self.skills == 0
            && self.templates == 0
        {
            return "Its .elph/ holds no hooks, MCP servers, skills or prompt templates.".to_string();
        }
        let mut held = Vec::new();
        let mut none = Vec::new();
        match &self.hooks {
            Listing::Unreadable(_) => held.push("a .elph/hooks.json that does not load".to_string()),
            listing => counted(listing.count(), "hook", "hooks", &mut held, &mut none),
        }
        match &self.mcp_servers {
            Listing::Unreadable(_) => held.push("a .elph/mcp.json that does not load".to_string()),
            listing => counted(listing.count(), "MCP server", "MCP servers", &mut held, &mut none),
        }
        counted(self.skills, "skill", "skills", &mut held, &mut none);
        counted(
            self.templates,
            "prompt template",
            "prompt templates",
            &mut held,
            &mut none,
        );
        let mut sentence = format!("Its .elph/ holds {}", join_and(&held));
        if !none.is_empty() {
            sentence.push_str(&format!(" (no {})", join_or(&none)));
        }
        sentence.push('.');
        sentence
    }

    /// The project's enabled hooks, as `id (event)`: what is off while it is not trusted.
    pub fn enabled_hooks(&self) -> Vec<String> {
        self.hooks.enabled()
    }
}

impl Listing<ProjectHook> {
    /// The enabled hooks, as `id (event)`.
    pub(crate) fn enabled(&self) -> Vec<String> {
        match self {
            Listing::Items(hooks) => hooks
                .iter()
                .filter(|hook| hook.enabled)
                .map(|hook| format!("{} ({})", hook.id, hook.event))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The hooks of the project's `.elph/hooks.json`, read without trusting it.
pub(crate) fn project_hooks(paths: &Paths) -> Listing<ProjectHook> {
    match FileLoad::read(paths.project_hooks_file(), HookScope::Project).result {
        Ok(None) => Listing::Absent,
        Ok(Some(file)) => Listing::Items(
            file.hooks
                .into_iter()
                .map(|hook| ProjectHook {
                    id: hook.id,
                    event: hook.event,
                    enabled: hook.enabled,
                })
                .collect(),
        ),
        Err(error) => Listing::Unreadable(error.message),
    }
}

/// The server names of the project's MCP `file`, read without trusting it.
pub(crate) fn mcp_servers(paths: &Paths, file: &Path) -> Listing<String> {
    let path_var = std::env::var("PATH").unwrap_or_default();
    // Variables stand for empty texts: a server is counted whatever its environment holds, and
    // nothing is asked.
    let inputs = crate::mcp::inputs::McpInputs::placeholders();
    let context = crate::mcp::config::Context {
        env: &|_| Some(String::new()),
        project_dir: &paths.project_dir,
        home: None,
        inputs: &inputs,
        path_var: &path_var,
    };
    match crate::mcp::config::read_file(file, McpScope::Project, &context) {
        Ok(None) => Listing::Absent,
        Ok(Some(parsed)) => Listing::Items(parsed.servers.into_iter().map(|server| server.name).collect()),
        Err(error) => Listing::Unreadable(error.message),
    }
}

fn counted(n: usize, one: &str, many: &str, held: &mut Vec<String>, none: &mut Vec<String>) {
    match n {
        0 => none.push(many.to_string()),
        1 => held.push(format!("1 {one}")),
        n => held.push(format!("{n} {many}")),
    }
}

fn join_and(items: &[String]) -> String {
    join(items, "and")
}

fn join_or(items: &[String]) -> String {
    join(items, "or")
}

fn join(items: &[String], word: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} {word} {last}", init.join(", ")),
    }
}

fn count_entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).filter(|e| keep(&e.path())).count())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(project: &Path) -> Paths {
        Paths {
            config_dir: project.join("config-unused"),
            data_dir: project.join("data-unused"),
            project_dir: project.to_path_buf(),
        }
    }

    #[test]
    fn an_empty_folder_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let contents = ProjectContents::survey(&paths(dir.path()));
        assert!(contents.is_empty());
        assert_eq!(
            contents.sentence(),
            "Its .elph/ holds no hooks, MCP servers, skills or prompt templates."
        );
        assert!(contents.enabled_hooks().is_empty());
    }

    #[test]
    fn hooks_servers_skills_and_templates_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let elph = dir.path().join(".elph");
        std::fs::create_dir_all(elph.join("skills/pdf")).unwrap();
        std::fs::create_dir_all(elph.join("skills/not-a-skill")).unwrap();
        std::fs::create_dir_all(elph.join("prompts")).unwrap();
        std::fs::write(elph.join("skills/pdf/SKILL.md"), "---\nname: pdf\n---\n").unwrap();
        std::fs::write(elph.join("prompts/review.md"), "Review").unwrap();
        std::fs::write(elph.join("prompts/notes.txt"), "not a template").unwrap();
        std::fs::write(
            elph.join("hooks.json"),
            r#"{"hooks": [
                {"id": "guard", "event": "preToolUse", "command": "/bin/true"},
                {"id": "audit", "event": "stop", "command": "/bin/true"},
                {"id": "off", "event": "stop", "command": "/bin/true", "enabled": false}
            ]}"#,
        )
        .unwrap();
        let contents = ProjectContents::survey(&paths(dir.path()));
        assert_eq!(
            contents.sentence(),
            "Its .elph/ holds 3 hooks, 1 skill and 1 prompt template (no MCP servers)."
        );
        assert_eq!(contents.enabled_hooks(), ["guard (preToolUse)", "audit (stop)"]);
        std::fs::write(
            elph.join("mcp.json"),
            r#"{"mcpServers": {"db": {"command": "/bin/true"}}}"#,
        )
        .unwrap();
        std::fs::write(elph.join("hooks.json"), "{oops").unwrap();
        let contents = ProjectContents::survey(&paths(dir.path()));
        assert_eq!(
            contents.sentence(),
            "Its .elph/ holds a .elph/hooks.json that does not load, 1 MCP server, 1 skill and 1 prompt template."
        );
    }
}
