//! The grid as Markdown tables, and the target report, as
//! `spindle tiers simulate` prints them.

use std::fmt::Write as _;

use super::targets::Check;
use super::{Cell, PolicyKind};

/// Markdown tables: per workload, the byte and the object hit ratio of
/// every policy at every exponent and size over the whole trace, then the
/// byte hit ratio in the steady state (after the warm-up).
pub fn tables(cells: &[Cell], policies: &[PolicyKind]) -> String {
    let mut out = String::new();
    for w in ["stationary", "shifting", "replay"] {
        let rows: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.workload == w && c.policy == policies[0])
            .collect();
        if rows.is_empty() {
            continue;
        }
        for (metric, get) in [
            (
                "byte hit ratio",
                (|c: &Cell| c.byte_hit_ratio) as fn(&Cell) -> f64,
            ),
            ("object hit ratio", |c: &Cell| c.object_hit_ratio),
            (
                "steady state (the first 20% of the requests not counted), byte hit ratio",
                |c: &Cell| c.steady_byte_hit_ratio,
            ),
        ] {
            let _ = writeln!(out, "\n{w} workload, {metric} (%):\n");
            let mut head = String::from("| s | hot |");
            let mut rule = String::from("|---|---|");
            for p in policies {
                let _ = write!(head, " {} |", p.name());
                rule.push_str("---|");
            }
            let _ = writeln!(out, "{head}\n{rule}");
            for r in &rows {
                let s = r.exponent.map_or("-".to_string(), |s| format!("{s}"));
                let _ = write!(out, "| {s} | {}% |", r.capacity * 100.0);
                for &p in policies {
                    let v = cells.iter().find(|c| {
                        c.workload == w
                            && c.policy == p
                            && c.exponent == r.exponent
                            && c.capacity == r.capacity
                    });
                    match v {
                        Some(c) if p == PolicyKind::Spindle => {
                            let _ = write!(out, " **{:.2}** |", 100.0 * get(c));
                        }
                        Some(c) => {
                            let _ = write!(out, " {:.2} |", 100.0 * get(c));
                        }
                        None => out.push_str(" - |"),
                    }
                }
                out.push('\n');
            }
        }
    }
    out
}

/// The target report: one line per target.
pub fn target_lines(checks: &[Check]) -> String {
    let mut out = String::from("Targets:\n");
    for c in checks {
        let verdict = match c.pass {
            Some(true) => "PASS",
            Some(false) => "MISS",
            None => "n/a",
        };
        let _ = writeln!(out, "- {verdict}: {} — {}", c.target, c.detail);
    }
    out
}
