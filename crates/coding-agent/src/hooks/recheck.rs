//! Guards see what goes on (docs/hooks.md, "Guards see what runs"): when a hook later in the
//! chain changes what a fail-closed guard let through — a rewritten `toolInput`, replaced
//! messages, a replaced result or prompt — the guard runs again on what goes on now.
//!
//! After the chain's pass in configuration order, every fail-closed guard that matches the
//! payload as it is now, and let through something else (or never saw it), runs again, in
//! configuration order, on the payload as it is now. A guard may rewrite too, which can make an
//! earlier guard stale again, so this repeats until no guard is stale, at most
//! [`MAX_GUARD_RECHECK_ROUNDS`] times; a payload still changing after that is a failure of the
//! stale guard, and as it is fail-closed, what it guards does not go on.

use std::collections::HashMap;

use elph_agent::hooks::limits::MAX_GUARD_RECHECK_ROUNDS;
use elph_agent::hooks::{HookPayload, HookRun, Ran, Reducer, RunStatus};

use super::discovery::{HookDefinition, HookSet};
use super::host::{HookHost, Pass};

/// The payload each fail-closed guard let through (after its own outcome), by hook id.
#[derive(Default)]
pub(super) struct Guarded(HashMap<String, HookPayload>);

impl Guarded {
    /// Remembers what `hook` let through, if it is a guard that is waited for.
    pub(super) fn saw(&mut self, hook: &HookDefinition, payload: &HookPayload) {
        if is_guard(hook) {
            self.0.insert(hook.id.clone(), payload.clone());
        }
    }

    /// The guards among `hooks` that match `payload` (its tool and, with `matcher.input`, its
    /// input as it is now) and let through something else, in order.
    fn stale<'a>(&self, hooks: &[&'a HookDefinition], payload: &HookPayload) -> Vec<&'a HookDefinition> {
        hooks
            .iter()
            .copied()
            .filter(|hook| {
                is_guard(hook)
                    && hook.applies_to(payload.event(), payload.tool_name())
                    && hook.matcher.matches_payload(payload)
            })
            .filter(|hook| self.0.get(&hook.id) != Some(payload))
            .collect()
    }
}

/// A fail-closed hook whose answer is waited for.
fn is_guard(hook: &HookDefinition) -> bool {
    hook.fail_closed && !hook.run_async
}

impl HookHost {
    /// Runs again, on the payload as it is now, every guard that let through something the
    /// hooks after it changed, until none is stale (see the module's comment).
    pub(super) async fn recheck_guards(
        &self,
        // Every enabled hook: a guard the first payload did not match may match the new one.
        set: &HookSet,
        mut guarded: Guarded,
        session_id: &str,
        chain: &mut Reducer,
        ran: &mut Ran,
        pass: &mut Pass<'_>,
    ) {
        if guarded.0.is_empty() {
            return;
        }
        let hooks: Vec<&HookDefinition> = set.active().collect();
        let hooks = hooks.as_slice();
        for _ in 0..MAX_GUARD_RECHECK_ROUNDS {
            let stale = guarded.stale(hooks, chain.payload());
            if stale.is_empty() {
                return;
            }
            for hook in stale {
                let changed_by = changed_since(ran, &hook.id);
                let Some(mut run) = self
                    .run_one(hook, chain.payload().event(), session_id, chain, pass)
                    .await
                else {
                    continue;
                };
                run.notes.push(format!(
                    "ran again: {changed_by} changed what it had let through, so it checked the new one"
                ));
                if self.finish_run(run, chain, ran, pass) {
                    return;
                }
                guarded.saw(hook, chain.payload());
            }
        }
        let Some(hook) = guarded.stale(hooks, chain.payload()).into_iter().next() else {
            return;
        };
        let event = chain.payload().event();
        let mut run = HookRun::skipped(
            &hook.id,
            event,
            format!(
                "the hooks kept changing the {event} payload: after {MAX_GUARD_RECHECK_ROUNDS} \
                 rounds of checking it again, it still differed from what this guard let through"
            ),
        );
        run.status = RunStatus::Failed;
        run.fail_closed = true;
        self.finish_run(run, chain, ran, pass);
    }
}

/// Who changed the payload since `hook_id`'s last run, in words: the hooks that ran after it and
/// recorded an effect.
fn changed_since(ran: &Ran, hook_id: &str) -> String {
    let last = ran.runs.iter().rposition(|run| run.hook_id == hook_id);
    let after = last.map_or(&ran.runs[..], |index| &ran.runs[index + 1..]);
    let changers: Vec<String> = after
        .iter()
        .filter(|run| !run.effects.is_empty())
        .map(|run| format!("'{}'", run.hook_id))
        .collect();
    match changers.as_slice() {
        [] => "a later hook".to_string(),
        [one] => format!("hook {one}"),
        many => format!("hooks {}", many.join(", ")),
    }
}
