//! Compaction: summarize the older part of the transcript through the provider, keep the recent part
//! verbatim, and let preCompact cancel it or change its instructions.

use elph_ai::{Request, StreamEvent};
use tokio_util::sync::CancellationToken;

use super::transcript::Entry;
use super::{AgentEvent, AgentHarness, TurnScope, unless_cancelled};
use crate::hooks::Listed;
use crate::hooks::events::post_compact::PostCompactPayload;
use crate::hooks::events::pre_compact::{CompactTrigger, PreCompact, PreCompactPayload};
use crate::hooks::runner::Dispatch;
use crate::hooks::{HookEvent, HookPayload};
use crate::messages::Message;

/// When and how a session compacts its context.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionSettings {
    /// Compact automatically when the context reaches this share of the model's window.
    pub threshold: f64,
    /// Messages kept verbatim after a compaction (at least; the cut falls on a user message).
    pub keep_recent: usize,
    /// Whether to compact on reaching `threshold`; `/compact` works either way.
    pub auto: bool,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            threshold: 0.8,
            keep_recent: 6,
            auto: true,
        }
    }
}

/// What one compaction did, for the front end to report.
#[derive(Clone, Debug, PartialEq)]
pub enum CompactOutcome {
    /// Older entries were replaced by a summary.
    Compacted {
        /// How many stored entries the summary replaced.
        entries_compacted: u64,
    },
    /// A preCompact hook cancelled it.
    CancelledByHook {
        /// The hook that cancelled it.
        hook_id: String,
    },
    /// The user cancelled the turn while it ran.
    Interrupted,
    /// The transcript is too short to have anything before the recent part.
    NothingToCompact,
    /// The summary request failed; the transcript is unchanged. Holds the error.
    Failed(String),
}

const SUMMARY_SYSTEM_PROMPT: &str = "You summarize a coding agent's conversation so that the work can go on with \
less context. Keep what matters for continuing: the user's goals, decisions, file paths, commands run and their \
results, errors, and open tasks. Write plain prose and short lists; no preamble.";

/// Longest text of one message put into a summarizing request.
const MAX_RENDERED_MESSAGE_CHARS: usize = 4000;

impl AgentHarness {
    /// Tokens the next request is expected to use: the provider's last count, or an estimate.
    pub fn context_tokens(&self) -> u64 {
        let chars: usize = self.config.system_prompt.len()
            + self
                .transcript
                .context_messages()
                .iter()
                .map(|message| {
                    let calls = match message {
                        Message::Assistant { tool_calls, .. } => tool_calls
                            .iter()
                            .map(|call| call.input.to_string().len() + call.name.len())
                            .sum(),
                        _ => 0,
                    };
                    message.content().text().len() + calls
                })
                .sum::<usize>();
        let estimate = (chars / 4) as u64;
        match self.last_usage {
            // Saturating: the counts are the server's word (u64::MAX from a broken server overflowed).
            Some(usage) => estimate.max(usage.input_tokens.saturating_add(usage.output_tokens)),
            None => estimate,
        }
    }

    pub(super) async fn compact_if_needed(
        &mut self,
        _scope: &TurnScope,
        cancel: &CancellationToken,
    ) -> Option<CompactOutcome> {
        let settings = &self.config.compaction;
        if !settings.auto {
            return None;
        }
        let window = self.provider.context_window().max(1);
        if (self.context_tokens() as f64) < settings.threshold * window as f64 {
            return None;
        }
        let outcome = self.compact(CompactTrigger::Auto, None, cancel).await;
        match &outcome {
            CompactOutcome::CancelledByHook { hook_id } => {
                self.notice(format!(
                    "compaction cancelled by hook '{hook_id}'; the turn goes on uncompacted"
                ));
            }
            CompactOutcome::Failed(error) => {
                self.notice(format!(
                    "compaction failed ({error}); the turn goes on uncompacted"
                ));
            }
            _ => {}
        }
        Some(outcome)
    }

    /// Compacts now (the manual `/compact`, or the automatic trigger).
    pub async fn compact(
        &mut self,
        trigger: CompactTrigger,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> CompactOutcome {
        let live = self.transcript.live_messages();
        let keep = self.config.compaction.keep_recent;
        let user_positions: Vec<usize> = live
            .iter()
            .enumerate()
            .filter(|(position, (_, message))| *position > 0 && matches!(message, Message::User { .. }))
            .map(|(position, _)| position)
            .collect();
        let limit = live.len().saturating_sub(keep);
        let Some(cut) = user_positions
            .iter()
            .rev()
            .find(|position| **position <= limit)
            .or(user_positions.last())
            .copied()
        else {
            return CompactOutcome::NothingToCompact;
        };
        let first_kept = live[cut].0;
        let older: Vec<Message> = live[..cut]
            .iter()
            .map(|(_, message)| (*message).clone())
            .collect();
        let entries_compacted = older.len() as u64;

        let dispatch = self.fire(HookEvent::PreCompact, None, || {
            HookPayload::PreCompact(PreCompactPayload {
                base: self.base(),
                trigger,
                entry_count: entries_compacted,
                custom_instructions: instructions.clone(),
            })
        });
        let Some(dispatch) = unless_cancelled(cancel, dispatch).await else {
            return CompactOutcome::Interrupted;
        };
        if let Some(failed) = dispatch.as_ref().and_then(Dispatch::failed_closed) {
            return CompactOutcome::CancelledByHook {
                hook_id: failed.hook_id,
            };
        }
        let mut instructions = instructions;
        if let Some(reduced) = dispatch
            .as_ref()
            .and_then(|dispatch| PreCompact::reduced_of(&dispatch.reduced))
        {
            if let Some(verdict) = &reduced.cancelled {
                return CompactOutcome::CancelledByHook {
                    hook_id: verdict.hook_id.clone(),
                };
            }
            instructions = reduced.custom_instructions.clone();
        }

        let mut prompt = String::from("Summarize this conversation:\n\n");
        prompt.push_str(&render(self.transcript_summary_prefix().as_deref(), &older));
        if let Some(instructions) = &instructions {
            prompt.push_str("\n\nInstructions for the summary: ");
            prompt.push_str(instructions);
        }
        let request = Request {
            system_prompt: SUMMARY_SYSTEM_PROMPT.to_string(),
            messages: vec![Message::user(prompt)],
            tools: Vec::new(),
            max_tokens: None,
        };
        let provider = self.provider.clone();
        let mut ignore = |_event: StreamEvent| {};
        let summary = match unless_cancelled(cancel, provider.stream(&request, &mut ignore)).await {
            None => return CompactOutcome::Interrupted,
            Some(Err(err)) => return CompactOutcome::Failed(err.to_string()),
            Some(Ok(turn)) if turn.text.trim().is_empty() => {
                return CompactOutcome::Failed("the model returned an empty summary".into());
            }
            Some(Ok(turn)) => turn.text,
        };
        if let Err(err) = self.transcript.push(Entry::Summary {
            summary,
            entries_compacted,
            first_kept,
        }) {
            self.notice(format!("could not store the compaction summary: {err}"));
            self.storage_error.get_or_insert(err);
        }
        // The provider's last count described the uncompacted context.
        self.last_usage = None;
        self.fire(HookEvent::PostCompact, None, || {
            HookPayload::PostCompact(PostCompactPayload {
                base: self.base(),
                trigger,
                entries_compacted,
            })
        })
        .await;
        self.emit(AgentEvent::Compacted { entries_compacted });
        CompactOutcome::Compacted { entries_compacted }
    }

    /// The previous summary, which the new one must carry forward.
    fn transcript_summary_prefix(&self) -> Option<String> {
        self.transcript
            .entries()
            .iter()
            .rev()
            .find_map(|entry| match entry {
                Entry::Summary { summary, .. } => Some(summary.clone()),
                Entry::Message { .. } | Entry::PromptReplaced { .. } => None,
            })
    }
}

fn render(previous_summary: Option<&str>, messages: &[Message]) -> String {
    let mut out = String::new();
    if let Some(summary) = previous_summary {
        out.push_str("Earlier summary:\n");
        out.push_str(summary);
        out.push_str("\n\n");
    }
    for message in messages {
        let mut text = message.content().text();
        if text.len() > MAX_RENDERED_MESSAGE_CHARS {
            let mut end = MAX_RENDERED_MESSAGE_CHARS;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(" […]");
        }
        match message {
            Message::User { .. } => out.push_str(&format!("User: {text}\n")),
            Message::Assistant { tool_calls, .. } => {
                out.push_str(&format!("Assistant: {text}\n"));
                for call in tool_calls {
                    out.push_str(&format!("  (called {} with {})\n", call.name, call.input));
                }
            }
            Message::Tool { is_error, .. } => {
                let label = if *is_error { "Tool error" } else { "Tool result" };
                out.push_str(&format!("{label}: {text}\n"));
            }
        }
    }
    out
}
