//! The summary printed after divan's table: the figures of both phases side by side, with their
//! targets, the host's pieces, and where a hook event's time goes.

use super::measure::Phase;
use super::{Fixture, HOOKS, LOADED_TARGET, QUIET_TARGET, TOOL_CALLS};

/// Prints the figures of `phases` for `fixture`'s programs.
pub fn print(fixture: &Fixture, phases: &[Phase]) {
    println!();
    println!(
        "one persistent hook event vs a bare pipe round trip to the same program, in the same run \
         (medians of interleaved rounds, µs; marginal = in an agent run of {TOOL_CALLS} calls × \
         {HOOKS} hooks, minus the run without, per hook event):"
    );
    for Phase {
        name: phase,
        busy,
        load_before: before,
        load_after: after,
        ..
    } in phases
    {
        println!("  {phase}: {busy} busy loops, load average {before} at the start, {after} at the end");
    }
    println!(
        "  {:<9}  {:<6}  {:>6}  {:>13}  {:>13}  {:>20}  {:>8}  {:>15}",
        "program", "phase", "bare", "tokio pipe", "+ deadline", "host event", "host-bare", "marginal"
    );
    for (index, (name, _)) in fixture.programs.iter().enumerate() {
        for Phase {
            name: phase, figures, ..
        } in phases
        {
            let target = if *phase == "quiet" {
                QUIET_TARGET
            } else {
                LOADED_TARGET
            };
            let f = &figures[index].1;
            let verdict = |ratio: f64| if ratio <= target { "ok" } else { "MISSED" };
            println!(
                "  {name:<9}  {phase:<6}  {:>6.1}  {:>6.1} ({:.2}x)  {:>6.1} ({:.2}x)  {:>6.1} ({:.2}x {:<6})  {:>8.1}  {:>6.1} ({:.2}x)",
                f.bare,
                f.tokio,
                f.tokio / f.bare,
                f.deadline,
                f.deadline / f.bare,
                f.host,
                f.host / f.bare,
                verdict(f.host / f.bare),
                f.over,
                f.marginal,
                f.marginal / f.bare,
            );
        }
    }
    println!("  targets: host event <= {QUIET_TARGET}x bare quiet, <= {LOADED_TARGET}x loaded");
    println!();
    println!(
        "ten persistent hooks on one event, per hook event (µs; medians): the issue's figure is \
         the agent run's marginal, against a bare round trip to one process (`bare 1`) and to ten \
         processes woken in turn (`bare 10`), the same shape without Elph:"
    );
    println!(
        "  {:<9}  {:<6}  {:>6}  {:>7}  {:>16}  {:>23}  {:>34}",
        "program",
        "phase",
        "bare 1",
        "bare 10",
        "tokio 10",
        "chain of 10 (÷ bare 10)",
        "marginal (÷ bare 1, ÷ bare 10)"
    );
    for (index, (name, _)) in fixture.programs.iter().enumerate() {
        for Phase {
            name: phase, figures, ..
        } in phases
        {
            let target = if *phase == "quiet" {
                QUIET_TARGET
            } else {
                LOADED_TARGET
            };
            let f = &figures[index].1;
            let verdict = |ratio: f64| if ratio <= target { "ok" } else { "MISSED" };
            println!(
                "  {name:<9}  {phase:<6}  {:>6.1}  {:>7.1}  {:>7.1} ({:.2}x)  {:>7.1} ({:.2}x {:<6})  {:>7.1} ({:.2}x {:<6}, {:.2}x {:<6})",
                f.bare,
                f.bare_ten,
                f.tokio_ten,
                f.tokio_ten / f.bare_ten,
                f.chain_ten,
                f.chain_ten / f.bare_ten,
                verdict(f.chain_ten / f.bare_ten),
                f.marginal,
                f.marginal / f.bare,
                verdict(f.marginal / f.bare),
                f.marginal / f.bare_ten,
                verdict(f.marginal / f.bare_ten),
            );
        }
    }
    println!("  targets: marginal <= {QUIET_TARGET}x the bare round trip quiet, <= {LOADED_TARGET}x loaded");
    for Phase {
        name: phase, pieces, ..
    } in phases
    {
        let text: Vec<String> = pieces
            .iter()
            .map(|(what, us)| format!("{what} {us:.2}"))
            .collect();
        println!("  host pieces, {phase} (µs): {}", text.join(", "));
    }
    println!();
    println!(
        "where a hook event's time goes (µs per hook event, from /proc/PID/schedstat: Elph's \
         threads running, the hook processes running, either waiting for a CPU, and the rest, \
         when neither ran: wake-ups):"
    );
    println!(
        "  {:<9}  {:<6}  {:<24}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}",
        "program", "phase", "shape", "wall", "elph", "hooks", "waiting", "idle"
    );
    let shapes = [
        "bare, 1 process",
        "bare, 10 in turn",
        "tokio, 10 in turn",
        "chain of 10 (host)",
        "agent run, with − without",
    ];
    for (index, (name, _)) in fixture.programs.iter().enumerate() {
        for Phase {
            name: phase, figures, ..
        } in phases
        {
            for (shape, split) in shapes.iter().zip(&figures[index].1.splits) {
                println!(
                    "  {name:<9}  {phase:<6}  {shape:<24}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}  {:>7.1}",
                    split.wall,
                    split.elph,
                    split.hooks,
                    split.wait,
                    split.idle()
                );
            }
        }
    }
}
