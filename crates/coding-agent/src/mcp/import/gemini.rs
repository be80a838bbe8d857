//! Gemini CLI's MCP servers: the `mcpServers` of its settings.json (`~/.gemini/` or the project's
//! `.gemini/`), with the fields only Gemini CLI has translated (`httpUrl`, `timeout` in ms, `$NAME`
//! in `env`) or reported on a line of their own (`trust`, `includeTools`, `oauth`, an SSE `url`).

use serde_json::{Map, Value, json};

use super::{Imported, add, json_server};

/// Gemini CLI's settings.json: `mcpServers` beside its other settings, each reported.
pub(super) fn import(value: &Value) -> Result<Imported, String> {
    let mut out = Imported {
        client: "Gemini CLI",
        ..Imported::default()
    };
    let Some(Value::Object(servers)) = value.get("mcpServers") else {
        return Err("holds no \"mcpServers\"".into());
    };
    if let Value::Object(fields) = value {
        for key in fields.keys().filter(|key| *key != "mcpServers") {
            out.notes.push(format!("{key}: not an MCP setting; left out"));
        }
    }
    for (name, server) in servers {
        let Value::Object(fields) = server else {
            out.notes.push(format!("{name}: not an object; left out"));
            continue;
        };
        if let Some(server) = gemini_server(name, fields, &mut out.notes) {
            add(&mut out, name, server);
        }
    }
    Ok(out)
}

/// One of Gemini CLI's servers: its own fields translated or reported, the rest as any JSON file's.
fn gemini_server(name: &str, fields: &Map<String, Value>, notes: &mut Vec<String>) -> Option<Value> {
    let mut common = Map::new();
    let mut own = Map::new();
    for (field, value) in fields {
        let place = format!("{name}.{field}");
        match field.as_str() {
            // Gemini CLI's `timeout` is each request's, in milliseconds.
            "timeout" => match value.as_u64().filter(|ms| *ms > 0) {
                Some(ms) => {
                    own.insert("toolTimeoutMs".into(), json!(ms));
                }
                None => notes.push(format!(
                    "{place}: {value} is not a number of milliseconds; left out"
                )),
            },
            // Without a `type`, Gemini CLI's `url` is the legacy SSE transport (`httpUrl` is
            // streamable HTTP).
            "url" if fields.contains_key("httpUrl") => notes.push(format!(
                "{place}: Gemini CLI uses httpUrl when both are given; {value} is left out"
            )),
            "url" if !fields.contains_key("type") => {
                own.insert("url".into(), value.clone());
                own.insert("type".into(), json!("sse"));
                notes.push(format!(
                    "{place}: an SSE endpoint, which Elph's MCP client does not speak; the server is \
                     kept as \"type\": \"sse\" and skipped when it loads (if it serves streamable \
                     HTTP too, give that URL with \"type\": \"http\")"
                ));
            }
            "env" => {
                let env = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(var, text)| match text.as_str() {
                        Some(text) => (var.clone(), json!(braced_variables(text))),
                        None => (var.clone(), text.clone()),
                    })
                    .collect();
                common.insert("env".into(), Value::Object(env));
            }
            "trust" => notes.push(format!(
                "{place}: Elph asks about MCP tools by its approval policy; to allow them without a \
                 question add \"mcp_{name}__TOOL\" to permissions.allow in settings.json"
            )),
            "includeTools" | "excludeTools" => notes.push(format!(
                "{place}: Elph offers every tool of a server; to refuse some, add \"mcp_{name}__TOOL\" \
                 to permissions.deny in settings.json"
            )),
            "oauth" | "authProviderType" | "targetAudience" | "targetServiceAccount" => notes.push(format!(
                "{place}: Elph finds a server's OAuth by itself; run `elph mcp login {name}` once \
                 imported; left out"
            )),
            "description" => notes.push(format!("{place}: Elph keeps no server descriptions; left out")),
            _ => {
                common.insert(field.clone(), value.clone());
            }
        }
    }
    let mut server = json_server(name, &common, notes)?;
    if let Value::Object(server) = &mut server {
        server.extend(own);
    }
    Some(server)
}

/// Gemini CLI's `$NAME` in an env value as Elph's `${env:NAME}` (Elph leaves a bare `$NAME` as it
/// is); `${NAME}` is Elph's already.
fn braced_variables(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$'
            || !chars
                .peek()
                .is_some_and(|next| next.is_ascii_alphabetic() || *next == '_')
        {
            out.push(c);
            continue;
        }
        let mut name = String::new();
        while let Some(next) = chars.next_if(|next| next.is_ascii_alphanumeric() || *next == '_') {
            name.push(next);
        }
        out.push_str(&format!("${{env:{name}}}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_variables_become_elphs_and_braced_ones_stay() {
        assert_eq!(braced_variables("$DB_URL"), "${env:DB_URL}");
        assert_eq!(braced_variables("${KEY}"), "${KEY}");
        assert_eq!(braced_variables("a $B-c $ 1$2"), "a ${env:B}-c $ 1$2");
    }
}
