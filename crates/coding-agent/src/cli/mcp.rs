//! `elph mcp login NAME` and `elph mcp logout NAME`: OAuth for HTTP MCP servers (docs/mcp.md,
//! "Servers that need a login").

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use super::exit;
use crate::mcp::oauth::CredentialsFile;
use crate::mcp::oauth::login::{BROWSER_WAIT, LoginOptions, login};
use crate::mcp::oauth::revoke::{Revocation, revoke};
use crate::mcp::{McpConfig, McpFileState, ServerTransport};
use crate::paths::Paths;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Log in to an HTTP MCP server that asks for OAuth: prints the address to open in a browser,
    /// then keeps the tokens in CONFIG_DIR/mcp-credentials.json (owner-only).
    Login(LoginArgs),
    /// Forget the tokens of an MCP server: revokes them at its authorization server when it offers
    /// revocation (RFC 7009), then removes them from CONFIG_DIR/mcp-credentials.json (also when
    /// the revocation fails, which is said).
    Logout(LogoutArgs),
    /// Add another client's MCP servers to Elph's mcp.json: VS Code (.vscode/mcp.json), Cursor
    /// (.cursor/mcp.json), Claude Desktop (claude_desktop_config.json), Claude Code (.mcp.json),
    /// Codex (config.toml's [mcp_servers.NAME]), Gemini CLI (.gemini/settings.json). What cannot be
    /// carried over is said, one line each.
    Import(super::mcp_import::ImportArgs),
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server's name in mcp.json.
    #[arg(value_name = "NAME")]
    pub name: String,

    /// A client id registered with the authorization server beforehand, for servers that offer
    /// no dynamic client registration (redirect URI: http://127.0.0.1/callback, any port).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,

    /// A scope to ask for (repeat for more); default: what the server suggests.
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The server's name in mcp.json.
    #[arg(value_name = "NAME")]
    pub name: String,
}

pub(crate) fn run(cwd: Option<&Path>, command: McpCommand) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    match command {
        McpCommand::Login(args) => run_login(&paths, args),
        McpCommand::Logout(args) => run_logout(&paths, &args.name),
        McpCommand::Import(args) => super::mcp_import::run(cwd, args),
    }
}

/// The URL of HTTP server `name`, from the home mcp.json and (when trusted) the project's.
fn server_url(paths: &Paths, name: &str) -> anyhow::Result<String> {
    let trusted = crate::trust::TrustStore::new(&paths.config_dir)
        .decide(&paths.project_dir)
        .trusted;
    // Nothing is asked: only the server's URL is needed.
    let config = McpConfig::load(paths, trusted, &crate::mcp::inputs::McpInputs::placeholders());
    if let Some(server) = config.servers.iter().find(|server| server.name == name) {
        return match &server.transport {
            ServerTransport::Http { url, .. } => Ok(url.clone()),
            ServerTransport::Stdio { .. } => bail!(
                "MCP server '{name}' ({}) is a stdio server; logins are for HTTP servers only",
                server.source.display()
            ),
        };
    }
    let mut message = format!("no MCP server named '{name}'");
    let http: Vec<&str> = config
        .servers
        .iter()
        .filter(|server| matches!(server.transport, ServerTransport::Http { .. }))
        .map(|server| server.name.as_str())
        .collect();
    if !http.is_empty() {
        message.push_str(&format!("; the HTTP servers are: {}", http.join(", ")));
    }
    for file in &config.files {
        match &file.state {
            McpFileState::SkippedUntrusted => message.push_str(&format!(
                "; {} was not read because the project is not trusted (`elph trust`)",
                file.path.display()
            )),
            McpFileState::Malformed { reason, .. } => {
                message.push_str(&format!("; {} is not valid: {reason}", file.path.display()));
            }
            McpFileState::Loaded { .. } | McpFileState::Missing => {}
        }
    }
    bail!(message)
}

fn run_login(paths: &Paths, args: LoginArgs) -> anyhow::Result<u8> {
    let url = server_url(paths, &args.name)?;
    let credentials = CredentialsFile::new(&paths.config_dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the login's runtime")?;
    let options = LoginOptions {
        client_id: args.client_id,
        scopes: args.scopes,
    };
    let mut show = |line: &str| crate::terminal_text::eprint_line(line);
    runtime
        .block_on(login(
            &args.name,
            &url,
            &credentials,
            options,
            BROWSER_WAIT,
            &mut show,
        ))
        .with_context(|| format!("cannot log in to MCP server '{}'", args.name))?;
    let mut out = crate::terminal_text::Escaping::new(std::io::stdout().lock());
    writeln!(
        out,
        "Logged in to MCP server '{}'. Its tokens are in {} (readable by you only).",
        args.name,
        credentials.path().display()
    )?;
    Ok(exit::SUCCESS)
}

fn run_logout(paths: &Paths, name: &str) -> anyhow::Result<u8> {
    let credentials = CredentialsFile::new(&paths.config_dir);
    // Revoked first, at the authorization server of the URL the tokens were issued for.
    let revocation = match credentials.entry(name)? {
        Some((url, stored)) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the logout's runtime")?;
            Some(runtime.block_on(revoke(&url, &stored)))
        }
        None => None,
    };
    let removed = credentials.remove(name)?;
    let mut out = crate::terminal_text::Escaping::new(std::io::stdout().lock());
    let file = credentials.path().display();
    if !removed {
        writeln!(out, "No login was stored for MCP server '{name}'.")?;
        return Ok(exit::SUCCESS);
    }
    match revocation {
        Some(Revocation::Revoked) => writeln!(
            out,
            "Logged out of MCP server '{name}': its tokens were revoked at its authorization server \
             and removed from {file}."
        )?,
        Some(Revocation::NotOffered) => writeln!(
            out,
            "Logged out of MCP server '{name}': its tokens were removed from {file}. Its \
             authorization server offers no revocation: they stay valid there until they expire."
        )?,
        Some(Revocation::Failed(why)) => {
            writeln!(
                out,
                "Logged out of MCP server '{name}': its tokens were removed from {file}."
            )?;
            crate::terminal_text::eprint_line(&format!(
                "elph: warning: the tokens of MCP server '{name}' could not be revoked at its \
                 authorization server ({why}); they stay valid there until they expire"
            ));
        }
        Some(Revocation::NothingStored) | None => writeln!(
            out,
            "Logged out of MCP server '{name}': its tokens were removed from {file}."
        )?,
    }
    Ok(exit::SUCCESS)
}
