//! What a project's feeder or branch circuits put in one raceway, for the Chapter 9 fill
//! check: the conductors the project records (size, poles, sets, EGC) and what it does not
//! (insulation type, neutral, a wire EGC in a metal raceway) filled in by stated assumptions,
//! each of which the caller can override.

use std::sync::OnceLock;

use regex::Regex;

use super::analysis::circuit_label;
use super::feeder_egc::check_feeder_egc;
use super::inspection::recorded_egc;
use super::{AnalysisError, Circuit, Feeder, Panel, ProjectData};
use crate::nec::fill_tables::{Insulation, RacewayType, TradeSize};
use crate::nec::raceway_fill::{FillItem, FillItemKind};
use crate::nec::tables;
use crate::nec::units::{ConductorSize, Material, Phase};

/// Choices the project does not record, each `None` when not given.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContentChoices {
    /// Insulation of every conductor (default THHN/THWN-2, the most common building wire).
    pub insulation: Option<Insulation>,
    /// Count a neutral: for a feeder, one of the phase size; for branch circuits, one for
    /// each multi-pole circuit too (1-pole circuits always carry one).
    pub neutral: Option<bool>,
    /// Count a wire EGC (a metal raceway can be the EGC itself, 250.118).
    pub egc: Option<bool>,
    /// The raceway the caller names, which wins over the one recorded on the circuits.
    pub raceway: Option<RacewayType>,
}

/// The conductors of one raceway, with what was assumed to get them.
#[derive(Debug, Clone, PartialEq)]
pub struct RacewayContents {
    /// The conductors, EGC included.
    pub items: Vec<FillItem>,
    /// The raceway recorded on the circuits, when all of them name the same one.
    pub recorded_raceway: Option<(RacewayType, Option<TradeSize>)>,
    /// What the project did not say and was assumed, one sentence each.
    pub assumptions: Vec<String>,
}

fn insulated(count: u32, size: ConductorSize, insulation: Insulation, what: String) -> FillItem {
    FillItem {
        count,
        kind: FillItemKind::Insulated { size, insulation },
        description: what,
    }
}

fn insulation_of(choices: &ContentChoices, assumptions: &mut Vec<String>) -> Insulation {
    choices.insulation.unwrap_or_else(|| {
        assumptions.push(
            "insulation is not recorded: THHN/THWN-2 (Table 5) used; give insulation if it differs"
                .into(),
        );
        Insulation::Thhn
    })
}

/// The phases of the system a feeder carries: the panel or transformer it feeds, else the
/// service.
fn feeder_phase(p: &ProjectData, f: &Feeder) -> Option<Phase> {
    p.panel_by_name(&f.spec.to)
        .map(|x| x.spec.phase)
        .or_else(|| p.transformer_by_name(&f.spec.to).map(|t| t.spec.phase))
        .or_else(|| p.service.as_ref().map(|s| s.phase))
}

/// One raceway of a feeder: one parallel set, its neutral and its EGC.
pub fn feeder_contents(
    p: &ProjectData,
    f: &Feeder,
    choices: &ContentChoices,
) -> Result<RacewayContents, AnalysisError> {
    let spec = &f.spec;
    let phase = feeder_phase(p, f).ok_or_else(|| {
        AnalysisError::MissingData(format!(
            "feeder {} feeds '{}', which is neither a panel nor a transformer, and the project has no service: its phases are unknown",
            spec.name, spec.to
        ))
    })?;
    let mut assumptions = Vec::new();
    let insulation = insulation_of(choices, &mut assumptions);
    let ungrounded = if phase == Phase::Three { 3 } else { 2 };
    let mut items = vec![insulated(
        ungrounded,
        spec.conductor_size,
        insulation,
        format!("feeder {} ungrounded", spec.name),
    )];
    if spec.sets > 1 {
        assumptions.push(format!(
            "{} parallel sets: each raceway holds one set and its EGC (250.122(F)); this is one raceway",
            spec.sets
        ));
    }
    let to_panel = p.panel_by_name(&spec.to).is_some();
    let neutral = choices.neutral.unwrap_or_else(|| {
        assumptions.push(if to_panel {
            "neutral is not recorded: one of the phase size counted; give neutral: false for a feeder without one".into()
        } else {
            format!("feeder to {} (not a panel): no neutral counted; give neutral: true if it has one", spec.to)
        });
        to_panel
    });
    if neutral {
        items.push(insulated(
            1,
            spec.conductor_size,
            insulation,
            format!("feeder {} neutral", spec.name),
        ));
    }
    if choices.egc != Some(false) {
        let egc = match spec.egc_size {
            Some(e) => e,
            None => {
                let required = check_feeder_egc(spec, None)?.required.size;
                assumptions.push(format!(
                    "EGC is not recorded: the 250.122 minimum for the {} A OCPD, {required}, counted",
                    spec.ocpd.0
                ));
                required
            }
        };
        items.push(insulated(
            1,
            egc,
            insulation,
            format!("feeder {} EGC", spec.name),
        ));
    }
    if spec.material == Material::Aluminum {
        assumptions.push(
            "aluminum taken at the Table 5 dimensions; compact aluminum (Table 5A) is smaller: give its area_in2 from the maker"
                .into(),
        );
    }
    Ok(RacewayContents {
        items,
        recorded_raceway: None,
        assumptions,
    })
}

/// Branch circuits run together in one raceway: their ungrounded conductors, a neutral for
/// each 1-pole circuit, and one EGC sized for the largest OCPD (250.122(C)).
pub fn circuits_contents(
    circuits: &[(&Panel, &Circuit)],
    choices: &ContentChoices,
) -> Result<RacewayContents, AnalysisError> {
    if circuits.is_empty() {
        return Err(AnalysisError::Invalid("no circuit named".into()));
    }
    let mut assumptions = Vec::new();
    let insulation = insulation_of(choices, &mut assumptions);
    let mut items = Vec::new();
    let mut multi_pole = Vec::new();
    for (panel, c) in circuits {
        let label = circuit_label(&panel.spec, &c.spec);
        let size = c.spec.conductor_size.ok_or_else(|| {
            AnalysisError::MissingData(format!(
                "circuit {label} has no conductor size recorded; record it or give the conductors"
            ))
        })?;
        items.push(insulated(
            u32::from(c.spec.poles.max(1)),
            size,
            insulation,
            format!("{label} ungrounded"),
        ));
        let neutral = if c.spec.poles <= 1 {
            true
        } else {
            if choices.neutral.is_none() {
                multi_pole.push(label.clone());
            }
            choices.neutral == Some(true)
        };
        if neutral {
            items.push(insulated(1, size, insulation, format!("{label} neutral")));
        }
    }
    if !multi_pole.is_empty() {
        assumptions.push(format!(
            "no neutral counted for {} (a multi-pole circuit may not have one); give neutral: true if they do",
            multi_pole.join(", ")
        ));
    }
    if circuits.iter().any(|(_, c)| c.spec.poles <= 1) {
        assumptions.push(
            "each 1-pole circuit counted with its own neutral (a shared multiwire neutral is one fewer)"
                .into(),
        );
    }

    let texts: Vec<&str> = circuits
        .iter()
        .map(|(_, c)| c.spec.conduit.as_str())
        .collect();
    let parsed: Vec<Option<(RacewayType, Option<TradeSize>)>> =
        texts.iter().map(|t| recorded_conduit(t)).collect();
    let recorded_raceway = match parsed.first() {
        Some(Some(first)) if parsed.iter().all(|r| r.as_ref() == Some(first)) => Some(*first),
        _ => None,
    };

    let recorded_egcs: Vec<ConductorSize> = texts.iter().filter_map(|t| recorded_egc(t)).collect();
    let metal = choices
        .raceway
        .or(recorded_raceway.map(|(r, _)| r))
        .is_some_and(is_metal_egc);
    let count_egc = choices.egc.unwrap_or_else(|| {
        if metal && recorded_egcs.is_empty() {
            assumptions.push(
                "no wire EGC recorded in a metal raceway: the raceway is taken as the EGC (250.118); give egc: true to count one"
                    .into(),
            );
        }
        !metal || !recorded_egcs.is_empty()
    });
    if count_egc {
        let egc = match recorded_egcs.iter().max() {
            Some(e) => *e,
            None => {
                let largest = circuits
                    .iter()
                    .map(|(_, c)| &c.spec)
                    .max_by(|a, b| a.breaker.0.total_cmp(&b.breaker.0))
                    .ok_or_else(|| AnalysisError::Invalid("no circuit named".into()))?;
                let size = tables::egc_for_ocpd(largest.breaker.0, largest.material)?;
                assumptions.push(format!(
                    "EGC is not recorded: one sized for the largest OCPD ({} A), {size}, counted (250.122(C))",
                    largest.breaker.0
                ));
                size
            }
        };
        items.push(insulated(1, egc, insulation, "EGC".into()));
    }
    Ok(RacewayContents {
        items,
        recorded_raceway,
        assumptions,
    })
}

/// Metal raceways that 250.118 lets serve as the EGC without conditions on length or size.
fn is_metal_egc(r: RacewayType) -> bool {
    matches!(r, RacewayType::Emt | RacewayType::Rmc | RacewayType::Imc)
}

fn conduit_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        // "3/4 EMT", "1-1/4\" PVC", "2 in. RMC", "1.5 PVC80", "EMT 3/4", "3/4 PVC sch 80".
        let size = r#"(\d+-\d/\d|\d/\d|\d+(?:\.\d+)?)\s*(?:"|”|in\.?|inch(?:es)?)?"#;
        let kind = r"(EMT|RMC|GRC|IMC|LFMC|FMC|PVC(?:[\s-]*(?:sch(?:edule)?\.?)?[\s-]*(?:40|80))?|rigid|flex)\b";
        // A size is never a count or a wire size ("3#12", "EMT 2#12"): it starts the text or
        // follows a separator, and after a raceway word it ends at one.
        Regex::new(&format!(
            r"(?i)(?:^|[\s(,;]){size}\s*{kind}|\b{kind}\s*{size}(?:$|[\s,;)])"
        ))
        .ok()
    })
    .as_ref()
}

/// The raceway type and trade size written in a circuit's raceway text ("3/4 EMT"), if any.
pub fn recorded_conduit(text: &str) -> Option<(RacewayType, Option<TradeSize>)> {
    let caps = conduit_regex()?.captures(text)?;
    let (size, kind) = match (caps.get(1), caps.get(2)) {
        (Some(s), Some(k)) => (s.as_str(), k.as_str()),
        _ => (caps.get(4)?.as_str(), caps.get(3)?.as_str()),
    };
    // "PVC sch 80" → "pvc80", then the engine's own names and aliases ("grc", "rigid", "flex").
    let name = kind
        .to_ascii_lowercase()
        .replace([' ', '-', '.'], "")
        .replace("schedule", "")
        .replace("sch", "");
    let raceway: RacewayType = serde_json::from_value(serde_json::Value::String(name)).ok()?;
    Some((raceway, size.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raceways_are_read_from_circuit_text() {
        let r = |t: &str| recorded_conduit(t).map(|(k, s)| (k.code(), s.map(|s| s.as_str())));
        assert_eq!(r("3/4 EMT"), Some(("EMT", Some("3/4"))));
        assert_eq!(r("3/4 PVC, #12 EGC"), Some(("PVC40", Some("3/4"))));
        assert_eq!(r("1-1/4\" PVC sch 80"), Some(("PVC80", Some("1-1/4"))));
        assert_eq!(r("2 in. rigid"), Some(("RMC", Some("2"))));
        assert_eq!(r("EMT 1/2"), Some(("EMT", Some("1/2"))));
        assert_eq!(r("1.5 LFMC"), Some(("LFMC", Some("1-1/2"))));
        assert_eq!(r("12/2 NM-B"), None);
        assert_eq!(r("2#12, 1#12G 1/2 EMT"), Some(("EMT", Some("1/2"))));
        assert_eq!(r("EMT 2#12"), None);
        assert_eq!(r(""), None);
        // A size Table 4 does not list still names the raceway.
        assert_eq!(r("7 EMT"), Some(("EMT", None)));
    }
}
