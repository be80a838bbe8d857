//! Skills and prompt templates: the reusable workflows beside hooks and MCP. Both come from
//! CONFIG_DIR and the folders other agents keep them in (`~/.claude/`, `~/.agents/`) and, only when
//! the project is trusted, from the project's `.elph/`, `.claude/` and `.agents/`. See
//! docs/skills.md.

mod files;
mod frontmatter;
pub(crate) mod prompts;
pub(crate) mod skills;

use std::path::PathBuf;

use serde::Serialize;

pub use prompts::PromptTemplate;
pub use skills::Skill;

use crate::diagnostics::Diagnostic;
use crate::paths::Paths;

/// Where a skill or template comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// CONFIG_DIR: the user's own.
    User,
    /// `PROJECT/.elph/`: loaded only when the project is trusted.
    Project,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
        }
    }
}

/// The prefix of the command that puts a skill's body into the turn: `/skill:NAME`.
pub(crate) const SKILL_COMMAND_PREFIX: &str = "skill:";

/// The folders read, in order: of two skills (or templates) with one name, the first read is kept.
#[derive(Clone, Debug)]
pub struct Folders {
    pub(crate) user_skills: Vec<PathBuf>,
    pub(crate) user_prompts: Vec<PathBuf>,
    pub(crate) project_skills: Vec<PathBuf>,
    pub(crate) project_prompts: Vec<PathBuf>,
    pub project_dir: PathBuf,
}

impl Folders {
    /// Elph's folders first, then Claude Code's (`.claude/skills`, `.claude/commands`), then the
    /// cross-agent `.agents/skills` that Codex and Gemini CLI read.
    pub fn new(paths: &Paths) -> Folders {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute());
        let in_home = |parts: &[&str]| -> Option<PathBuf> {
            home.as_ref()
                .map(|home| parts.iter().fold(home.clone(), |path, part| path.join(part)))
        };
        let project = &paths.project_dir;
        Folders {
            user_skills: std::iter::once(paths.config_dir.join("skills"))
                .chain(in_home(&[".claude", "skills"]))
                .chain(in_home(&[".agents", "skills"]))
                .collect(),
            user_prompts: std::iter::once(paths.config_dir.join("prompts"))
                .chain(in_home(&[".claude", "commands"]))
                .collect(),
            project_skills: vec![
                project.join(".elph").join("skills"),
                project.join(".claude").join("skills"),
                project.join(".agents").join("skills"),
            ],
            project_prompts: vec![
                project.join(".elph").join("prompts"),
                project.join(".claude").join("commands"),
            ],
            project_dir: paths.project_dir.clone(),
        }
    }
}

/// Every skill and template that loaded, and what was wrong with the rest.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflows {
    pub skills: Vec<Skill>,
    pub prompts: Vec<PromptTemplate>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A command a front end offers for a template (`/NAME`) or a skill (`/skill:NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkflowCommand {
    /// The name after the `/`: `review`, `skill:pdf`.
    pub name: String,
    pub description: String,
    /// What to type after it: a template's `argument-hint`, or for a skill the request.
    pub hint: Option<String>,
}

/// A prompt after a workflow command in it was carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExpandedPrompt {
    /// What the model (and `userPromptSubmit` hooks) get; for a template with commands or file
    /// references, `parts` says what still has to be filled in.
    pub text: String,
    /// A template's text, commands and file references, when it has any of the last two: the
    /// session runs and reads them before the turn (see `session::template`).
    pub parts: Vec<prompts::Part>,
    /// The template's `allowed-tools`, to be reported.
    pub allowed_tools: Option<String>,
    /// The template used, if any.
    pub template: Option<String>,
    /// The skill put into the turn, if any.
    pub skill: Option<String>,
}

impl Workflows {
    /// The skills and templates for `paths`' project in its current trust state.
    pub(crate) fn for_project(paths: &Paths, project_trusted: bool) -> Workflows {
        Workflows::load(
            &Folders::new(paths),
            project_trusted,
            &crate::session::commands::is_builtin,
        )
    }

    /// Reads every folder. `reserved` says whether a name belongs to a built-in command.
    pub fn load(folders: &Folders, project_trusted: bool, reserved: &dyn Fn(&str) -> bool) -> Workflows {
        let mut diagnostics = Vec::new();
        let mut skills = Vec::new();
        let mut prompts = Vec::new();
        for folder in &folders.user_skills {
            let found = skills::load_dir(folder, Source::User, None, &mut diagnostics);
            add_skills(&mut skills, found, &mut diagnostics);
        }
        for folder in &folders.user_prompts {
            let found = prompts::load_dir(folder, Source::User, reserved, &mut diagnostics);
            add_prompts(&mut prompts, found, &mut diagnostics);
        }
        if project_trusted {
            for folder in &folders.project_skills {
                let found = skills::load_dir(
                    folder,
                    Source::Project,
                    Some(&folders.project_dir),
                    &mut diagnostics,
                );
                add_skills(&mut skills, found, &mut diagnostics);
            }
            for folder in &folders.project_prompts {
                let found = prompts::load_dir(folder, Source::Project, reserved, &mut diagnostics);
                add_prompts(&mut prompts, found, &mut diagnostics);
            }
        } else {
            let skill_folders = folders.project_skills.iter().map(|f| (f, "skills"));
            let prompt_folders = folders.project_prompts.iter().map(|f| (f, "prompt templates"));
            for (folder, what) in skill_folders.chain(prompt_folders) {
                let count = files::sorted_entries(folder).map(|e| e.len()).unwrap_or(0);
                if count > 0 {
                    diagnostics.push(
                        Diagnostic::new(format!(
                            "the project's {what} are skipped: the project is not trusted (run `elph trust` to use them)"
                        ))
                        .in_file(folder),
                    );
                }
            }
        }
        Workflows {
            skills,
            prompts,
            diagnostics,
        }
    }

    /// After a reload: a skill or template that loaded in `previous` and now fails to load keeps
    /// its previous version, and its diagnostic says so.
    pub(crate) fn keep_last_good(&mut self, previous: &Workflows) {
        for diagnostic in &mut self.diagnostics {
            let Some(file) = diagnostic.file.clone() else {
                continue;
            };
            let folder = file
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            let skill = previous.skills.iter().find(|s| {
                file.file_name().is_some_and(|n| n == skills::SKILL_FILE)
                    && folder.as_deref() == Some(s.name.as_str())
                    && !self.skills.iter().any(|now| now.name == s.name)
            });
            if let Some(skill) = skill {
                self.skills.push(skill.clone());
                diagnostic
                    .message
                    .push_str("; the version that loaded before stays in use until it is fixed");
                continue;
            }
            let template = previous
                .prompts
                .iter()
                .find(|p| p.file == file && !self.prompts.iter().any(|now| now.name == p.name));
            if let Some(template) = template {
                self.prompts.push(template.clone());
                diagnostic
                    .message
                    .push_str("; the version that loaded before stays in use until it is fixed");
            }
        }
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn template(&self, name: &str) -> Option<&PromptTemplate> {
        self.prompts.iter().find(|p| p.name == name)
    }

    /// The commands that stand for the templates, then the skills, for palettes and editors.
    pub fn commands(&self) -> Vec<WorkflowCommand> {
        let templates = self.prompts.iter().map(|template| WorkflowCommand {
            name: template.name.clone(),
            description: template.description.clone(),
            hint: template.argument_hint.clone(),
        });
        let skills = self.skills.iter().map(|skill| WorkflowCommand {
            name: format!("{SKILL_COMMAND_PREFIX}{}", skill.name),
            description: skill.description.clone(),
            hint: Some("what to do with the skill".to_string()),
        });
        templates.chain(skills).collect()
    }

    /// The section of the system prompt that lists the skills (empty when there are none): each
    /// name, description and the path of its `SKILL.md`, for the model to read when one applies.
    pub(crate) fn system_prompt_section(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\n\nSkills: folders of instructions for specific tasks. When a task matches a skill's \
             description, read its SKILL.md with read_file before you act, and the files it \
             mentions beside it. Reading skill folders needs no approval.\n<available_skills>\n",
        );
        for skill in &self.skills {
            out.push_str(&format!(
                "<skill>\n<name>{}</name>\n<description>{}</description>\n<location>{}</location>\n</skill>\n",
                escape_xml(&skill.name),
                escape_xml(&skill.description),
                escape_xml(&skill.file.display().to_string()),
            ));
        }
        out.push_str("</available_skills>");
        out
    }

    /// Carries out `/skill:NAME [text]` or `/TEMPLATE [args]`. `Ok(None)`: the prompt is no
    /// workflow command (built-in commands and ordinary text). An error names the unknown skill.
    pub(crate) fn expand(&self, prompt: &str) -> Result<Option<ExpandedPrompt>, String> {
        let Some(rest) = prompt.trim_start().strip_prefix('/') else {
            return Ok(None);
        };
        let (word, arguments) = match rest.split_once(char::is_whitespace) {
            Some((word, arguments)) => (word, arguments.trim()),
            None => (rest, ""),
        };
        if let Some(name) = word.strip_prefix(SKILL_COMMAND_PREFIX) {
            let skill = self.skill(name).ok_or_else(|| {
                let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
                if known.is_empty() {
                    format!("no skill named '{name}': no skills are loaded (see `elph skills list`)")
                } else {
                    format!("no skill named '{name}' (skills: {})", known.join(", "))
                }
            })?;
            let body = skill
                .body()
                .map_err(|error| format!("skill '{name}': {} {error}", skill.file.display()))?;
            let mut text = format!(
                "<skill name=\"{}\" location=\"{}\">\n{body}\n</skill>",
                escape_xml(&skill.name),
                escape_xml(&skill.file.display().to_string())
            );
            if !arguments.is_empty() {
                text.push_str("\n\n");
                text.push_str(arguments);
            }
            return Ok(Some(ExpandedPrompt {
                text,
                parts: Vec::new(),
                allowed_tools: None,
                template: None,
                skill: Some(skill.name.clone()),
            }));
        }
        Ok(self.template(word).map(|template| {
            let parts = template.expand_parts(arguments);
            let text = parts
                .iter()
                .map(|part| match part {
                    prompts::Part::Text(text) => text.clone(),
                    prompts::Part::Shell(command) => format!("!`{command}`"),
                    prompts::Part::File(path) => format!("@{path}"),
                })
                .collect();
            let plain = parts.iter().all(|part| matches!(part, prompts::Part::Text(_)));
            ExpandedPrompt {
                text,
                parts: if plain { Vec::new() } else { parts },
                allowed_tools: template.allowed_tools.clone(),
                template: Some(template.name.clone()),
                skill: None,
            }
        }))
    }
}

/// Adds skills found in one more folder: a name already taken keeps the first one (the same
/// folder reached twice, as when `~/.agents/skills` links to `~/.claude/skills`, is no conflict).
fn add_skills(skills: &mut Vec<Skill>, found: Vec<Skill>, diagnostics: &mut Vec<Diagnostic>) {
    for skill in found {
        match skills.iter().find(|s| s.name == skill.name) {
            Some(kept) if kept.dir == skill.dir => {}
            Some(kept) => diagnostics.push(
                Diagnostic::new(
                    if kept.source == Source::User && skill.source == Source::Project {
                        format!(
                            "project skill '{}' has the name of one of your skills; yours is kept",
                            skill.name
                        )
                    } else {
                        format!(
                            "{} skill '{}' has the name of the skill in {}, which is kept",
                            skill.source.label(),
                            skill.name,
                            kept.dir.display()
                        )
                    },
                )
                .in_file(&skill.file),
            ),
            None => skills.push(skill),
        }
    }
}

/// Adds templates found in one more folder; a name already taken keeps the first one.
fn add_prompts(
    prompts: &mut Vec<PromptTemplate>,
    found: Vec<PromptTemplate>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for template in found {
        match prompts.iter().find(|p| p.name == template.name) {
            Some(kept) if kept.file == template.file => {}
            Some(kept) => diagnostics.push(
                Diagnostic::new(
                    if kept.source == Source::User && template.source == Source::Project {
                        format!(
                            "project template /{} has the name of one of your templates; yours is kept",
                            template.name
                        )
                    } else {
                        format!(
                            "{} template /{} has the name of the template {}, which is kept",
                            template.source.label(),
                            template.name,
                            kept.file.display()
                        )
                    },
                )
                .in_file(&template.file),
            ),
            None => prompts.push(template),
        }
    }
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
