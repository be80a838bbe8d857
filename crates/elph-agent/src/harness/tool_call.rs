//! One tool call: schema check, preToolUse, native approval, execution, post-tool hooks.

use serde_json::Value;

use super::access::AccessVerdict;
use super::approval::{ApprovalDecision, ApprovalPolicy, ApprovalRequest};
use super::permissions::{self, RuleKind};
use super::{AgentEvent, AgentHarness, AgentMode};
use crate::hooks::Listed;
use crate::hooks::events::notification::NotificationKind;
use crate::hooks::events::permission_request::{PermissionRequest, PermissionRequestPayload};
use crate::hooks::events::post_tool_use::{PostToolUse, ToolResultPayload};
use crate::hooks::events::post_tool_use_failure::PostToolUseFailure;
use crate::hooks::events::pre_tool_use::{PreToolUse, PreToolUsePayload};
use crate::hooks::reduce::Verdict;
use crate::hooks::{HookEvent, HookPayload};
use crate::messages::{ContentBlock, ToolCall};
use crate::tools::{ProposedChange, ToolContext, ToolOutput};

/// What an approval question shows of a call: its title and the change it proposes.
struct Proposal {
    title: String,
    change: Option<ProposedChange>,
}

/// The result the model receives for one call.
pub(super) struct ToolCallDone {
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    pub terminate: bool,
}

impl AgentHarness {
    fn finish_call(&self, call: &ToolCall, output: ToolOutput, ran: bool, terminate: bool) -> ToolCallDone {
        self.emit(AgentEvent::ToolCallFinished {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content.clone(),
            details: output.details,
            is_error: output.is_error,
            ran,
        });
        ToolCallDone {
            content: output.content,
            is_error: output.is_error,
            terminate,
        }
    }

    pub(super) async fn tool_call(&mut self, call: &ToolCall, ctx: &ToolContext) -> ToolCallDone {
        self.emit(AgentEvent::ToolCallStarted {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
        });
        let Some(tool) = self.tools.get(&call.name).cloned() else {
            let known: Vec<&str> = self.tools.names().collect();
            let output = ToolOutput::error(format!(
                "unknown tool '{}'; available tools: {}",
                call.name,
                known.join(", ")
            ));
            return self.finish_call(call, output, false, false);
        };
        if let Err(error) = self.tools.validate(&call.name, &call.input) {
            return self.finish_call(call, ToolOutput::error(error), false, false);
        }
        if self.config.mode == AgentMode::Plan && !tool.offered_in_plan_mode() {
            let output = ToolOutput::error(format!(
                "{} is not available in plan mode, which is read-only; describe the change in your \
                 plan instead (the user switches to build mode to make it)",
                call.name
            ));
            return self.finish_call(call, output, false, false);
        }

        let mut input = call.input.clone();
        let mut hook_ask: Option<Verdict> = None;
        let pre_tool = self.fire(HookEvent::PreToolUse, Some(&call.name), || {
            HookPayload::PreToolUse(PreToolUsePayload {
                base: self.base(),
                tool_name: call.name.clone(),
                tool_call_id: call.id.clone(),
                tool_input: call.input.clone(),
            })
        });
        if let Some(dispatch) = pre_tool.await {
            if let Some(failed) = dispatch.failed_closed() {
                let text = format!("Tool call blocked: {}.", failed.reason());
                return self.finish_call(call, ToolOutput::error(text), false, false);
            }
            if let Some(reduced) = PreToolUse::reduced_of(&dispatch.reduced) {
                if let Some(verdict) = &reduced.blocked {
                    let text = format!("Tool call {}.", verdict.describe("blocked"));
                    return self.finish_call(call, ToolOutput::error(text), false, false);
                }
                if reduced.input_changed {
                    let tool_input = reduced.tool_input.clone();
                    if let Err(error) = self.tools.validate(&call.name, &tool_input) {
                        let text = format!(
                            "a preToolUse hook rewrote the arguments, and the result is invalid: {error}"
                        );
                        return self.finish_call(call, ToolOutput::error(text), false, false);
                    }
                    self.emit(AgentEvent::ToolInputRewritten {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        input: tool_input.clone(),
                    });
                    input = tool_input;
                }
                hook_ask = reduced.ask.clone();
            }
        }

        // The arguments are parsed once, here, after the last schema check: the policy's paths,
        // the approval question and the run all read this one value.
        let parsed = match tool.parse(input.clone()) {
            Ok(parsed) => parsed,
            Err(error) => return self.finish_call(call, ToolOutput::error(error), false, false),
        };
        let policy = ctx.policy.clone();
        let access = AccessVerdict::judge(&policy, &call.name, &parsed.accesses());
        if let Some(refusal) = access.refusal.clone() {
            return self.finish_call(call, ToolOutput::error(refusal), false, false);
        }
        let ctx = ToolContext {
            judged: Some(access.judged.clone()),
            ..ctx.clone()
        };
        // The change to review, with what it replaces, read before anyone is asked about it.
        let change = parsed.review(&ctx).await;
        if let Some(change) = &change {
            self.emit(AgentEvent::ToolChangeProposed {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                change: change.clone(),
            });
        }
        let proposal = Proposal {
            title: parsed.title(),
            change,
        };
        let exact_call_approved = match self
            .approve(call, &input, proposal, tool.mutates(), &access, hook_ask)
            .await
        {
            Ok(approved) => approved,
            Err(refusal) => return self.finish_call(call, ToolOutput::error(refusal), false, false),
        };
        let ctx = ToolContext {
            exact_call_approved,
            ..ctx
        };

        self.emit(AgentEvent::ToolStarted {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
        });
        let output = parsed.run(&ctx).await;
        let output = self.escalate(call, &input, &tool, &ctx, output).await;
        self.post_tool(call, input, output).await
    }

    /// Native approval, with the permission rules, the file policy's questions and a hook's `ask`
    /// on top. `Ok(true)` when the user approved this exact call (a protected write may go ahead),
    /// `Err(reason)` when the call may not run.
    async fn approve(
        &mut self,
        call: &ToolCall,
        input: &Value,
        proposal: Proposal,
        mutates: bool,
        access: &AccessVerdict,
        hook_ask: Option<Verdict>,
    ) -> Result<bool, String> {
        let policy = self.config.approval;
        let outside_key = format!("{} outside the project", call.name);
        let protected = !access.protected.is_empty();
        let reads_outside = !access.outside_reads.is_empty();
        let verdict = self
            .config
            .permissions
            .decide(&call.name, input, &access.judged)
            .map(|verdict| {
                (
                    verdict.kind,
                    verdict.rule.text.clone(),
                    verdict.rule.source.clone(),
                )
            });
        let (allowed_by_rule, asked_by_rule) = match verdict {
            Some((RuleKind::Deny, rule, source)) => {
                return Err(format!(
                    "Tool call denied by the permission rule {rule} (in {source}); it applies whatever \
                     the approval policy is."
                ));
            }
            Some((RuleKind::Ask, rule, source)) => (false, Some(format!("{rule} (in {source})"))),
            Some((RuleKind::Allow, _, _)) => (true, None),
            None => (false, None),
        };
        if protected && policy != ApprovalPolicy::Ask {
            return Err(format!(
                "Tool call refused: {} would write {}, which the agent may change only when the user \
                 approves that exact call in an interactive front end (approval policy: {}).",
                call.name,
                access.protected.join(", "),
                policy_name(policy)
            ));
        }
        let by_policy = !allowed_by_rule && asked_by_rule.is_none();
        if by_policy && policy == ApprovalPolicy::Deny && mutates {
            return Err(format!(
                "Tool call denied: {} changes files or runs commands, and the approval policy is deny.",
                call.name
            ));
        }
        if by_policy && policy == ApprovalPolicy::Deny && reads_outside {
            return Err(format!(
                "Tool call denied: {} would read outside the project ({}), and the approval policy is deny.",
                call.name,
                access.outside_reads.join(", ")
            ));
        }
        let asks_for_change = by_policy
            && mutates
            && policy == ApprovalPolicy::Ask
            && !self.allowed_for_session.contains(&call.name);
        let asks_for_read = by_policy
            && reads_outside
            && policy == ApprovalPolicy::Ask
            && !self.allowed_for_session.contains(&outside_key);
        if !protected && !asks_for_change && !asks_for_read && hook_ask.is_none() && asked_by_rule.is_none() {
            return Ok(false);
        }
        let reason = match (&hook_ask, &asked_by_rule) {
            (Some(verdict), _) => verdict.describe("approval requested"),
            _ if protected => format!(
                "{} writes {}: approve only this exact call, and only if you asked for it",
                call.name,
                access.protected.join(", ")
            ),
            (None, Some(rule)) => format!("{} is asked about by the permission rule {rule}", call.name),
            (None, None) if asks_for_read => format!(
                "{} reads outside the project: {} (approval policy: ask)",
                call.name,
                access.outside_reads.join(", ")
            ),
            (None, None) => format!(
                "{} changes files or runs commands (approval policy: ask)",
                call.name
            ),
        };
        // Only the policy's own questions are remembered for the session or as a rule: a hook's
        // ask, an ask rule and a protected write are approved one call at a time.
        let per_call = hook_ask.is_some() || protected || asked_by_rule.is_some();
        let suggested_rule = (!per_call && asks_for_change && !reads_outside && call.name == "shell_exec")
            .then(|| {
                input
                    .get("command")
                    .and_then(Value::as_str)
                    .and_then(permissions::suggested_prefix)
            })
            .flatten();
        let request = ApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: input.clone(),
            title: proposal.title,
            change: proposal.change,
            reason: reason.clone(),
            offers_session: !per_call,
            suggested_rule,
            escalation: None,
        };
        match self.ask(&request).await? {
            Some(ApprovalDecision::AllowOnce) => Ok(protected),
            Some(ApprovalDecision::AllowForSession) => {
                if !per_call {
                    if mutates {
                        self.allowed_for_session.insert(call.name.clone());
                    }
                    if reads_outside {
                        self.allowed_for_session.insert(outside_key);
                    }
                }
                Ok(protected)
            }
            Some(ApprovalDecision::AllowAlways) => {
                self.remember_rule(&request);
                Ok(protected)
            }
            Some(ApprovalDecision::Deny) => Err(format!("Tool call denied by the user ({reason}).")),
            None => Err(format!(
                "Tool call denied: it needs approval ({reason}), and there is no one to approve it in this mode."
            )),
        }
    }

    /// "Always allow": the suggested rule joins this session's allow rules at once (the front
    /// end saves it for the next sessions); "yes for this session" is not implied.
    fn remember_rule(&mut self, request: &ApprovalRequest) {
        let Some(text) = &request.suggested_rule else {
            return;
        };
        let base = permissions::RuleBase {
            project_dir: self.config.project_dir.clone(),
            home: std::env::var_os("HOME").map(std::path::PathBuf::from),
        };
        match permissions::PermissionRule::parse(text, &base, "this session") {
            Ok(rule) => self.config.permissions.add(RuleKind::Allow, rule),
            Err(error) => self.notice(error.to_string()),
        }
    }

    /// Puts `request` to the user (an event says a question waits); `Ok(None)` when nobody can
    /// answer. When someone can, the `permissionRequest` hooks hear of it first and may deny it
    /// (`Err(refusal)`: the user is not asked), then the `notification` hooks.
    pub(super) async fn ask(
        &mut self,
        request: &ApprovalRequest,
    ) -> Result<Option<ApprovalDecision>, String> {
        if self.approver.asks() {
            if let Some(refusal) = self.permission_request(request).await {
                return Err(refusal);
            }
            self.notify(
                NotificationKind::ApprovalNeeded,
                format!(
                    "{} waits for your approval: {}",
                    request.tool_name, request.reason
                ),
            )
            .await;
        }
        self.emit(AgentEvent::ApprovalNeeded {
            tool_call_id: request.tool_call_id.clone(),
            tool_name: request.tool_name.clone(),
            reason: request.reason.clone(),
        });
        Ok(self.approver.approve(request).await)
    }

    /// The permissionRequest hooks of a call that waits for the user. `Some(refusal)` when a hook
    /// denied it (or a fail-closed one could not decide): the user is not asked.
    async fn permission_request(&self, request: &ApprovalRequest) -> Option<String> {
        let dispatch = self
            .fire(HookEvent::PermissionRequest, Some(&request.tool_name), || {
                HookPayload::PermissionRequest(PermissionRequestPayload {
                    base: self.base(),
                    tool_name: request.tool_name.clone(),
                    tool_call_id: request.tool_call_id.clone(),
                    tool_input: request.input.clone(),
                    reason: request.reason.clone(),
                })
            })
            .await?;
        if let Some(failed) = dispatch.failed_closed() {
            return Some(format!("Tool call denied: {}.", failed.reason()));
        }
        PermissionRequest::reduced_of(&dispatch.reduced)
            .and_then(|reduced| reduced.denied.as_ref())
            .map(|verdict| {
                format!(
                    "Tool call {} before the user was asked.",
                    verdict.describe("denied")
                )
            })
    }

    async fn post_tool(&mut self, call: &ToolCall, input: Value, output: ToolOutput) -> ToolCallDone {
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        let post_tool = self.fire(event, Some(&call.name), || {
            let result = ToolResultPayload {
                base: self.base(),
                tool_name: call.name.clone(),
                tool_call_id: call.id.clone(),
                tool_input: input,
                content: output.content.clone(),
                details: output.details.clone(),
                is_error: output.is_error,
            };
            if output.is_error {
                PostToolUseFailure::payload(result)
            } else {
                PostToolUse::payload(result)
            }
        });
        let Some(dispatch) = post_tool.await else {
            return self.finish_call(call, output, true, false);
        };
        if let Some(failed) = dispatch.failed_closed() {
            // The result may hold what the hook was there to keep from the model.
            let text = format!(
                "The tool ran, but its result is withheld: a policy hook could not check it ({}).",
                failed.reason()
            );
            return self.finish_call(call, ToolOutput::error(text), true, false);
        }
        let reduced = PostToolUse::reduced_of(&dispatch.reduced)
            .or_else(|| PostToolUseFailure::reduced_of(&dispatch.reduced));
        match reduced {
            Some(result) => self.finish_call(
                call,
                ToolOutput {
                    content: result.content.clone(),
                    details: result.details.clone(),
                    is_error: result.is_error,
                },
                true,
                result.terminate,
            ),
            None => self.finish_call(call, output, true, false),
        }
    }
}

fn policy_name(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Auto => "auto",
        ApprovalPolicy::Ask => "ask",
        ApprovalPolicy::Deny => "deny",
    }
}
