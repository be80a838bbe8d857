//! Reading a Claude Code hook's answer — its exit code, stdout and stderr — as an Elph outcome.
//!
//! The result is the outcome JSON in Elph's own field names, which the host then validates with
//! `parse_outcome` like any hook's, so every limit and type rule holds. What has no Elph equivalent
//! is named in a note (the user sees it as a diagnostic); nothing is dropped silently.

use elph_agent::hooks::limits::MAX_RETURNED_CONTEXT_BYTES;
use elph_agent::hooks::{HookEvent, HookPayload};
use elph_ai::ContentBlock;
use serde_json::{Map, Value, json};

use super::payload::ClaudeEvent;
use super::tools::{Dialect, elph_field_in, input_in};

/// What a Claude Code hook's answer means in Elph.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Translation {
    /// The outcome in Elph's field names; `None` is "no change".
    pub outcome: Option<Value>,
    /// Text for the next model request (Claude Code's `additionalContext`, or plain stdout, on
    /// SessionStart and UserPromptSubmit).
    pub context: Option<String>,
    /// Remarks for the user: fields with no Elph equivalent, messages the hook meant for them.
    pub notes: Vec<String>,
}

/// Reads an exit-2 answer: Claude Code's "blocking error", with stderr as the reason.
pub(crate) fn exit_two(event: HookEvent, payload: &HookPayload, stderr: &str) -> Translation {
    let reason = stderr.trim();
    let mut out = Translation::default();
    // The configuration allows the claude-code protocol only on events Claude Code has.
    let Some(event) = ClaudeEvent::of(event) else {
        return out;
    };
    match event {
        ClaudeEvent::PreToolUse => {
            let reason = if reason.is_empty() {
                "blocked by a Claude Code hook (exit code 2)"
            } else {
                reason
            };
            out.outcome = Some(json!({"block": true, "reason": reason}));
        }
        ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => {
            // The tool already ran; Claude Code shows stderr to the model.
            if !reason.is_empty() {
                out.outcome = Some(feedback(payload, &[reason]));
            }
        }
        // Claude Code's "block the stop": stderr is the model's next instruction.
        ClaudeEvent::Stop if !reason.is_empty() => {
            out.outcome = Some(json!({"continue": reason}));
        }
        ClaudeEvent::PermissionRequest => {
            // Claude Code denies the permission on exit 2, with stderr as the reason.
            out.outcome = Some(deny_permission(Some(reason.to_string())));
        }
        ClaudeEvent::SessionStart
        | ClaudeEvent::UserPromptSubmit
        | ClaudeEvent::PreCompact
        | ClaudeEvent::Stop
        | ClaudeEvent::Notification
        | ClaudeEvent::SessionEnd => out.notes.push(format!(
            "exit code 2 cannot block {} in Elph: {}; stderr: {reason}",
            event.name(),
            cannot_block(event)
        )),
    }
    out
}

fn cannot_block(event: ClaudeEvent) -> &'static str {
    match event {
        ClaudeEvent::UserPromptSubmit => "the prompt went on to the model",
        ClaudeEvent::Stop => "a stop is blocked only with a reason, which becomes the next instruction",
        ClaudeEvent::SessionStart
        | ClaudeEvent::PreToolUse
        | ClaudeEvent::PostToolUse
        | ClaudeEvent::PostToolUseFailure
        | ClaudeEvent::PermissionRequest
        | ClaudeEvent::PreCompact
        | ClaudeEvent::Notification
        | ClaudeEvent::SessionEnd => "the event only reports what happened",
    }
}

/// Whether Claude Code adds a hook's plain-text stdout to the context for `event` (elsewhere it
/// only shows it to the user).
fn plain_text_is_context(event: ClaudeEvent) -> bool {
    match event {
        ClaudeEvent::SessionStart | ClaudeEvent::UserPromptSubmit => true,
        ClaudeEvent::PreToolUse
        | ClaudeEvent::PostToolUse
        | ClaudeEvent::PostToolUseFailure
        | ClaudeEvent::PermissionRequest
        | ClaudeEvent::PreCompact
        | ClaudeEvent::Stop
        | ClaudeEvent::Notification
        | ClaudeEvent::SessionEnd => false,
    }
}

/// Reads an exit-0 answer. `Err` rejects the outcome (a field of the wrong type or value).
pub(crate) fn exit_zero(
    event: HookEvent,
    payload: &HookPayload,
    stdout: &str,
    dialect: Dialect,
) -> Result<Translation, String> {
    let text = stdout.trim();
    let mut out = Translation::default();
    // The configuration allows the claude-code protocol only on events Claude Code has.
    let (false, Some(event)) = (text.is_empty(), ClaudeEvent::of(event)) else {
        return Ok(out);
    };
    let object = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => object,
        // Plain text: Claude Code adds it to the context on these two events, and only shows it
        // to the user elsewhere.
        _ if plain_text_is_context(event) => {
            out.context = Some(bounded("stdout", text)?);
            return Ok(out);
        }
        _ => return Ok(out),
    };
    Reader {
        event,
        dialect,
        payload,
        out: &mut out,
        elph: Map::new(),
        feedback: Vec::new(),
    }
    .read(object)?;
    Ok(out)
}

struct Reader<'a> {
    event: ClaudeEvent,
    dialect: Dialect,
    payload: &'a HookPayload,
    out: &'a mut Translation,
    /// The Elph outcome being built.
    elph: Map<String, Value>,
    /// Text for the model after a tool result (PostToolUse).
    feedback: Vec<String>,
}

impl Reader<'_> {
    fn event_name(&self) -> &'static str {
        self.event.name()
    }

    fn unsupported(&mut self, field: &str, why: &str) {
        self.out.notes.push(format!(
            "field '{field}' has no effect on {} in Elph: {why}",
            self.event_name()
        ));
    }

    fn read(mut self, mut object: Map<String, Value>) -> Result<(), String> {
        let specific = object.remove("hookSpecificOutput");
        let decision = string(&mut object, "decision")?;
        let reason = string(&mut object, "reason")?;
        let keep_going = match object.remove("continue") {
            None => true,
            Some(Value::Bool(flag)) => flag,
            Some(other) => return Err(format!("continue must be true or false, not {other}")),
        };
        let stop_reason = string(&mut object, "stopReason")?;
        if let Some(message) = string(&mut object, "systemMessage")? {
            self.out.notes.push(format!("message from the hook: {message}"));
        }
        if object.remove("suppressOutput").is_some() {
            self.unsupported("suppressOutput", "Elph never puts hook output in the transcript");
        }
        for field in object.keys() {
            self.out.notes.push(format!(
                "field '{field}' is not part of Claude Code's hook answer and was ignored"
            ));
        }

        match (decision.as_deref(), self.event) {
            (None, _) => {}
            (Some("approve" | "allow"), ClaudeEvent::PreToolUse) => {} // never loosens approval
            (Some("block" | "deny"), ClaudeEvent::PreToolUse) => self.block(reason),
            // Gemini CLI says "deny" where Claude Code says "block".
            (Some("block" | "deny"), ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure) => {
                if let Some(reason) = &reason {
                    self.feedback.push(reason.clone());
                }
            }
            (Some("block" | "deny"), ClaudeEvent::Stop) => match reason.as_deref().map(str::trim) {
                Some(reason) if !reason.is_empty() => {
                    self.elph.insert("continue".into(), json!(reason));
                }
                _ => self.unsupported("decision", cannot_block(self.event)),
            },
            (Some("block" | "deny"), _) => self.unsupported("decision", cannot_block(self.event)),
            (Some("allow" | "approve"), _) => {}
            (Some(other), _) => {
                return Err(format!(
                    "decision '{other}' is not one Claude Code defines for {} (approve or block)",
                    self.event_name()
                ));
            }
        }
        if let Some(specific) = specific {
            let Value::Object(specific) = specific else {
                return Err("hookSpecificOutput must be an object".into());
            };
            self.specific(specific)?;
        }
        if !keep_going {
            match self.event {
                ClaudeEvent::PreToolUse => {
                    self.block(stop_reason);
                    self.out.notes.push(
                        "continue: false ends the whole turn in Claude Code; in Elph preToolUse blocks the call instead"
                            .into(),
                    );
                }
                ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => {
                    self.elph.insert("terminate".into(), json!(true));
                    if let Some(stop_reason) = &stop_reason {
                        self.out
                            .notes
                            .push(format!("the hook ended the turn: {stop_reason}"));
                    }
                }
                ClaudeEvent::PermissionRequest => {
                    self.elph.extend(as_map(deny_permission(stop_reason)));
                    self.out.notes.push(
                        "continue: false ends the whole turn in Claude Code; in Elph permissionRequest denies the call instead"
                            .into(),
                    );
                }
                ClaudeEvent::SessionStart
                | ClaudeEvent::UserPromptSubmit
                | ClaudeEvent::PreCompact
                | ClaudeEvent::Stop
                | ClaudeEvent::Notification
                | ClaudeEvent::SessionEnd => {
                    self.unsupported("continue", "only tool events can end the turn")
                }
            }
        } else if stop_reason.is_some() {
            self.unsupported("stopReason", "it applies only with continue: false");
        }
        if !self.feedback.is_empty() {
            let texts: Vec<&str> = self.feedback.iter().map(String::as_str).collect();
            if let Value::Object(content) = feedback(self.payload, &texts) {
                self.elph.extend(content);
            }
        }
        if !self.elph.is_empty() {
            self.out.outcome = Some(Value::Object(self.elph));
        }
        Ok(())
    }

    fn block(&mut self, reason: Option<String>) {
        self.elph.insert("block".into(), json!(true));
        if let Some(reason) = reason.filter(|r| !r.is_empty()) {
            self.elph.insert("reason".into(), json!(reason));
        }
    }

    fn specific(&mut self, mut specific: Map<String, Value>) -> Result<(), String> {
        specific.remove("hookEventName");
        let permission = string(&mut specific, "permissionDecision")?;
        let permission_reason = string(&mut specific, "permissionDecisionReason")?;
        let context = string(&mut specific, "additionalContext")?;
        let updated = match self.dialect {
            Dialect::Claude => specific.remove("updatedInput"),
            // Gemini CLI merges `tool_input` over the model's arguments, as updatedInput does here.
            Dialect::Gemini => specific.remove("tool_input"),
        };
        let updated_prompt = string(&mut specific, "updatedPrompt")?;
        let permission_answer = specific.remove("decision");
        for field in specific.keys() {
            self.out.notes.push(format!(
                "field 'hookSpecificOutput.{field}' has no Elph equivalent and was ignored"
            ));
        }
        if self.event != ClaudeEvent::PreToolUse {
            if permission.is_some() {
                self.unsupported(
                    "hookSpecificOutput.permissionDecision",
                    "it applies to PreToolUse",
                );
            }
            if updated.is_some() {
                self.unsupported("hookSpecificOutput.updatedInput", "it applies to PreToolUse");
            }
        } else {
            match permission.as_deref() {
                None | Some("allow") => {} // hooks never loosen approval
                Some("deny") => self.block(permission_reason),
                Some("ask") => {
                    self.elph.insert("decision".into(), json!("ask"));
                    if let Some(reason) = &permission_reason {
                        self.elph.insert("reason".into(), json!(reason));
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "hookSpecificOutput.permissionDecision is '{other}'; Claude Code defines allow, deny and ask"
                    ));
                }
            }
            if let Some(updated) = updated {
                self.updated_input(updated)?;
            }
        }
        if let Some(answer) = permission_answer {
            if self.event == ClaudeEvent::PermissionRequest {
                self.permission_answer(answer)?;
            } else {
                self.unsupported("hookSpecificOutput.decision", "it applies to PermissionRequest");
            }
        }
        if let Some(prompt) = updated_prompt {
            // The field Claude Code's feature request proposes (beside PreToolUse's updatedInput);
            // Claude Code itself ignores it, Elph replaces the prompt the model receives.
            if self.event == ClaudeEvent::UserPromptSubmit {
                self.elph.insert("prompt".into(), json!(prompt));
            } else {
                self.unsupported(
                    "hookSpecificOutput.updatedPrompt",
                    "it applies to UserPromptSubmit",
                );
            }
        }
        if let Some(context) = context {
            match self.event {
                ClaudeEvent::SessionStart | ClaudeEvent::UserPromptSubmit => {
                    self.out.context = Some(bounded("hookSpecificOutput.additionalContext", &context)?);
                }
                ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => self.feedback.push(context),
                ClaudeEvent::PreToolUse
                | ClaudeEvent::PermissionRequest
                | ClaudeEvent::PreCompact
                | ClaudeEvent::Stop
                | ClaudeEvent::Notification
                | ClaudeEvent::SessionEnd => self.unsupported(
                    "hookSpecificOutput.additionalContext",
                    "it applies to SessionStart, UserPromptSubmit and PostToolUse",
                ),
            }
        }
        Ok(())
    }

    /// PermissionRequest's `hookSpecificOutput.decision`: `{"behavior": "deny", "message": …}`
    /// denies the call; `allow` cannot loosen anything in Elph, so it is only noted.
    fn permission_answer(&mut self, answer: Value) -> Result<(), String> {
        let Value::Object(mut answer) = answer else {
            return Err(
                "hookSpecificOutput.decision must be an object such as {\"behavior\": \"deny\"}".into(),
            );
        };
        let behavior = string(&mut answer, "behavior")?;
        let message = string(&mut answer, "message")?;
        match behavior.as_deref() {
            Some("deny") => self.elph.extend(as_map(deny_permission(message))),
            Some("allow") => self.unsupported(
                "hookSpecificOutput.decision.behavior: allow",
                "a hook never approves a call in Elph; the user is asked",
            ),
            other => {
                return Err(format!(
                    "hookSpecificOutput.decision.behavior is {}; Claude Code defines allow and deny",
                    other.map_or("missing".to_string(), |other| format!("'{other}'"))
                ));
            }
        }
        Ok(())
    }

    /// `updatedInput` in Claude Code's names, laid over the call's input and mapped back to Elph's
    /// names. The harness then checks the result against the tool's schema, as for any rewrite.
    fn updated_input(&mut self, updated: Value) -> Result<(), String> {
        let HookPayload::PreToolUse(call) = self.payload else {
            return Ok(());
        };
        let Value::Object(updated) = updated else {
            return Err("hookSpecificOutput.updatedInput must be an object of tool arguments".into());
        };
        let project_dir = &call.base.project_dir;
        let shown = input_in(self.dialect, &call.tool_name, &call.tool_input, project_dir);
        let mut input = match &call.tool_input {
            Value::Object(object) => object.clone(),
            _ => Map::new(),
        };
        for (claude_key, value) in updated {
            // A path sent back as it was shown (made absolute) is the same path: keep Elph's.
            if shown.get(&claude_key) == Some(&value) {
                continue;
            }
            input.insert(elph_field_in(self.dialect, &call.tool_name, &claude_key), value);
        }
        let input = Value::Object(input);
        if input != call.tool_input {
            self.elph.insert("toolInput".into(), input);
        }
        Ok(())
    }
}

/// Elph's `permissionRequest` outcome that denies the call.
fn deny_permission(reason: Option<String>) -> Value {
    match reason.filter(|reason| !reason.is_empty()) {
        Some(reason) => json!({"decision": "deny", "reason": reason}),
        None => json!({"decision": "deny", "reason": "denied by a Claude Code hook"}),
    }
}

fn as_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The tool result as the previous hooks left it, followed by text for the model.
fn feedback(payload: &HookPayload, texts: &[&str]) -> Value {
    let mut content = payload
        .tool_result()
        .map(|result| result.content.clone())
        .unwrap_or_default();
    content.extend(
        texts
            .iter()
            .map(|text| ContentBlock::text(format!("Hook feedback: {text}"))),
    );
    json!({ "content": content })
}

fn string(object: &mut Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("{field} must be a string, not {other}")),
    }
}

fn bounded(field: &str, text: &str) -> Result<String, String> {
    if text.len() > MAX_RETURNED_CONTEXT_BYTES {
        return Err(format!(
            "{field} is {} bytes; at most {MAX_RETURNED_CONTEXT_BYTES} bytes may reach the model from one outcome",
            text.len()
        ));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use elph_agent::hooks::payload::{
        PayloadBase, PreToolUsePayload, ToolResultPayload, UserPromptSubmitPayload,
    };

    fn pre(tool: &str, input: Value) -> HookPayload {
        HookPayload::PreToolUse(PreToolUsePayload {
            base: PayloadBase::new("s", "/p"),
            tool_name: tool.into(),
            tool_call_id: "c".into(),
            tool_input: input,
        })
    }

    fn post() -> HookPayload {
        HookPayload::PostToolUse(ToolResultPayload {
            base: PayloadBase::new("s", "/p"),
            tool_name: "shell_exec".into(),
            tool_call_id: "c".into(),
            tool_input: json!({"command": "make"}),
            content: vec![ContentBlock::text("built")],
            details: Value::Null,
            is_error: false,
        })
    }

    #[test]
    fn updated_prompt_replaces_the_prompt_only_on_user_prompt_submit() {
        let payload = HookPayload::UserPromptSubmit(UserPromptSubmitPayload {
            base: PayloadBase::new("s", "/p"),
            prompt: "fix it".into(),
            template: None,
        });
        let answer = json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "updatedPrompt": "Fix the test."}});
        let out = exit_zero(
            HookEvent::UserPromptSubmit,
            &payload,
            &answer.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.outcome, Some(json!({"prompt": "Fix the test."})));
        let out = exit_zero(
            HookEvent::PreToolUse,
            &pre("shell_exec", json!({})),
            &answer.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.outcome, None);
        assert!(out.notes[0].contains("updatedPrompt"), "{:?}", out.notes);
    }

    #[test]
    fn permission_request_denies_on_exit_two_and_on_behavior_deny_but_never_allows() {
        let payload = HookPayload::PermissionRequest(elph_agent::hooks::PermissionRequestPayload {
            base: PayloadBase::new("s", "/p"),
            tool_name: "shell_exec".into(),
            tool_call_id: "c".into(),
            tool_input: json!({"command": "git push"}),
            reason: "asks".into(),
        });
        let out = exit_two(HookEvent::PermissionRequest, &payload, "no pushes\n");
        assert_eq!(
            out.outcome,
            Some(json!({"decision": "deny", "reason": "no pushes"}))
        );
        let deny = json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not now"}}});
        let out = exit_zero(
            HookEvent::PermissionRequest,
            &payload,
            &deny.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(
            out.outcome,
            Some(json!({"decision": "deny", "reason": "not now"}))
        );
        let allow = json!({"hookSpecificOutput": {"decision": {"behavior": "allow"}}});
        let out = exit_zero(
            HookEvent::PermissionRequest,
            &payload,
            &allow.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.outcome, None, "a hook never approves");
        assert!(out.notes[0].contains("never approves"), "{:?}", out.notes);
        let odd = json!({"hookSpecificOutput": {"decision": {"behavior": "maybe"}}});
        assert!(
            exit_zero(
                HookEvent::PermissionRequest,
                &payload,
                &odd.to_string(),
                Dialect::Claude
            )
            .is_err()
        );
    }

    #[test]
    fn updated_input_maps_back_and_keeps_paths_that_did_not_change() {
        let payload = pre(
            "edit_file",
            json!({"path": "src/a.rs", "old_text": "a", "new_text": "b"}),
        );
        let answer = json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {
            "file_path": "/p/src/a.rs", "old_string": "a", "new_string": "c"}}});
        let out = exit_zero(
            HookEvent::PreToolUse,
            &payload,
            &answer.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(
            out.outcome,
            Some(json!({"toolInput": {"path": "src/a.rs", "old_text": "a", "new_text": "c"}}))
        );
        // The same input sent back is no change at all.
        let same = json!({"hookSpecificOutput": {"updatedInput": {"file_path": "/p/src/a.rs"}}});
        let out = exit_zero(
            HookEvent::PreToolUse,
            &payload,
            &same.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.outcome, None);
    }

    #[test]
    fn ask_deny_and_the_old_decision_field() {
        let payload = pre("shell_exec", json!({"command": "sudo ls"}));
        let ask =
            json!({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sudo"}});
        let out = exit_zero(HookEvent::PreToolUse, &payload, &ask.to_string(), Dialect::Claude).unwrap();
        assert_eq!(out.outcome, Some(json!({"decision": "ask", "reason": "sudo"})));
        let old = json!({"decision": "block", "reason": "no"});
        let out = exit_zero(HookEvent::PreToolUse, &payload, &old.to_string(), Dialect::Claude).unwrap();
        assert_eq!(out.outcome, Some(json!({"block": true, "reason": "no"})));
        let stop = json!({"continue": false, "stopReason": "enough"});
        let out = exit_zero(
            HookEvent::PreToolUse,
            &payload,
            &stop.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.outcome, Some(json!({"block": true, "reason": "enough"})));
        assert!(out.notes[0].contains("continue: false"));
        assert!(
            exit_zero(
                HookEvent::PreToolUse,
                &payload,
                r#"{"decision": 3}"#,
                Dialect::Claude
            )
            .is_err()
        );
        let blocked = exit_two(HookEvent::PreToolUse, &payload, "");
        assert_eq!(blocked.outcome.unwrap()["block"], true);
    }

    #[test]
    fn post_tool_use_feedback_and_continue_false() {
        let answer = json!({"decision": "block", "reason": "lint failed", "continue": false, "stopReason": "stop now",
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see lint.log"}});
        let out = exit_zero(
            HookEvent::PostToolUse,
            &post(),
            &answer.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(
            out.outcome,
            Some(json!({"terminate": true, "content": [
                {"type": "text", "text": "built"},
                {"type": "text", "text": "Hook feedback: lint failed"},
                {"type": "text", "text": "Hook feedback: see lint.log"}]}))
        );
        let out = exit_two(HookEvent::PostToolUse, &post(), "tests fail\n");
        assert_eq!(
            out.outcome.unwrap()["content"][1]["text"],
            "Hook feedback: tests fail"
        );
    }

    #[test]
    fn prompt_context_from_plain_stdout_or_json() {
        let payload = HookPayload::UserPromptSubmit(UserPromptSubmitPayload {
            base: PayloadBase::new("s", "/p"),
            prompt: "hi".into(),
            template: None,
        });
        let out = exit_zero(
            HookEvent::UserPromptSubmit,
            &payload,
            "Today is Tuesday.\n",
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!(out.context.as_deref(), Some("Today is Tuesday."));
        let json =
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}});
        let out = exit_zero(
            HookEvent::UserPromptSubmit,
            &payload,
            &json.to_string(),
            Dialect::Claude,
        )
        .unwrap();
        assert_eq!((out.context.as_deref(), out.outcome), (Some("ctx"), None));
        let big = "x".repeat(MAX_RETURNED_CONTEXT_BYTES + 1);
        assert!(exit_zero(HookEvent::UserPromptSubmit, &payload, &big, Dialect::Claude).is_err());
    }
}
