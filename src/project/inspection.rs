//! `run_inspection`: rule checks over the whole project, one category or one panel.
//!
//! Every finding has a severity (`violation`, `warning`, `info`), the equipment it concerns,
//! the NEC reference and a suggested fix. The checks:
//!
//! | id | category | reference | what |
//! |----|----------|-----------|------|
//! | `interrupting_rating` | interrupting | 110.9, 110.10 | panel interrupting rating (kA) ≥ available fault current at the panel, from the service's available fault current or a transformer secondary (infinite primary), reduced point-to-point over recorded feeders (nonmagnetic raceway C values: the higher current). Fully rated equipment; series ratings (240.86) are not considered. |
//! | `branch_conductor_ampacity` | conductors | 210.19(A)(1), 210.20(A), 110.14(C) | branch conductor ampacity (terminal column) ≥ 125 % continuous + noncontinuous; corrected ampacity ≥ load; breaker ≥ 125 % continuous + noncontinuous. A failure that disappears with 75 °C terminals is a warning (equipment may be listed for 75 °C). |
//! | `conductor_protection` | conductors | 240.4, 240.4(B) | breaker ≤ conductor ampacity (next standard size up only where 240.4(B) allows it). A circuit with a recorded motor is judged by Article 430 instead (240.4(G), [`crate::project::circuit_protection`]): conductor ≥ 125 % of the table FLC (430.22, reported under `branch_conductor_ampacity`), device ≤ Table 430.52 with Exception No. 1 (above it and within Exception No. 2: warning). |
//! | `small_conductor` | conductors | 240.4(D) | 14/12/10 AWG copper (12/10 Al) on more than 15/20/30 A (Al 15/25). |
//! | `feeder_conductor` | conductors | 215.2(A)(1), 215.3, 240.4 | feeder ampacity (per set, × sets) against its OCPD and the connected load of the panel it feeds. |
//! | `egc_size` | grounding | 250.122(A), 250.122(B) | an EGC size written in the raceway text ("3/4 PVC, #10 EGC") is at least Table 250.122 for the breaker, increased proportionally when the conductors were upsized; metallic raceways (250.118) and cables are accepted; circuits with nothing recorded are counted per panel (info). Feeders: the recorded `egc_size` against Table 250.122 for the feeder OCPD (in each raceway of a parallel set), increased by the ratio of installed to minimum ungrounded conductor area (the minimum being the smallest size per set the OCPD needs); a violation with the size to install, or info when not recorded. |
//! | `panel_loading` | panels | 408.30, 215.3, 230.42(A) | highest phase with continuous loads at 125 % ≤ bus and main; above 80 % of the limit is info; three-phase imbalance over 10 % is info. |
//! | `panel_protection` | panels | 408.36 | main breaker (or, main-lug-only, the feeder OCPD) not above the bus rating. |
//! | `panel_spaces` | panels | 408.54 | circuits inside the panel's spaces, no slot used twice, poles that fit the panel. |
//! | `circuit_voltage_drop` | voltage_drop | 210.19(A) Informational Note No. 4 | branch-circuit drop above 3 % (a recommendation, reported as a warning). |
//! | `feeder_voltage_drop` | voltage_drop | 215.2(A) Informational Note No. 2 | feeder drop above 3 %, and feeder + branch above 5 %. |
//! | `missing_data` | missing_data | — | no service or no available fault current, panels without interrupting rating or fed_from (or fed from unknown equipment), circuits without conductor size or length, feeders without length. |
//!
//! The inspection is a pure function over [`ProjectData`] ([`inspect`]), so it can be
//! benchmarked and tested without a database.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::analysis::{
    circuit_conductor_input, circuit_electrical, circuit_label, circuit_voltage_drop,
    feeder_drops_to_panel, feeder_load_current, feeder_voltage_drop, is_service, panel_loading,
    resolve_panel, slots, FaultCalculator,
};
use super::AnalysisError;
use crate::nec::conductors::{self, ConductorCheckResult, ConductorSizingInput};
use crate::nec::grounding::{self, EgcInput};
use crate::nec::tables::{self, DeviceKind};
use crate::nec::units::{Amps, ConductorSize, Phase, TempRating};
use crate::project::circuit_protection::ProtectionRule;
use crate::project::feeder_egc::check_feeder_egc;
use crate::project::{Circuit, CircuitSpec, Feeder, Panel, ProjectData};

/// How serious a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks a mandatory rule.
    Violation,
    /// Probably wrong, or a recommendation not met, or a check that could not be completed.
    Warning,
    /// Worth knowing.
    Info,
}

/// Group of checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Interrupting ratings against available fault current.
    Interrupting,
    /// Conductor ampacity and overcurrent protection.
    Conductors,
    /// Equipment grounding conductors.
    Grounding,
    /// Panel loading, protection and spaces.
    Panels,
    /// Voltage drop.
    VoltageDrop,
    /// Data the checks need but the project lacks.
    MissingData,
}

/// One documented check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckDoc {
    /// Stable id.
    pub id: &'static str,
    /// Its category.
    pub category: Category,
    /// NEC reference.
    pub reference: &'static str,
    /// What it checks.
    pub description: &'static str,
}

/// Every check the inspection runs (the same list as the module documentation).
pub const CHECKS: &[CheckDoc] = &[
    CheckDoc { id: "interrupting_rating", category: Category::Interrupting, reference: "NEC 110.9, 110.10", description: "panel interrupting rating >= available fault current at the panel (service or transformer, point-to-point over recorded feeders)" },
    CheckDoc { id: "branch_conductor_ampacity", category: Category::Conductors, reference: "NEC 210.19(A)(1), 210.20(A), 110.14(C)", description: "branch conductor ampacity >= 125 % continuous + noncontinuous at the terminal column; breaker >= 125 % continuous + noncontinuous" },
    CheckDoc { id: "conductor_protection", category: Category::Conductors, reference: "NEC 240.4, 240.4(B); motors 430.52", description: "breaker <= conductor ampacity (next size up only where 240.4(B) allows); motor circuits: Table 430.52 with Exceptions 1 and 2 (240.4(G))" },
    CheckDoc { id: "small_conductor", category: Category::Conductors, reference: "NEC 240.4(D)", description: "14/12/10 AWG copper on at most 15/20/30 A (aluminum 12/10 AWG on 15/25 A)" },
    CheckDoc { id: "feeder_conductor", category: Category::Conductors, reference: "NEC 215.2(A)(1), 215.3, 240.4", description: "feeder ampacity against its OCPD and the load of the panel it feeds" },
    CheckDoc { id: "egc_size", category: Category::Grounding, reference: "NEC 250.122(A), 250.122(B)", description: "recorded EGC >= Table 250.122 for the breaker, increased when conductors are upsized" },
    CheckDoc { id: "panel_loading", category: Category::Panels, reference: "NEC 408.30, 215.3, 230.42(A)", description: "highest phase (continuous at 125 %) <= bus and main; >80 % and >10 % imbalance reported as info" },
    CheckDoc { id: "panel_protection", category: Category::Panels, reference: "NEC 408.36", description: "main breaker or feeder OCPD not above the bus rating" },
    CheckDoc { id: "panel_spaces", category: Category::Panels, reference: "NEC 408.54", description: "circuits inside the panel's spaces, no slot used twice, poles that fit the panel" },
    CheckDoc { id: "circuit_voltage_drop", category: Category::VoltageDrop, reference: "NEC 210.19(A) Informational Note No. 4", description: "branch-circuit voltage drop above 3 %" },
    CheckDoc { id: "feeder_voltage_drop", category: Category::VoltageDrop, reference: "NEC 215.2(A) Informational Note No. 2", description: "feeder drop above 3 %; feeder + branch above 5 %" },
    CheckDoc { id: "missing_data", category: Category::MissingData, reference: "-", description: "service / fault current, panel AIC and fed_from, circuit conductor size and length, feeder length" },
];

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Id of the check ([`CHECKS`]).
    pub check: &'static str,
    /// Its category.
    pub category: Category,
    /// How serious.
    pub severity: Severity,
    /// Equipment concerned ("LP-1 #5 (EV charger)", "panel LP-1", "feeder F1").
    pub equipment: String,
    /// NEC reference.
    pub reference: String,
    /// What is wrong, with numbers.
    pub message: String,
    /// What would fix it.
    pub fix: String,
}

/// What to inspect.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectOptions {
    /// Only this category: interrupting, conductors, grounding, panels, voltage_drop, missing_data.
    #[serde(default)]
    pub category: Option<Category>,
    /// Only this panel (its circuits, the feeder to it and its fault current).
    #[serde(default)]
    pub panel: Option<String>,
}

/// Findings by severity.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Violations.
    pub violations: usize,
    /// Warnings.
    pub warnings: usize,
    /// Info.
    pub info: usize,
}

/// The inspection's result.
#[derive(Debug, Clone, Serialize)]
pub struct InspectionReport {
    /// Project name.
    pub project: String,
    /// What was inspected.
    pub scope: String,
    /// Ids of the checks run.
    pub checks_run: Vec<&'static str>,
    /// Counts by severity.
    pub counts: Counts,
    /// Per check: items checked, passed, failed and not checked (with why).
    pub check_summary: Vec<CheckTally>,
    /// Findings, violations first.
    pub findings: Vec<Finding>,
    /// Assumptions every check relies on.
    pub assumptions: Vec<String>,
}

/// Equipment a check could not be run on, grouped by why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotRun {
    /// Why the check did not run.
    pub why: String,
    /// Equipment concerned.
    pub equipment: Vec<String>,
}

/// What one check did: on how many items it ran, passed and failed (a violation or warning),
/// and where it could not run. A check with `not_run > 0` is never clean.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckTally {
    /// Id of the check ([`CHECKS`]).
    pub check: &'static str,
    /// Its category.
    pub category: Category,
    /// Items it ran on.
    pub run: usize,
    /// Items that passed.
    pub passed: usize,
    /// Items with a violation or warning.
    pub failed: usize,
    /// Items it could not run on.
    pub not_run: usize,
    /// Why, with the items.
    pub not_run_why: Vec<NotRun>,
}

impl CheckTally {
    /// One line: "interrupting_rating: 2 run, 1 passed, 1 failed, 1 not run (why: items)".
    pub fn line(&self) -> String {
        let mut l = format!(
            "{}: {} run, {} passed, {} failed, {} not run",
            self.check, self.run, self.passed, self.failed, self.not_run
        );
        if !self.not_run_why.is_empty() {
            let why: Vec<String> = self
                .not_run_why
                .iter()
                .map(|n| {
                    let shown: Vec<&str> = n.equipment.iter().take(5).map(String::as_str).collect();
                    let more = n.equipment.len().saturating_sub(shown.len());
                    format!(
                        "{}: {}{}",
                        n.why,
                        shown.join(", "),
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    )
                })
                .collect();
            l.push_str(&format!(" ({})", why.join("; ")));
        }
        l
    }
}

/// The one-line summary of a report: severities, then what the checks did; a report with a
/// check that did not run says so instead of reading as clean.
pub fn summary_line(report: &InspectionReport) -> String {
    let sum = |f: fn(&CheckTally) -> usize| report.check_summary.iter().map(f).sum::<usize>();
    let not_run = sum(|t| t.not_run);
    format!(
        "{} violation(s), {} warning(s), {} info; checks: {} run, {} passed, {} failed, {} not run{}",
        report.counts.violations,
        report.counts.warnings,
        report.counts.info,
        sum(|t| t.run),
        sum(|t| t.passed),
        sum(|t| t.failed),
        not_run,
        if not_run > 0 {
            " (not a clean result: some checks could not run; see check_summary)"
        } else {
            ""
        }
    )
}

#[derive(Default)]
struct Tally {
    ran: BTreeSet<String>,
    /// Equipment → why the check did not run on it.
    not_run: BTreeMap<String, String>,
}

struct Ctx<'a> {
    p: &'a ProjectData,
    category: Option<Category>,
    findings: Vec<Finding>,
    tally: BTreeMap<&'static str, Tally>,
}

fn category_of(check: &str) -> Category {
    CHECKS
        .iter()
        .find(|c| c.id == check)
        .map(|c| c.category)
        .unwrap_or(Category::MissingData)
}

impl Ctx<'_> {
    fn wants(&self, c: Category) -> bool {
        self.category.is_none_or(|x| x == c)
    }
    /// `check` ran on `equipment` (its findings say whether it passed).
    fn ran(&mut self, check: &'static str, equipment: &str) {
        if self.wants(category_of(check)) {
            self.tally
                .entry(check)
                .or_default()
                .ran
                .insert(equipment.to_string());
        }
    }
    /// `check` could not run on `equipment`.
    fn not_run(&mut self, check: &'static str, equipment: &str, why: impl Into<String>) {
        if self.wants(category_of(check)) {
            let t = self.tally.entry(check).or_default();
            t.ran.remove(equipment);
            t.not_run.insert(equipment.to_string(), why.into());
        }
    }
    /// The tally of every check in scope, from what ran and the findings.
    fn summary(&self) -> Vec<CheckTally> {
        CHECKS
            .iter()
            .filter(|c| self.wants(c.category))
            .map(|c| {
                let empty = Tally::default();
                let t = self.tally.get(c.id).unwrap_or(&empty);
                let serious = self.findings.iter().filter(|f| {
                    f.check == c.id && matches!(f.severity, Severity::Violation | Severity::Warning)
                });
                // Missing data is one look at the whole scope.
                let failed: BTreeSet<String> = if c.id == "missing_data" {
                    serious.take(1).map(|_| "scope".to_string()).collect()
                } else {
                    serious
                        .map(|f| f.equipment.clone())
                        .filter(|e| !t.not_run.contains_key(e))
                        .collect()
                };
                let run = if c.id == "missing_data" {
                    1
                } else {
                    t.ran.union(&failed).count()
                };
                let mut why: BTreeMap<&str, Vec<String>> = BTreeMap::new();
                for (eq, w) in &t.not_run {
                    why.entry(w.as_str()).or_default().push(eq.clone());
                }
                CheckTally {
                    check: c.id,
                    category: c.category,
                    run,
                    passed: run - failed.len(),
                    failed: failed.len(),
                    not_run: t.not_run.len(),
                    not_run_why: why
                        .into_iter()
                        .map(|(w, equipment)| NotRun {
                            why: w.to_string(),
                            equipment,
                        })
                        .collect(),
                }
            })
            .collect()
    }
    fn add(
        &mut self,
        check: &'static str,
        severity: Severity,
        equipment: impl Into<String>,
        reference: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        let category = category_of(check);
        if self.wants(category) {
            self.findings.push(Finding {
                check,
                category,
                severity,
                equipment: equipment.into(),
                reference: reference.into(),
                message: message.into(),
                fix: fix.into(),
            });
        }
    }
}

/// The checks made on each branch circuit.
const CIRCUIT_CHECKS: [&str; 5] = [
    "branch_conductor_ampacity",
    "conductor_protection",
    "small_conductor",
    "egc_size",
    "circuit_voltage_drop",
];

/// Common equipment short-circuit ratings, kA, for the suggested fix.
const AIC_STEPS: &[f64] = &[
    10.0, 14.0, 18.0, 22.0, 25.0, 35.0, 42.0, 50.0, 65.0, 85.0, 100.0, 125.0, 150.0, 200.0,
];

fn next_aic(ka: f64) -> f64 {
    AIC_STEPS
        .iter()
        .copied()
        .find(|r| *r + 1e-9 >= ka)
        .unwrap_or(ka.ceil())
}

fn egc_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        // "#10 EGC", "10 AWG G", "1#12G", "EGC #10", "ground 6".
        Regex::new(
            r"(?i)(?:#\s*)?\b(\d{1,2}/0|\d{1,4})\s*(?:awg\s*)?(?:cu\s*|al\s*)?(?:egc|gnd|grnd|ground|g)\b|\b(?:egc|gnd|ground)\s*[:=]?\s*#?\s*(\d{1,2}/0|\d{1,4})\b",
        )
        .ok()
    })
    .as_ref()
}

/// An EGC size written in the raceway text, if any.
pub fn recorded_egc(conduit: &str) -> Option<ConductorSize> {
    let caps = egc_regex()?.captures(conduit)?;
    let m = caps.get(1).or_else(|| caps.get(2))?;
    m.as_str().parse().ok()
}

/// What the raceway text says about the EGC path.
fn raceway_is_egc(conduit: &str) -> bool {
    let t = conduit.to_ascii_uppercase();
    ["EMT", "RMC", "IMC", "GRC", "RIGID"]
        .iter()
        .any(|w| t.contains(w))
        || ["NM", "MC", "UF", "AC CABLE", "SE", "CABLE", "ROMEX"]
            .iter()
            .any(|w| {
                t.split(|c: char| !c.is_ascii_alphanumeric())
                    .any(|tok| tok == *w)
                    || (w.contains(' ') && t.contains(w))
            })
}

fn check_id_for_rule(rule: &str) -> (&'static str, String) {
    if rule.starts_with("240.4(D)") {
        ("small_conductor", "NEC 240.4(D)".into())
    } else if rule.starts_with("240.4") {
        ("conductor_protection", format!("NEC {rule}"))
    } else if rule.starts_with("210.19(A)(1)(a)") {
        (
            "branch_conductor_ampacity",
            "NEC 210.19(A)(1)(a), 110.14(C)".into(),
        )
    } else if rule.starts_with("210.19(A)(1)(b)") {
        (
            "branch_conductor_ampacity",
            "NEC 210.19(A)(1)(b), 310.15".into(),
        )
    } else if rule.starts_with("210.20(A)") {
        ("branch_conductor_ampacity", "NEC 210.20(A)".into())
    } else {
        ("branch_conductor_ampacity", format!("NEC {rule}"))
    }
}

fn feeder_reference(rule: &str) -> String {
    if rule.starts_with("240.4") {
        format!("NEC {rule}")
    } else if rule.starts_with("210.19(A)(1)(a)") {
        "NEC 215.2(A)(1)(a), 110.14(C)".into()
    } else if rule.starts_with("210.19(A)(1)(b)") {
        "NEC 215.2(A)(1)(b), 310.15".into()
    } else if rule.starts_with("210.20(A)") {
        "NEC 215.3".into()
    } else {
        format!("NEC {rule}")
    }
}

/// Runs the checks over `p`. Errors only when `opts.panel` names no panel.
pub fn inspect(p: &ProjectData, opts: &InspectOptions) -> Result<InspectionReport, AnalysisError> {
    let only: Option<&Panel> = match &opts.panel {
        Some(n) => Some(resolve_panel(p, n)?),
        None => None,
    };
    let mut cx = Ctx {
        p,
        category: opts.category,
        findings: Vec::new(),
        tally: BTreeMap::new(),
    };
    let mut by_panel: HashMap<i64, Vec<&Circuit>> = HashMap::new();
    for c in &p.circuits {
        by_panel.entry(c.panel_id).or_default().push(c);
    }
    for v in by_panel.values_mut() {
        v.sort_by_key(|c| c.spec.number);
    }
    let panels: Vec<&Panel> = match only {
        Some(x) => vec![x],
        None => p.panels.iter().collect(),
    };

    if only.is_none() {
        service_checks(&mut cx);
    }
    // 110.9/110.10 is an interrupting-rating question: a feeder without a C value gives an
    // upper bound (a pass against it is a pass), not a stop.
    let mut fc = FaultCalculator::new(p).upper_bound_when_c_unknown();
    // Reasons a fault current is unknown, with the panels concerned (one finding per reason).
    let mut fault_unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let empty: Vec<&Circuit> = Vec::new();
    for panel in &panels {
        let circuits = by_panel.get(&panel.id).unwrap_or(&empty);
        panel_checks(&mut cx, &mut fc, &mut fault_unknown, panel, circuits);
        let feeder_drop: Option<f64> = if cx.wants(Category::VoltageDrop) {
            feeder_drops_to_panel(p, &panel.spec)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| v.iter().map(|(_, pct)| pct).sum())
        } else {
            None
        };
        let mut no_size = Vec::new();
        let mut no_length = Vec::new();
        let mut no_egc = 0usize;
        for c in circuits {
            circuit_checks(&mut cx, panel, c, feeder_drop, &mut no_egc);
            if c.spec.conductor_size.is_none() {
                no_size.push(c.spec.number.to_string());
            }
            if c.spec.length.is_none() {
                no_length.push(c.spec.number.to_string());
            }
        }
        if !no_size.is_empty() {
            cx.add(
                "missing_data",
                Severity::Warning,
                format!("panel {}", panel.spec.name),
                "NEC 210.19(A), 240.4 (not checked)",
                format!(
                    "{} circuit(s) have no conductor size, so ampacity and protection were not checked: {}",
                    no_size.len(),
                    no_size.join(", ")
                ),
                "record conductor_size with update_circuit",
            );
        }
        if !no_length.is_empty() {
            cx.add(
                "missing_data",
                Severity::Info,
                format!("panel {}", panel.spec.name),
                "NEC 210.19(A) IN No. 4 (not checked)",
                format!(
                    "{} circuit(s) have no length, so voltage drop was not checked: {}",
                    no_length.len(),
                    no_length.join(", ")
                ),
                "record the one-way length with update_circuit",
            );
        }
        if no_egc > 0 {
            cx.add(
                "egc_size",
                Severity::Info,
                format!("panel {}", panel.spec.name),
                "NEC 250.122",
                format!("{no_egc} circuit(s) have no EGC size recorded in their raceway text and no metallic raceway or cable named, so 250.122 was not checked"),
                "write the EGC in the raceway field, e.g. \"3/4 PVC, #10 EGC\"",
            );
        }
    }
    for (reason, names) in fault_unknown {
        cx.add(
            "missing_data",
            Severity::Warning,
            names
                .iter()
                .map(|n| format!("panel {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            "NEC 110.9, 110.10 (not checked)",
            format!("available fault current unknown: {reason}"),
            "record the missing data so interrupting ratings can be checked",
        );
    }
    for f in &p.feeders {
        if let Some(x) = only {
            if !f.spec.to.trim().eq_ignore_ascii_case(x.spec.name.trim()) {
                continue;
            }
        }
        feeder_checks(&mut cx, f);
    }

    let check_summary = cx.summary();
    let mut findings = cx.findings;
    findings.sort_by_key(|f| f.severity);
    let counts = Counts {
        violations: findings
            .iter()
            .filter(|f| f.severity == Severity::Violation)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        info: findings
            .iter()
            .filter(|f| f.severity == Severity::Info)
            .count(),
    };
    let checks_run = CHECKS
        .iter()
        .filter(|c| opts.category.is_none_or(|x| x == c.category))
        .map(|c| c.id)
        .collect();
    Ok(InspectionReport {
        project: p.project.name.clone(),
        scope: format!(
            "{}{}",
            only.map(|x| format!("panel {}", x.spec.name))
                .unwrap_or_else(|| "whole project".into()),
            opts.category
                .map(|c| format!(", category {}", serde_json::to_value(c).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()))
                .unwrap_or_default()
        ),
        checks_run,
        counts,
        check_summary,
        findings,
        assumptions: vec![
            format!("NEC {} edition", p.project.edition),
            "circuit current = load VA / circuit voltage (1-pole: line-to-neutral; 2/3-pole: line-to-line)".into(),
            "conductor checks at 30 °C ambient with not more than 3 current-carrying conductors; terminal temperature per 110.14(C)(1) (60 °C up to 100 A) unless noted".into(),
            "fault currents are bolted symmetrical values for fully rated equipment; transformers with an unlimited primary".into(),
            "voltage drop by the K-factor method (Chapter 9 Table 8 at 75 °C) at the connected load".into(),
            "panel loads are the recorded connected loads without Article 220 demand factors".into(),
        ],
    })
}

fn service_checks(cx: &mut Ctx) {
    match &cx.p.service {
        None => cx.add(
            "missing_data",
            Severity::Info,
            "service",
            "-",
            "the project has no service recorded",
            "record it with set_service (voltage, phases, rating, available fault current)",
        ),
        Some(s) if s.available_fault_ka.is_none() => cx.add(
            "missing_data",
            Severity::Warning,
            "service",
            "NEC 110.24, 110.9",
            "the service has no available fault current, so interrupting ratings downstream cannot be checked",
            "ask the utility for the available fault current and record it with set_service",
        ),
        Some(_) => {}
    }
}

fn panel_checks(
    cx: &mut Ctx,
    fc: &mut FaultCalculator,
    fault_unknown: &mut BTreeMap<String, Vec<String>>,
    panel: &Panel,
    circuits: &[&Circuit],
) {
    let p = cx.p;
    let name = &panel.spec.name;
    let eq = format!("panel {name}");
    // Where it is fed from.
    match panel.spec.fed_from.as_deref() {
        None => cx.add(
            "missing_data",
            Severity::Info,
            eq.clone(),
            "-",
            "no fed_from: what feeds this panel is unknown",
            "record fed_from (service, a panel or a transformer) with the panel",
        ),
        Some(src)
            if !is_service(src)
                && p.panel_by_name(src).is_none()
                && !p
                    .transformers
                    .iter()
                    .any(|t| t.spec.name.eq_ignore_ascii_case(src.trim())) =>
        {
            cx.add(
                "missing_data",
                Severity::Warning,
                eq.clone(),
                "-",
                format!("fed from '{src}', which is not the service, a panel or a transformer of the project"),
                "correct fed_from or add the missing equipment",
            )
        }
        Some(_) => {}
    }

    // 110.9 / 110.10.
    if cx.wants(Category::Interrupting) || cx.wants(Category::MissingData) {
        match (fc.at(name), panel.spec.interrupting_rating_ka) {
            (Ok(f), Some(r)) if !f.upper_bound.is_empty() && r + 1e-9 < f.fault_ka => {
                cx.not_run(
                    "interrupting_rating",
                    &eq,
                    "only an upper bound of the fault current is known and it exceeds the rating",
                );
                cx.add(
                    "interrupting_rating",
                    Severity::Warning,
                    eq.clone(),
                    "NEC 110.9, 110.10 (undecided)",
                    format!(
                        "interrupting rating {r} kA is below the upper bound {:.1} kA of the available fault current; the exact figure may be lower ({})",
                        f.fault_ka,
                        f.upper_bound.join("; ")
                    ),
                    "record the missing C value or impedance of the feeders named, then inspect again",
                );
            }
            (Ok(f), Some(r)) if r + 1e-9 < f.fault_ka => {
                cx.ran("interrupting_rating", &eq);
                let path = f
                    .steps
                    .iter()
                    .map(|s| format!("{} {:.1} kA", s.at, s.fault_ka))
                    .collect::<Vec<_>>()
                    .join(" -> ");
                cx.add(
                    "interrupting_rating",
                    Severity::Violation,
                    eq.clone(),
                    "NEC 110.9, 110.10",
                    format!(
                        "interrupting rating {r} kA is below the available fault current {:.1} kA ({path})",
                        f.fault_ka
                    ),
                    format!(
                        "use equipment rated at least {} kA, a listed series combination (240.86), or limit the fault current (current-limiting fuses, more feeder impedance)",
                        next_aic(f.fault_ka)
                    ),
                );
            }
            (Ok(f), None) => {
                cx.not_run(
                    "interrupting_rating",
                    &eq,
                    "no interrupting rating recorded",
                );
                cx.add(
                    "missing_data",
                    Severity::Warning,
                    eq.clone(),
                    "NEC 110.9, 110.10 (not checked)",
                    format!(
                        "no interrupting rating recorded; the available fault current here is {}{:.1} kA",
                        if f.upper_bound.is_empty() { "" } else { "at most " },
                        f.fault_ka
                    ),
                    format!(
                        "record interrupting_rating_ka from the panel label (needs at least {} kA)",
                        next_aic(f.fault_ka)
                    ),
                )
            }
            (Ok(_), Some(_)) => cx.ran("interrupting_rating", &eq),
            (Err(e), rating) => {
                let reason = e.to_string();
                cx.not_run(
                    "interrupting_rating",
                    &eq,
                    format!("available fault current unknown: {reason}"),
                );
                // A loop or unknown source is already reported above; keep the rest.
                fault_unknown.entry(reason).or_default().push(name.clone());
                if rating.is_none() {
                    cx.add(
                        "missing_data",
                        Severity::Warning,
                        eq.clone(),
                        "NEC 110.9, 110.10 (not checked)",
                        "no interrupting rating recorded",
                        "record interrupting_rating_ka from the panel label",
                    );
                }
            }
        }
    }

    // 408.36.
    if let Some(m) = panel.spec.main_breaker {
        cx.ran("panel_protection", &eq);
        if m.0 > panel.spec.bus_rating.0 + 1e-9 {
            cx.add(
                "panel_protection",
                Severity::Violation,
                eq.clone(),
                "NEC 408.36",
                format!(
                    "main breaker {} A is above the bus rating {} A",
                    m.0, panel.spec.bus_rating.0
                ),
                format!("use a main of at most {} A", panel.spec.bus_rating.0),
            );
        }
    } else {
        let feeder = p
            .feeders
            .iter()
            .find(|f| f.spec.to.trim().eq_ignore_ascii_case(name.trim()));
        match feeder {
            Some(_) => cx.ran("panel_protection", &eq),
            None => cx.not_run(
                "panel_protection",
                &eq,
                "main-lug-only panel without a recorded feeder",
            ),
        }
        match feeder {
            Some(f) if f.spec.ocpd.0 > panel.spec.bus_rating.0 + 1e-9 => cx.add(
                "panel_protection",
                Severity::Violation,
                eq.clone(),
                "NEC 408.36",
                format!(
                    "main-lug-only panel: feeder {} OCPD {} A is above the bus rating {} A",
                    f.spec.name, f.spec.ocpd.0, panel.spec.bus_rating.0
                ),
                format!(
                    "protect the panel at {} A or less (feeder OCPD or a main breaker)",
                    panel.spec.bus_rating.0
                ),
            ),
            Some(_) => {}
            None => cx.add(
                "missing_data",
                Severity::Info,
                eq.clone(),
                "NEC 408.36 (not checked)",
                "main-lug-only panel without a recorded feeder: its overcurrent protection is unknown",
                "add the feeder (with its OCPD) that supplies this panel, or record the main breaker",
            ),
        }
    }

    // 408.54 and poles.
    if cx.wants(Category::Panels) {
        cx.ran("panel_spaces", &eq);
        let spaces = i32::try_from(panel.spec.spaces).unwrap_or(i32::MAX);
        let mut owner: HashMap<i32, &Circuit> = HashMap::new();
        for c in circuits {
            let label = circuit_label(&panel.spec, &c.spec);
            if c.spec.poles == 3 && panel.spec.phase == Phase::Single {
                cx.add(
                    "panel_spaces",
                    Severity::Warning,
                    label.clone(),
                    "NEC 408.54",
                    format!("a 3-pole circuit in single-phase panel {name}"),
                    "correct the poles (2-pole for 240 V loads)",
                );
            }
            for s in slots(&c.spec) {
                if s > spaces {
                    cx.add(
                        "panel_spaces",
                        Severity::Warning,
                        label.clone(),
                        "NEC 408.54",
                        format!(
                            "uses slot {s} but panel {name} has {} spaces",
                            panel.spec.spaces
                        ),
                        "move the circuit to a free space or use a larger panel",
                    );
                }
                if let Some(other) = owner.insert(s, c) {
                    if other.id != c.id {
                        cx.add(
                            "panel_spaces",
                            Severity::Warning,
                            label.clone(),
                            "NEC 408.54",
                            format!(
                                "slot {s} is also used by {}",
                                circuit_label(&panel.spec, &other.spec)
                            ),
                            "renumber one of the circuits",
                        );
                    }
                }
            }
        }
    }

    // 408.30 / 215.3 loading.
    if cx.wants(Category::Panels) {
        let specs: Vec<&CircuitSpec> = circuits.iter().map(|c| &c.spec).collect();
        let loading = panel_loading(&panel.spec, &specs);
        match &loading {
            Ok(Some(_)) => cx.ran("panel_loading", &eq),
            Ok(None) => cx.not_run("panel_loading", &eq, "no circuits recorded"),
            Err(e) => cx.not_run("panel_loading", &eq, e.to_string()),
        }
        if let Ok(Some(r)) = loading {
            let pct = r.max_phase_amps / r.limiting_rating.0 * 100.0;
            if !r.pass {
                cx.add(
                    "panel_loading",
                    Severity::Violation,
                    eq.clone(),
                    "NEC 408.30, 215.3, 230.42(A)",
                    format!(
                        "highest phase {:.1} A (continuous at 125 %) exceeds the {} A limiting rating ({:.0} %): {}",
                        r.max_phase_amps,
                        r.limiting_rating.0,
                        pct,
                        r.findings.join("; ")
                    ),
                    "move loads to another panel, rebalance phases, or increase the bus/main (and feeder) rating",
                );
            } else if pct > 80.0 {
                cx.add(
                    "panel_loading",
                    Severity::Info,
                    eq.clone(),
                    "NEC 408.30",
                    format!(
                        "loaded to {pct:.0} % of its {} A limiting rating ({:.1} A spare)",
                        r.limiting_rating.0, r.spare_amps
                    ),
                    "little room for added load",
                );
            }
            if panel.spec.phase == Phase::Three && r.imbalance_percent > 10.0 {
                cx.add(
                    "panel_loading",
                    Severity::Info,
                    eq.clone(),
                    "NEC 408.30",
                    format!("phase imbalance {:.0} %", r.imbalance_percent),
                    "move single-phase loads between phases",
                );
            }
        }
    }
}

/// Checks a conductor on its breaker; failures that pass with 75 °C terminals are warnings.
fn conductor_findings(
    input: &ConductorSizingInput,
    size: ConductorSize,
) -> Option<(ConductorCheckResult, Severity)> {
    let r = conductors::check_conductor(input, size).ok()?;
    if r.pass {
        return None;
    }
    let mut at75 = input.clone();
    at75.terminal_rating = Some(TempRating::C75);
    let sev = match (
        input.terminal_rating,
        conductors::check_conductor(&at75, size),
    ) {
        (None, Ok(x)) if x.pass && r.ampacity.terminal_column == TempRating::C60 => {
            Severity::Warning
        }
        _ => Severity::Violation,
    };
    Some((r, sev))
}

fn circuit_checks(
    cx: &mut Ctx,
    panel: &Panel,
    c: &Circuit,
    feeder_drop: Option<f64>,
    no_egc: &mut usize,
) {
    let spec = &c.spec;
    let label = circuit_label(&panel.spec, spec);
    let e = match circuit_electrical(&panel.spec, spec) {
        Ok(e) => e,
        Err(err) => {
            for check in CIRCUIT_CHECKS {
                cx.not_run(check, &label, err.to_string());
            }
            return;
        }
    };
    if spec.conductor_size.is_none() {
        for check in CIRCUIT_CHECKS {
            if check != "circuit_voltage_drop" {
                cx.not_run(check, &label, "no conductor size recorded");
            }
        }
    }
    let edition = cx.p.project.edition;
    let wants_cond = cx.wants(Category::Conductors);
    let wants_egc = cx.wants(Category::Grounding);
    // 240.4(G): a motor circuit is judged by Article 430, not by 240.4(D) and 210.19/210.20.
    let rule = crate::project::circuit_protection::protection_rule(spec, edition);
    if wants_cond {
        motor_circuit_findings(cx, &label, &rule);
    }
    if let (Some(size), true) = (spec.conductor_size, wants_cond || wants_egc) {
        let mut input = circuit_conductor_input(spec, &e, edition, None);
        let protection_only = e.current <= 0.0;
        if protection_only {
            // No load: only the conductor's protection can be checked; a token load keeps the
            // engine's load rules trivially satisfied.
            input.noncontinuous_load = Amps(0.01);
            input.continuous_load = Amps(0.0);
        }
        if wants_cond {
            cx.ran("conductor_protection", &label);
            if protection_only {
                cx.not_run("branch_conductor_ampacity", &label, "no load recorded");
            } else {
                cx.ran("branch_conductor_ampacity", &label);
            }
            if !rule.is_article_430() {
                cx.ran("small_conductor", &label);
            }
        }
        if wants_cond && !rule.is_article_430() {
            if let Some((r, sev)) = conductor_findings(&input, size) {
                let fix_size = conductors::size_conductor(&input).ok().map(|s| s.size);
                for rule in r.checks.iter().filter(|x| !x.pass) {
                    if protection_only && !rule.rule.starts_with("240.4") {
                        continue;
                    }
                    let (id, reference) = check_id_for_rule(&rule.rule);
                    let mut fix = Vec::new();
                    if let Some(cap) = tables::ampacity_row(size, spec.material)
                        .ok()
                        .and_then(|row| row.max_ocpd_240_4d)
                        .filter(|cap| id == "small_conductor" && spec.breaker.0 > *cap)
                    {
                        fix.push(format!(
                            "use a {cap} A breaker (the most {size} {} allows)",
                            spec.material
                        ));
                    }
                    if let Some(s) = fix_size {
                        fix.push(format!(
                            "upsize the conductor to {s} {} for the {} A breaker",
                            spec.material, spec.breaker.0
                        ));
                    }
                    if id == "branch_conductor_ampacity" && rule.rule.starts_with("210.20(A)") {
                        if let Ok(b) = tables::standard_rating_at_or_above(
                            r.load_with_125pct_continuous,
                            edition,
                            DeviceKind::CircuitBreaker,
                        ) {
                            fix.insert(
                                0,
                                format!("use a {b} A breaker with conductors sized for it"),
                            );
                        }
                    }
                    let mut msg = format!(
                        "{size} {} on a {} A breaker does not meet {reference}: {}",
                        spec.material, spec.breaker.0, rule.detail
                    );
                    if sev == Severity::Warning {
                        msg.push_str(" (passes if both terminations are listed and marked for 75 °C, 110.14(C)(1)(a))");
                        fix.insert(
                            0,
                            "confirm 75 °C terminal ratings on the breaker and equipment".into(),
                        );
                    }
                    cx.add(id, sev, label.clone(), reference, msg, fix.join("; or "));
                }
            }
        }
        if wants_egc {
            match recorded_egc(&spec.conduit) {
                Some(_) => cx.ran("egc_size", &label),
                None if raceway_is_egc(&spec.conduit) => cx.ran("egc_size", &label),
                None => cx.not_run(
                    "egc_size",
                    &label,
                    "no EGC size in the raceway text and no metallic raceway or cable named",
                ),
            }
            match recorded_egc(&spec.conduit) {
                Some(egc) => {
                    let minimum = if protection_only {
                        None
                    } else {
                        conductors::size_conductor(&input).ok().map(|s| s.size)
                    };
                    if let Ok(req) = grounding::egc_size(&EgcInput {
                        ocpd_rating: spec.breaker,
                        egc_material: spec.material,
                        installed_size: Some(size),
                        minimum_size: minimum.filter(|m| *m <= size),
                        circuit_material: Some(spec.material),
                    }) {
                        if egc < req.size {
                            cx.add(
                                "egc_size",
                                Severity::Violation,
                                label.clone(),
                                req.references.join(", "),
                                format!(
                                    "EGC {egc} is smaller than the {} required for a {} A breaker{}",
                                    req.size,
                                    spec.breaker.0,
                                    req.upsize_ratio
                                        .map(|x| format!(" with conductors upsized ×{x:.2} (250.122(B))"))
                                        .unwrap_or_default()
                                ),
                                format!("use a {} {} EGC", req.size, spec.material),
                            );
                        }
                    }
                }
                None if raceway_is_egc(&spec.conduit) => {}
                None => *no_egc += 1,
            }
        }
    }
    if cx.wants(Category::VoltageDrop) {
        match (spec.length, spec.conductor_size) {
            (None, _) => cx.not_run("circuit_voltage_drop", &label, "no length recorded"),
            (_, None) => cx.not_run("circuit_voltage_drop", &label, "no conductor size recorded"),
            _ => match circuit_voltage_drop(&panel.spec, spec, None, None) {
                Ok(_) => cx.ran("circuit_voltage_drop", &label),
                Err(e) => cx.not_run("circuit_voltage_drop", &label, e.to_string()),
            },
        }
    }
    if cx.wants(Category::VoltageDrop) && spec.length.is_some() && spec.conductor_size.is_some() {
        if let Ok(r) = circuit_voltage_drop(&panel.spec, spec, None, None) {
            let total = feeder_drop.map(|f| f + r.percent);
            if r.percent > 3.0 {
                cx.add(
                    "circuit_voltage_drop",
                    Severity::Warning,
                    label.clone(),
                    "NEC 210.19(A) Informational Note No. 4",
                    format!(
                        "voltage drop {:.1} % ({:.1} V at {:.1} A over {} ft) is above the 3 % recommended for a branch circuit{}",
                        r.percent,
                        r.voltage_drop.0,
                        e.current,
                        spec.length.map(|l| l.0).unwrap_or_default(),
                        total.map(|t| format!("; {t:.1} % with the feeders")).unwrap_or_default()
                    ),
                    suggest_vd_fix(&panel.spec, spec, 3.0),
                );
            } else if let Some(t) = total.filter(|t| *t > 5.0) {
                cx.add(
                    "feeder_voltage_drop",
                    Severity::Warning,
                    label.clone(),
                    "NEC 215.2(A) Informational Note No. 2",
                    format!(
                        "feeder + branch voltage drop {t:.1} % is above the 5 % recommended (branch {:.1} %)",
                        r.percent
                    ),
                    "upsize the feeder or this circuit's conductors",
                );
            }
        }
    }
}

/// Findings of the Article 430 check of a motor circuit (none for a general circuit).
fn motor_circuit_findings(cx: &mut Ctx, label: &str, rule: &ProtectionRule) {
    use crate::project::circuit_protection::{MotorAspect, Verdict};
    match rule {
        ProtectionRule::General => {}
        ProtectionRule::MotorNotSized { reason } => cx.add(
            "conductor_protection",
            Severity::Warning,
            label,
            "NEC 430.6(A)(1), 240.4(G)",
            format!("motor not sized from the NEC tables ({reason}); checked as a general circuit"),
            "record the motor's horsepower and voltage as a row of Table 430.248/430.250",
        ),
        ProtectionRule::Motor(j) => {
            for f in &j.findings {
                let check = match f.aspect {
                    MotorAspect::Conductor => "branch_conductor_ampacity",
                    MotorAspect::Device => "conductor_protection",
                };
                let severity = match f.verdict {
                    Verdict::Violation => Severity::Violation,
                    Verdict::Warning => Severity::Warning,
                    Verdict::Info => Severity::Info,
                };
                cx.add(
                    check,
                    severity,
                    label,
                    f.reference.clone(),
                    f.message.clone(),
                    f.fix.clone(),
                );
            }
        }
    }
}

fn suggest_vd_fix(panel: &crate::project::PanelSpec, c: &CircuitSpec, target: f64) -> String {
    super::analysis::circuit_vd_input(panel, c, None, None, None)
        .ok()
        .and_then(|i| crate::nec::voltage_drop::smallest_conductor_for_drop(target, &i).ok())
        .map(|s| {
            format!(
                "upsize to {} {} ({:.1} %)",
                s.size, c.material, s.drop.percent
            )
        })
        .unwrap_or_else(|| "upsize the conductors or shorten the run".into())
}

fn feeder_checks(cx: &mut Ctx, f: &Feeder) {
    let p = cx.p;
    let eq = format!("feeder {} ({} -> {})", f.spec.name, f.spec.from, f.spec.to);
    let known = |n: &str| {
        is_service(n)
            || p.panel_by_name(n).is_some()
            || p.transformers
                .iter()
                .any(|t| t.spec.name.eq_ignore_ascii_case(n.trim()))
    };
    for end in [&f.spec.from, &f.spec.to] {
        if !known(end) {
            cx.add(
                "missing_data",
                Severity::Warning,
                eq.clone(),
                "-",
                format!("'{end}' is not the service, a panel or a transformer of the project"),
                "correct the feeder's from/to or add the equipment",
            );
        }
    }
    if f.spec.length.is_none() {
        cx.add(
            "missing_data",
            Severity::Info,
            eq.clone(),
            "NEC 215.2(A) IN No. 2 (not checked)",
            "no length: voltage drop and fault-current reduction not calculated",
            "record the feeder's one-way length",
        );
    }
    let sets = f64::from(f.spec.sets.max(1));
    let load = feeder_load_current(p, f).ok().map(|(i, _)| i);
    if cx.wants(Category::Conductors) {
        cx.ran("feeder_conductor", &eq);
        let to = p.panel_by_name(&f.spec.to);
        let specs: Vec<&CircuitSpec> = to
            .map(|x| {
                p.circuits
                    .iter()
                    .filter(|c| c.panel_id == x.id)
                    .map(|c| &c.spec)
                    .collect()
            })
            .unwrap_or_default();
        let (cont, noncont) = match to.and_then(|x| panel_loading(&x.spec, &specs).ok().flatten()) {
            Some(l) => {
                let cont = ((l.max_phase_amps - l.max_phase_amps_100pct) / 0.25).max(0.0);
                (cont, (l.max_phase_amps_100pct - cont).max(0.0))
            }
            None => (0.0, 0.01),
        };
        let input = ConductorSizingInput {
            continuous_load: Amps(cont / sets),
            noncontinuous_load: Amps(noncont / sets),
            material: f.spec.material,
            insulation: f.spec.insulation,
            terminal_rating: None,
            ambient_c: None,
            current_carrying_conductors: 3,
            ocpd_rating: Some(Amps(f.spec.ocpd.0 / sets)),
            ocpd_device: DeviceKind::CircuitBreaker,
            multioutlet_receptacle_circuit: false,
            edition: p.project.edition,
        };
        if let Some((r, sev)) = conductor_findings(&input, f.spec.conductor_size) {
            let fix = conductors::size_conductor(&input)
                .ok()
                .map(|s| {
                    format!(
                        "use {} {} per set for the {} A OCPD",
                        s.size, f.spec.material, f.spec.ocpd.0
                    )
                })
                .unwrap_or_else(|| "upsize the feeder or reduce its OCPD".into());
            for rule in r.checks.iter().filter(|x| !x.pass) {
                if load.is_none() && !rule.rule.starts_with("240.4") {
                    continue;
                }
                cx.add(
                    "feeder_conductor",
                    sev,
                    eq.clone(),
                    feeder_reference(&rule.rule),
                    format!(
                        "{} × {} {} on a {} A OCPD: {}",
                        f.spec.sets.max(1),
                        f.spec.conductor_size,
                        f.spec.material,
                        f.spec.ocpd.0,
                        rule.detail
                    ),
                    fix.clone(),
                );
            }
        }
    }
    if cx.wants(Category::Grounding) {
        feeder_egc_findings(cx, f, &eq);
    }
    if cx.wants(Category::VoltageDrop) {
        match f.spec.length {
            None => cx.not_run("feeder_voltage_drop", &eq, "no length recorded"),
            Some(_) => match feeder_voltage_drop(p, f, None, None) {
                Ok(_) => cx.ran("feeder_voltage_drop", &eq),
                Err(e) => cx.not_run("feeder_voltage_drop", &eq, e.to_string()),
            },
        }
    }
    if cx.wants(Category::VoltageDrop) && f.spec.length.is_some() {
        if let Ok(r) = feeder_voltage_drop(p, f, None, None) {
            if r.percent > 3.0 {
                cx.add(
                    "feeder_voltage_drop",
                    Severity::Warning,
                    eq.clone(),
                    "NEC 215.2(A) Informational Note No. 2",
                    format!(
                        "feeder voltage drop {:.1} % at {:.1} A is above the 3 % recommended",
                        r.percent, r.input.current.0
                    ),
                    "upsize the feeder conductors or add parallel sets",
                );
            }
        }
    }
}

/// The feeder's EGC against 250.122 (per raceway, sized by the feeder OCPD, increased when the
/// ungrounded conductors were upsized).
fn feeder_egc_findings(cx: &mut Ctx, f: &Feeder, eq: &str) {
    let c = match check_feeder_egc(&f.spec, None) {
        Ok(c) => c,
        Err(e) => {
            cx.not_run("egc_size", eq, e.to_string());
            return;
        }
    };
    match c.installed {
        Some(_) => cx.ran("egc_size", eq),
        None => cx.not_run("egc_size", eq, "no EGC size recorded"),
    }
    let reference = if c.required.upsize_ratio.is_some() {
        "NEC 250.122(A), 250.122(B)"
    } else {
        "NEC 250.122(A)"
    };
    let why = match c.required.upsize_ratio {
        Some(r) => format!(
            "Table 250.122 gives {} {} for the {} A OCPD; the ungrounded conductors are {} instead of {} ({r:.2} × the area), so 250.122(B) requires {:.0} cmil: {}",
            c.required.table_size,
            f.spec.material,
            f.spec.ocpd.0,
            f.spec.conductor_size,
            c.minimum_phase_size,
            c.required.required_cmil,
            c.required.size
        ),
        None => format!(
            "Table 250.122 requires {} {} for the {} A OCPD",
            c.required.size, f.spec.material, f.spec.ocpd.0
        ),
    };
    let per_raceway = if f.spec.sets > 1 {
        " in each raceway (250.122(F))"
    } else {
        ""
    };
    match (c.pass, c.installed) {
        (Some(false), Some(installed)) => cx.add(
            "egc_size",
            Severity::Violation,
            eq.to_string(),
            reference,
            format!("EGC {installed} {} is too small: {why}", f.spec.material),
            format!(
                "install at least {} {} EGC{per_raceway}",
                c.required.size, f.spec.material
            ),
        ),
        (Some(true), _) => {}
        _ => cx.add(
            "egc_size",
            Severity::Info,
            eq.to_string(),
            reference,
            format!("EGC not recorded: {why}"),
            format!(
                "record the feeder's egc_size (at least {} {}{per_raceway})",
                c.required.size, f.spec.material
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn egc_sizes_are_read_from_raceway_text() {
        let s = |t: &str| recorded_egc(t).map(|x| x.to_string());
        assert_eq!(s("3/4 PVC, #10 EGC").as_deref(), Some("10 AWG"));
        assert_eq!(s("2#12, 1#12G 1/2 EMT").as_deref(), Some("12 AWG"));
        assert_eq!(s("EGC #6").as_deref(), Some("6 AWG"));
        assert_eq!(s("1-1/4 PVC 3#1/0 + 1#6 ground").as_deref(), Some("6 AWG"));
        assert_eq!(s("3/4 EMT"), None);
        assert_eq!(s("12/2 NM-B"), None);
        assert!(raceway_is_egc("3/4 EMT"));
        assert!(raceway_is_egc("12/2 NM-B"));
        assert!(!raceway_is_egc("3/4 PVC"));
    }

    #[test]
    fn every_check_is_documented_once() {
        let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
        assert_eq!(next_aic(22.0), 22.0);
        assert_eq!(next_aic(22.1), 25.0);
    }
}
