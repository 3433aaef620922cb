//! `find_circuits`: circuits found the way people name them (panel and number, words of the
//! description) or ranked by a selector; the matching itself is the project's
//! ([`crate::project::analysis`]).

use std::collections::HashMap;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::describe_panel::circuit_row;
use super::schema::schema_for;
use super::{parse_args, Tool, ToolContext, ToolError};
use crate::project::analysis::{
    circuit_voltage_drop, parse_panel_and_number, resolve_circuit, resolve_panel, round,
    search_circuits, CircuitRef,
};
use crate::project::{Circuit, Panel};

/// How to rank circuits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Selector {
    /// Longest recorded length first.
    Longest,
    /// Highest load (VA) first.
    HighestLoad,
    /// Highest calculated voltage drop (%) first.
    WorstVoltageDrop,
    /// Largest breaker first.
    LargestBreaker,
    /// Circuits without a recorded length.
    MissingLength,
    /// Circuits without a recorded conductor size.
    MissingConductor,
    /// Continuous loads.
    Continuous,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// Free text: words of the description ("the EV charger", "kitchen receptacles") or a
    /// circuit name like "LP-1 #5" / "circuit 5 in LP-1".
    #[serde(default)]
    query: Option<String>,
    /// Only circuits of this panel.
    #[serde(default)]
    panel: Option<String>,
    /// Circuit number (with `panel`, or alone when only one panel has it).
    #[serde(default)]
    number: Option<i32>,
    /// Rank or filter: longest, highest_load, worst_voltage_drop, largest_breaker,
    /// missing_length, missing_conductor, continuous.
    #[serde(default)]
    selector: Option<Selector>,
    /// How many to return (default 10, at most 200).
    #[serde(default)]
    limit: Option<u32>,
}

/// Finds circuits by number, description words or a selector.
pub struct FindCircuits;

#[async_trait]
impl Tool for FindCircuits {
    fn name(&self) -> &'static str {
        "find_circuits"
    }
    fn description(&self) -> &'static str {
        "Find circuits of the project the way people name them: by panel and number (\"LP-1 #5\"), by \
         words of the description (\"the EV charger\"), or ranked by a selector (longest, highest_load, \
         worst_voltage_drop, largest_breaker, missing_length, missing_conductor, continuous). Each \
         result has the circuit's data plus its calculated current and voltage drop where known."
    }
    fn schema(&self) -> Value {
        schema_for::<FindArgs>()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let a: FindArgs = parse_args(&args)?;
        let p = ctx.project().await?;
        let limit = a.limit.unwrap_or(10).clamp(1, 200) as usize;
        let panel = match &a.panel {
            Some(n) => Some(resolve_panel(&p, n)?),
            None => None,
        };
        let panels: HashMap<i64, &Panel> = p.panels.iter().map(|x| (x.id, x)).collect();
        let mut notes: Vec<String> = Vec::new();

        // Exact names first: number, or "LP-1 #5" in the query.
        if a.number.is_some()
            || a.query
                .as_deref()
                .is_some_and(|q| parse_panel_and_number(&p, q).is_some())
        {
            let r = CircuitRef {
                panel: a.panel.clone(),
                number: a.number,
                description: if a.number.is_some() {
                    None
                } else {
                    a.query.clone()
                },
            };
            let (pn, c, n) = resolve_circuit(&p, &r)?;
            return Ok(json!({
                "matched": 1,
                "circuits": [circuit_row(&p, pn, c)],
                "notes": n,
            }));
        }

        let mut rows: Vec<(&Panel, &Circuit, f64)> = match a.query.as_deref() {
            Some(q) if !q.trim().is_empty() => {
                let found = search_circuits(&p, q, panel);
                if found.is_empty() {
                    return Err(ToolError::NotFound(format!(
                        "no circuit{} matches '{}'",
                        panel
                            .map(|x| format!(" of panel {}", x.spec.name))
                            .unwrap_or_default(),
                        q.trim()
                    )));
                }
                let best = found[0].score;
                if best < 1.0 {
                    notes.push("no circuit has every word; showing partial matches".into());
                }
                found
                    .into_iter()
                    .map(|c| (c.panel, c.circuit, c.score))
                    .collect()
            }
            _ => p
                .circuits
                .iter()
                .filter(|c| panel.is_none_or(|x| x.id == c.panel_id))
                .filter_map(|c| panels.get(&c.panel_id).map(|pn| (*pn, c, 1.0)))
                .collect(),
        };

        if let Some(sel) = a.selector {
            let before = rows.len();
            match sel {
                Selector::Longest => {
                    rows.retain(|(_, c, _)| c.spec.length.is_some());
                    rows.sort_by(|x, y| {
                        let lx = x.1.spec.length.map(|l| l.0).unwrap_or(0.0);
                        let ly = y.1.spec.length.map(|l| l.0).unwrap_or(0.0);
                        ly.total_cmp(&lx)
                    });
                    if rows.len() < before {
                        notes.push(format!(
                            "{} circuit(s) have no recorded length and were not ranked",
                            before - rows.len()
                        ));
                    }
                }
                Selector::HighestLoad => {
                    rows.sort_by(|x, y| y.1.spec.load_va.0.total_cmp(&x.1.spec.load_va.0))
                }
                Selector::LargestBreaker => {
                    rows.sort_by(|x, y| y.1.spec.breaker.0.total_cmp(&x.1.spec.breaker.0))
                }
                Selector::WorstVoltageDrop => {
                    let mut with: Vec<(&Panel, &Circuit, f64)> = rows
                        .iter()
                        .filter_map(|(pn, c, _)| {
                            circuit_voltage_drop(&pn.spec, &c.spec, None, None)
                                .ok()
                                .map(|r| (*pn, *c, r.percent))
                        })
                        .collect();
                    with.sort_by(|x, y| y.2.total_cmp(&x.2));
                    if with.len() < before {
                        notes.push(format!(
                            "{} circuit(s) lack a length, conductor size or load, so their drop is unknown and they were not ranked",
                            before - with.len()
                        ));
                    }
                    rows = with;
                }
                Selector::MissingLength => rows.retain(|(_, c, _)| c.spec.length.is_none()),
                Selector::MissingConductor => {
                    rows.retain(|(_, c, _)| c.spec.conductor_size.is_none())
                }
                Selector::Continuous => rows.retain(|(_, c, _)| c.spec.continuous),
            }
        }
        let matched = rows.len();
        let circuits: Vec<Value> = rows
            .iter()
            .take(limit)
            .map(|(pn, c, score)| {
                let mut v = circuit_row(&p, pn, c);
                if a.query.is_some() {
                    v["match_score"] = json!(round(*score, 2));
                }
                v
            })
            .collect();
        if matched > limit {
            notes.push(format!(
                "showing {limit} of {matched}; raise `limit` for more"
            ));
        }
        Ok(json!({ "matched": matched, "circuits": circuits, "notes": notes }))
    }
}
