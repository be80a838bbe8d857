//! Matcher patterns that can never match: a tool hook whose `toolNames` name no tool Elph has
//! (`Bash`, Claude Code's name for `shell_exec`, is the usual one) silently never runs. Shared by
//! `elph hooks validate` and `elph doctor`.

use elph_agent::hooks::{HookEvent, Matcher, ToolPattern};
use elph_agent::tools::ToolCatalog;

/// One pattern that matches no tool, and what to write instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTool {
    /// Its index in `toolNames`.
    pub index: usize,
    pub pattern: String,
    pub message: String,
}

/// The patterns of `matcher` (on a hook of `event`) that match no native tool and cannot match an
/// MCP tool (named `mcp_SERVER__TOOL`).
pub fn unknown_tools(event: HookEvent, matcher: &Matcher) -> Vec<UnknownTool> {
    if !event.is_tool_event() {
        return Vec::new();
    }
    let catalog = ToolCatalog::native();
    let native: Vec<&str> = catalog.names().collect();
    matcher
        .patterns()
        .iter()
        .enumerate()
        .filter(|(_, pattern)| never_matches(pattern, &native))
        .map(|(index, pattern)| UnknownTool {
            index,
            pattern: pattern.to_string(),
            message: format!(
                "matcher pattern '{pattern}' matches no tool Elph has, so this hook never runs{}; \
                 Elph's tools are {} (MCP tools are named mcp_SERVER__TOOL)",
                instead(pattern, &native),
                native.join(", ")
            ),
        })
        .collect()
}

fn never_matches(pattern: &ToolPattern, native: &[&str]) -> bool {
    let could_be_mcp = |name: &str| name.starts_with("mcp_") || "mcp_".starts_with(name);
    match pattern {
        ToolPattern::Exact(name) => !native.contains(&name.as_str()) && !name.starts_with("mcp_"),
        ToolPattern::Prefix(prefix) => {
            !native.iter().any(|name| name.starts_with(prefix.as_str())) && !could_be_mcp(prefix)
        }
        ToolPattern::Any | ToolPattern::Suffix(_) => false,
    }
}

/// "; Claude Code calls it Bash: use 'shell_exec'" or "; did you mean 'read_file'?".
fn instead(pattern: &ToolPattern, native: &[&str]) -> String {
    let ToolPattern::Exact(name) = pattern else {
        return String::new();
    };
    if let Some(elph) = super::claude_code::tools::elph_name(name) {
        return format!(" ('{name}' is Claude Code's name; Elph's is '{elph}')");
    }
    crate::suggest::did_you_mean(name, native.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(names: &[&str]) -> Vec<String> {
        unknown_tools(HookEvent::PreToolUse, &Matcher::parse(names).unwrap())
            .into_iter()
            .map(|u| u.pattern)
            .collect()
    }

    #[test]
    fn claude_names_and_typos_never_match_mcp_and_real_names_do() {
        assert_eq!(
            unknown(&[
                "Bash",
                "shell_exec",
                "mcp_github__create_issue",
                "mcp_*",
                "read_*",
                "nope*",
                "*_file"
            ]),
            ["Bash", "nope*"]
        );
        let bash = &unknown_tools(HookEvent::PreToolUse, &Matcher::parse(&["Bash"]).unwrap())[0];
        assert!(
            bash.message
                .contains("'Bash' is Claude Code's name; Elph's is 'shell_exec'"),
            "{}",
            bash.message
        );
        let typo = &unknown_tools(HookEvent::PreToolUse, &Matcher::parse(&["read_fil"]).unwrap())[0];
        assert!(
            typo.message.contains("did you mean 'read_file'?"),
            "{}",
            typo.message
        );
        assert!(unknown_tools(HookEvent::Stop, &Matcher::parse(&["Bash"]).unwrap()).is_empty());
    }
}
