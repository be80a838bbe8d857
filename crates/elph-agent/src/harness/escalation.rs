//! Escalation on failure (docs/security.md, "Escalation on failure"): a command the sandbox
//! refused, run once more with the one permission it lacked, after the user approves that exact
//! command. The tool says what was refused (`sandboxRefused` in its details); the harness decides
//! whether to offer it, and only the user's yes runs it.

use std::sync::Arc;

use serde_json::Value;

use super::approval::{ApprovalDecision, ApprovalPolicy, ApprovalRequest, Escalation};
use super::{AgentHarness, AgentMode};
use crate::messages::{ContentBlock, ToolCall};
use crate::tools::{Tool, ToolContext, ToolOutput, one_line};

impl AgentHarness {
    /// After a command failed because the sandbox refused it, under `ask` in build mode: offers to
    /// run that exact command once more with the one permission it lacked, and does if the user
    /// says yes. Never under `auto` or `deny`, never without a user, never at the model's asking.
    pub(super) async fn escalate(
        &mut self,
        call: &ToolCall,
        input: &Value,
        tool: &Arc<dyn Tool>,
        ctx: &ToolContext,
        output: ToolOutput,
    ) -> ToolOutput {
        if self.config.approval != ApprovalPolicy::Ask
            || self.config.mode != AgentMode::Build
            || !output.is_error
        {
            return output;
        }
        let escalation = match output.details.get("sandboxRefused").and_then(Value::as_str) {
            Some("network") if !ctx.sandbox.network => Escalation::Network,
            Some("filesystem" | "network") if ctx.sandbox.is_confined() => Escalation::Unconfined,
            _ => return output,
        };
        let command = input.get("command").and_then(Value::as_str).map(one_line);
        let what = match escalation {
            Escalation::Network => "its network access",
            Escalation::Unconfined => "a write outside the folders it may change",
        };
        let request = ApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: input.clone(),
            title: tool.title(input),
            change: None,
            reason: format!(
                "the sandbox refused {what} to `{}`; run this exact command once more {}?",
                command.unwrap_or_else(|| call.name.clone()),
                escalation.describe()
            ),
            offers_session: false,
            suggested_rule: None,
            escalation: Some(escalation),
        };
        let refused = match self.ask(&request).await {
            Ok(Some(
                ApprovalDecision::AllowOnce
                | ApprovalDecision::AllowForSession
                | ApprovalDecision::AllowAlways,
            )) => None,
            Ok(_) => Some(format!(
                "[the user did not approve running it again {}]",
                escalation.describe()
            )),
            // A permissionRequest hook denied it before the user was asked.
            Err(refusal) => Some(format!("[not run again {}: {refusal}]", escalation.describe())),
        };
        if let Some(refused) = refused {
            let mut output = output;
            output.content.push(ContentBlock::text(refused));
            return output;
        }
        let mut sandbox = ctx.sandbox.clone();
        match escalation {
            Escalation::Network => sandbox.network = true,
            Escalation::Unconfined => sandbox.mode = elph_process::sandbox::SandboxMode::FullAccess,
        }
        let ctx = ToolContext {
            sandbox,
            ..ctx.clone()
        };
        let mut rerun = tool.execute(input.clone(), &ctx).await;
        rerun.content.insert(
            0,
            ContentBlock::text(format!(
                "[the sandbox refused the first run; the user approved running this command once more {}]\n",
                escalation.describe()
            )),
        );
        rerun
    }
}
