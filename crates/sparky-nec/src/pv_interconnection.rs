//! Connection of an interconnected power source (PV inverters, other interactive sources) on
//! the load side of the service disconnect, 705.12: the busbar options (100 %, 120 % with the
//! source at the opposite end, sum of the breakers, center-fed dwelling panelboards), the
//! feeder and tap rules, and the supply-side rule (2017 705.12(A), 2020 and 2023 705.11) as a
//! note. Every option gives its numbers and the largest source breaker it allows.
//!
//! The inverter output circuit current is the inverter's continuous output current rating
//! (2017 705.60(A)(2); 2020 and 2023 705.28(A)); the busbar rules count 125 % of it, and the
//! source breaker is at least the next standard rating above 125 % (240.4(B), 240.6(A)).

use serde::{Deserialize, Serialize};

use super::error::{non_negative, positive, NecError};
use super::tables::{self, DeviceKind};
use super::units::{Amps, Edition};

/// Where the supply (main) enters a busbar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MainPosition {
    /// At one end (the common end-fed panelboard).
    #[default]
    End,
    /// In the middle (center-fed panelboard).
    Center,
}

/// Where the source breaker sits on the busbar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourcePosition {
    /// At the end opposite the main (end-fed), or at one end (center-fed).
    OppositeEnd,
    /// Anywhere else (next to the main, mid-bus).
    Other,
    /// Not known.
    #[default]
    Unknown,
}

/// One interconnected source (an inverter, or several combined on one breaker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// Maximum continuous output current (the inverter's rating), A.
    pub output_current: Amps,
    /// The breaker it lands on, when chosen.
    #[serde(default)]
    pub breaker: Option<Amps>,
}

/// A feeder the source connects to (705.12 feeder rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeederConnection {
    /// Feeder conductor ampacity, A.
    pub ampacity: Amps,
    /// Rating of the primary source's OCPD protecting the feeder, A.
    pub primary_ocpd: Amps,
    /// The source connects at the end of the feeder opposite the primary OCPD.
    #[serde(default)]
    pub at_opposite_end: bool,
    /// Rating of an OCPD on the load side of the connection, if any.
    #[serde(default)]
    pub load_side_ocpd: Option<Amps>,
}

/// How a tap from the feeder is made (240.21(B)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TapRule {
    /// 240.21(B)(1), taps not over 10 ft: 1/10.
    TenFoot,
    /// 240.21(B)(2), taps not over 25 ft: 1/3.
    TwentyFiveFoot,
}

/// A tap from a feeder the source connects to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapConnection {
    /// Tap conductor ampacity, A.
    pub ampacity: Amps,
    /// Which tap rule.
    pub rule: TapRule,
    /// Rating of the OCPD protecting the feeder, A.
    pub feeder_ocpd: Amps,
}

/// Inputs of [`pv_interconnection`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PvInterconnectionInput {
    /// NEC edition.
    #[serde(default)]
    pub edition: Edition,
    /// Busbar ampere rating (the panelboard label, not the main breaker).
    pub busbar_rating: Amps,
    /// Rating of the OCPD protecting the busbar (the main breaker, or the feeder OCPD of a
    /// main-lug panel).
    pub main_ocpd: Amps,
    /// Where the main feeds the busbar.
    #[serde(default)]
    pub main_position: MainPosition,
    /// Where the source breaker is.
    #[serde(default)]
    pub source_position: SourcePosition,
    /// The panelboard is in a dwelling (`None`: not stated).
    #[serde(default)]
    pub dwelling: Option<bool>,
    /// The sources on this busbar.
    pub sources: Vec<Source>,
    /// Ratings of every other breaker on the busbar (loads), for the sum-of-breakers option;
    /// `None`: not known.
    #[serde(default)]
    pub load_breakers: Option<Vec<Amps>>,
    /// A feeder connection to check.
    #[serde(default)]
    pub feeder: Option<FeederConnection>,
    /// A feeder tap to check.
    #[serde(default)]
    pub tap: Option<TapConnection>,
    /// For the supply-side note: the service rating (2017) or the service conductor ampacity
    /// (2020, 2023).
    #[serde(default)]
    pub service_rating: Option<Amps>,
    /// For the supply-side note: service conductor ampacity (2020, 2023 705.11).
    #[serde(default)]
    pub service_conductor_ampacity: Option<Amps>,
}

/// One source's circuit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceCircuit {
    /// What it is.
    pub description: String,
    /// Continuous output current, A.
    pub output_current: f64,
    /// 125 % of it, A.
    pub current_125: f64,
    /// Smallest standard breaker at or above 125 %.
    pub minimum_breaker: f64,
    /// The breaker given, if any.
    pub breaker: Option<f64>,
    /// Whether the given breaker is at least the minimum.
    pub breaker_ok: Option<bool>,
}

/// One way of showing the busbar (or feeder, tap) is not overloaded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OptionCheck {
    /// Short name.
    pub option: String,
    /// Section in the edition used.
    pub reference: String,
    /// Whether the option can be used for this arrangement; why not when it cannot.
    pub applies: bool,
    /// Why not (or what is unknown).
    pub note: String,
    /// `Some(true)` passes, `Some(false)` fails, `None` not decided (does not apply, or data
    /// missing).
    pub passes: Option<bool>,
    /// The compared sum, A.
    pub sum_a: Option<f64>,
    /// The limit, A.
    pub limit_a: Option<f64>,
    /// Largest 125 % source current the option allows, A.
    pub max_source_125_a: Option<f64>,
    /// Largest inverter continuous output the option allows, A.
    pub max_inverter_output_a: Option<f64>,
    /// Largest standard source breaker the option allows (none below 15 A).
    pub max_source_breaker_a: Option<f64>,
}

/// Result of [`pv_interconnection`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PvInterconnectionResult {
    /// Edition used.
    pub edition: Edition,
    /// Each source circuit.
    pub sources: Vec<SourceCircuit>,
    /// Sum of the continuous output currents, A.
    pub total_output_a: f64,
    /// 125 % of it, A.
    pub total_125_a: f64,
    /// The busbar options.
    pub busbar_options: Vec<OptionCheck>,
    /// Feeder and tap checks, when asked.
    pub feeder_checks: Vec<OptionCheck>,
    /// Options that pass.
    pub passing: Vec<String>,
    /// Supply-side connection (705.12(A) 2017; 705.11 2020, 2023).
    pub supply_side: OptionCheck,
    /// What a plan reviewer still checks.
    pub reviewer_checks: Vec<String>,
    /// References.
    pub references: Vec<String>,
    /// Assumptions made.
    pub assumptions: Vec<String>,
}

/// Section numbers of the options in each edition.
struct Refs {
    full: &'static str,
    opposite: &'static str,
    sum: &'static str,
    center: &'static str,
    engineering: &'static str,
    feeder: &'static str,
    tap: &'static str,
    sizing: &'static str,
    supply: &'static str,
}

fn refs(e: Edition) -> Refs {
    match e {
        Edition::Nec2017 => Refs {
            full: "NEC 2017 705.12(B)(2)(3)(a)",
            opposite: "NEC 2017 705.12(B)(2)(3)(b)",
            sum: "NEC 2017 705.12(B)(2)(3)(c)",
            center: "NEC 2017 705.12(B)(2)(3)(d)",
            engineering: "NEC 2017 705.12(B)(2)(3)(e)",
            feeder: "NEC 2017 705.12(B)(2)(1)",
            tap: "NEC 2017 705.12(B)(2)(2)",
            sizing: "NEC 2017 705.60(A)(2), (B)",
            supply: "NEC 2017 705.12(A)",
        },
        Edition::Nec2020 => Refs {
            full: "NEC 2020 705.12(B)(3)(1)",
            opposite: "NEC 2020 705.12(B)(3)(2)",
            sum: "NEC 2020 705.12(B)(3)(3)",
            center: "NEC 2020 705.12(B)(3)(4)",
            engineering: "NEC 2020 705.12(B)(3)(5)",
            feeder: "NEC 2020 705.12(B)(1)",
            tap: "NEC 2020 705.12(B)(2)",
            sizing: "NEC 2020 705.28",
            supply: "NEC 2020 705.11",
        },
        Edition::Nec2023 => Refs {
            full: "NEC 2023 705.12(B)(1)",
            opposite: "NEC 2023 705.12(B)(2)",
            sum: "NEC 2023 705.12(B)(3)",
            center: "NEC 2023 705.12(B)(4)",
            engineering: "NEC 2023 705.12(B)(5)",
            feeder: "NEC 2023 705.12(A)",
            tap: "NEC 2023 705.12(A)(3)",
            sizing: "NEC 2023 705.28",
            supply: "NEC 2023 705.11",
        },
    }
}

/// The largest standard breaker at or below `amps`, when there is one.
fn breaker_at_or_below(amps: f64, e: Edition) -> Option<f64> {
    if amps <= 0.0 {
        return None;
    }
    tables::standard_rating_at_or_below(amps, e, DeviceKind::CircuitBreaker)
        .ok()
        .filter(|r| *r >= 15.0)
}

/// A busbar check of `sum_125 + main ≤ limit`.
fn headroom_check(
    option: &str,
    reference: &str,
    sum_125: f64,
    main: f64,
    limit: f64,
    e: Edition,
) -> OptionCheck {
    let room = limit - main;
    OptionCheck {
        option: option.into(),
        reference: reference.into(),
        applies: true,
        note: String::new(),
        passes: Some(sum_125 + main <= limit + 1e-9),
        sum_a: Some(sum_125 + main),
        limit_a: Some(limit),
        max_source_125_a: Some(room.max(0.0)),
        max_inverter_output_a: Some((room / 1.25).max(0.0)),
        max_source_breaker_a: breaker_at_or_below(room, e),
    }
}

fn not_applicable(option: &str, reference: &str, note: String) -> OptionCheck {
    OptionCheck {
        option: option.into(),
        reference: reference.into(),
        applies: false,
        note,
        passes: None,
        sum_a: None,
        limit_a: None,
        max_source_125_a: None,
        max_inverter_output_a: None,
        max_source_breaker_a: None,
    }
}

/// Checks a load-side connection of `input.sources` to a busbar (and, when given, a feeder
/// and a tap) under every option of 705.12 in the edition asked for.
pub fn pv_interconnection(
    input: &PvInterconnectionInput,
) -> Result<PvInterconnectionResult, NecError> {
    let e = input.edition;
    let r = refs(e);
    let bus = positive("busbar_rating", input.busbar_rating.0)?;
    let main = positive("main_ocpd", input.main_ocpd.0)?;
    // Without a source the options still give the largest breaker and inverter they allow,
    // but decide nothing.
    let limits_only = input.sources.is_empty();
    let mut assumptions = Vec::new();
    if limits_only {
        assumptions.push(
            "no inverter given: each option shows the largest PV breaker and inverter output it allows, and passes nothing".into(),
        );
    }
    let mut sources = Vec::new();
    for s in &input.sources {
        let i = positive("sources[].output_current", s.output_current.0)?;
        let c125 = 1.25 * i;
        let min = tables::standard_rating_at_or_above(c125, e, DeviceKind::CircuitBreaker)?;
        let breaker = s
            .breaker
            .map(|b| positive("sources[].breaker", b.0))
            .transpose()?;
        sources.push(SourceCircuit {
            description: s.description.clone(),
            output_current: i,
            current_125: c125,
            minimum_breaker: min,
            breaker,
            breaker_ok: breaker.map(|b| b >= min - 1e-9),
        });
    }
    // A fold from +0.0: an empty `sum` of f64 is -0.0.
    let total = sources.iter().fold(0.0, |t, s| t + s.output_current);
    let total_125 = 1.25 * total;

    let mut busbar = Vec::new();
    let main_over_bus = main > bus + 1e-9;
    // (1) 125 % of the sources plus the busbar OCPD within the busbar rating, anywhere.
    busbar.push(headroom_check(
        "100 % of the busbar (source breaker anywhere)",
        r.full,
        total_125,
        main,
        bus,
        e,
    ));
    // (2) the 120 % rule, sources at the opposite end from an end-fed main.
    let opp = "120 % of the busbar (source at the opposite end from the main)";
    busbar.push(match (input.main_position, input.source_position) {
        (MainPosition::Center, _) => not_applicable(
            opp,
            r.opposite,
            "center-fed busbar: see the center-fed option".into(),
        ),
        (MainPosition::End, SourcePosition::Other) => not_applicable(
            opp,
            r.opposite,
            "the source breaker is not at the end opposite the main: move it there, or use another option".into(),
        ),
        (MainPosition::End, pos) => {
            let mut c = headroom_check(opp, r.opposite, total_125, main, 1.2 * bus, e);
            c.note = if pos == SourcePosition::Unknown {
                "holds only with the source breaker at the end opposite the main (position not stated)".into()
            } else {
                "the busbar must also be sized for its loads by Article 220; a warning label at the source breaker says not to relocate it".into()
            };
            c
        }
    });
    // (3) sum of every breaker except the main within the busbar rating.
    let sum_name = "sum of all breakers except the main ≤ busbar";
    busbar.push(match &input.load_breakers {
        None => not_applicable(
            sum_name,
            r.sum,
            "needs the rating of every breaker on the busbar (loads and sources)".into(),
        ),
        Some(loads) => {
            let mut load_sum = 0.0;
            for b in loads {
                load_sum += non_negative("load_breakers[]", b.0)?;
            }
            let source_breakers: f64 = sources
                .iter()
                .map(|s| s.breaker.unwrap_or(s.minimum_breaker))
                .sum();
            if sources.iter().any(|s| s.breaker.is_none()) {
                assumptions.push(
                    "sum of breakers: a source without a given breaker counted at its minimum breaker (next standard rating above 125 %)".into(),
                );
            }
            let room = bus - load_sum;
            OptionCheck {
                option: sum_name.into(),
                reference: r.sum.into(),
                applies: !main_over_bus,
                note: if main_over_bus {
                    "the main is rated above the busbar, which this option does not allow".into()
                } else {
                    "the main may not exceed the busbar; a label states the multiple sources and this limit".into()
                },
                passes: Some(!main_over_bus && load_sum + source_breakers <= bus + 1e-9),
                sum_a: Some(load_sum + source_breakers),
                limit_a: Some(bus),
                max_source_125_a: None,
                max_inverter_output_a: breaker_at_or_below(room, e).map(|b| b / 1.25),
                max_source_breaker_a: breaker_at_or_below(room, e),
            }
        }
    });
    // (4) center-fed panelboards in dwellings: 120 % with the source at either end.
    let cf = "center-fed dwelling panelboard, source at one end (120 %)";
    busbar.push(
        match (input.main_position, input.dwelling, input.source_position) {
            (MainPosition::End, _, _) => not_applicable(cf, r.center, "end-fed busbar".into()),
            (MainPosition::Center, Some(false), _) => not_applicable(
                cf,
                r.center,
                "permitted only for panelboards in dwellings".into(),
            ),
            (MainPosition::Center, _, SourcePosition::Other) => not_applicable(
                cf,
                r.center,
                "the source must be at one end of the center-fed busbar (not both ends)".into(),
            ),
            (MainPosition::Center, dwelling, pos) => {
                let mut c = headroom_check(cf, r.center, total_125, main, 1.2 * bus, e);
                let mut notes = Vec::new();
                if dwelling.is_none() {
                    notes.push("holds only in a dwelling (not stated)");
                }
                if pos == SourcePosition::Unknown {
                    notes.push("holds only with the source at one end (position not stated)");
                }
                notes.push("sources at one end only, not both");
                c.note = notes.join("; ");
                c
            }
        },
    );
    busbar.push(not_applicable(
        "engineering supervision (switchgear, switchboards, panelboards)",
        r.engineering,
        "other arrangements are permitted where designed under engineering supervision with available fault current and busbar load calculations: not decided here".into(),
    ));

    let mut feeder_checks = Vec::new();
    if let Some(f) = &input.feeder {
        let amp = positive("feeder.ampacity", f.ampacity.0)?;
        let primary = positive("feeder.primary_ocpd", f.primary_ocpd.0)?;
        let carries = amp >= total_125 - 1e-9;
        let (passes, note, sum, limit) = if f.at_opposite_end {
            (
                e == Edition::Nec2017 || carries,
                "connection at the end opposite the primary OCPD".to_string(),
                total_125,
                amp,
            )
        } else {
            let a = amp >= primary + total_125 - 1e-9;
            let b = f
                .load_side_ocpd
                .map(|o| positive("feeder.load_side_ocpd", o.0))
                .transpose()?
                .map(|o| o <= amp + 1e-9);
            let note = format!(
                "the feeder on the load side of the connection is protected: (a) ampacity ≥ primary OCPD + 125 % of the sources ({}), or (b) an OCPD on the load side not above the ampacity ({})",
                if a { "met" } else { "not met" },
                match b {
                    Some(true) => "met",
                    Some(false) => "not met",
                    None => "none given",
                }
            );
            (
                (a || b == Some(true)) && (e == Edition::Nec2017 || carries),
                note,
                primary + total_125,
                amp,
            )
        };
        let mut note = note;
        if e != Edition::Nec2017 && !carries {
            note.push_str("; the feeder must also carry 125 % of the source current");
        }
        feeder_checks.push(OptionCheck {
            option: "feeder connection".into(),
            reference: r.feeder.into(),
            applies: true,
            note,
            passes: Some(passes),
            sum_a: Some(sum),
            limit_a: Some(limit),
            max_source_125_a: Some(
                if f.at_opposite_end {
                    amp
                } else {
                    amp - primary
                }
                .max(0.0),
            ),
            max_inverter_output_a: Some(
                (if f.at_opposite_end {
                    amp
                } else {
                    amp - primary
                } / 1.25)
                    .max(0.0),
            ),
            max_source_breaker_a: None,
        });
    }
    if let Some(t) = &input.tap {
        let amp = positive("tap.ampacity", t.ampacity.0)?;
        let ocpd = positive("tap.feeder_ocpd", t.feeder_ocpd.0)?;
        let source_ocpd: f64 = sources
            .iter()
            .map(|s| s.breaker.unwrap_or(s.minimum_breaker))
            .sum();
        let (fraction, label) = match t.rule {
            TapRule::TenFoot => (0.1, "1/10"),
            TapRule::TwentyFiveFoot => (1.0 / 3.0, "1/3"),
        };
        feeder_checks.push(match (e, t.rule) {
            (Edition::Nec2023, TapRule::TenFoot) => not_applicable(
                "feeder tap",
                r.tap,
                "2023 705.12(A)(3) covers taps by 240.21(B)(2) and (B)(4); a 10 ft tap is checked by 240.21(B)(1) as written: not decided here".into(),
            ),
            (Edition::Nec2023, TapRule::TwentyFiveFoot) => {
                let need = fraction * (ocpd + source_ocpd);
                OptionCheck {
                    option: "feeder tap".into(),
                    reference: r.tap.into(),
                    applies: true,
                    note: format!("tap ampacity ≥ {label} of (feeder OCPD + source OCPD ratings)"),
                    passes: Some(amp >= need - 1e-9),
                    sum_a: Some(need),
                    limit_a: Some(amp),
                    max_source_125_a: None,
                    max_inverter_output_a: None,
                    max_source_breaker_a: breaker_at_or_below(amp / fraction - ocpd, e),
                }
            }
            _ => {
                let need = fraction * (ocpd + total_125);
                OptionCheck {
                    option: "feeder tap".into(),
                    reference: r.tap.into(),
                    applies: true,
                    note: format!(
                        "tap sized by 240.21(B) on the feeder OCPD plus 125 % of the sources: ampacity ≥ {label} of the sum"
                    ),
                    passes: Some(amp >= need - 1e-9),
                    sum_a: Some(need),
                    limit_a: Some(amp),
                    max_source_125_a: Some((amp / fraction - ocpd).max(0.0)),
                    max_inverter_output_a: Some(((amp / fraction - ocpd) / 1.25).max(0.0)),
                    max_source_breaker_a: None,
                }
            }
        });
    }

    // Supply side, as a note with its numbers.
    let supply_name = "supply-side connection (instead of the load side)";
    let supply_side = match e {
        Edition::Nec2017 => match input.service_rating {
            Some(s) => {
                let s = positive("service_rating", s.0)?;
                let sum: f64 = sources
                    .iter()
                    .map(|x| x.breaker.unwrap_or(x.minimum_breaker))
                    .sum();
                OptionCheck {
                    option: supply_name.into(),
                    reference: r.supply.into(),
                    applies: true,
                    note: "the sum of the source OCPD ratings may not exceed the service rating (230.82(6))".into(),
                    passes: Some(sum <= s + 1e-9),
                    sum_a: Some(sum),
                    limit_a: Some(s),
                    max_source_125_a: None,
                    max_inverter_output_a: None,
                    max_source_breaker_a: breaker_at_or_below(s, e),
                }
            }
            None => not_applicable(
                supply_name,
                r.supply,
                "2017: the sum of the source OCPD ratings may not exceed the service rating; give service_rating to check".into(),
            ),
        },
        Edition::Nec2020 | Edition::Nec2023 => {
            let detail = if e == Edition::Nec2020 {
                "2020 moved the supply side to 705.11: the sum of the sources' continuous output currents (other than those a power control system limits, 705.13) may not exceed the service conductor ampacity; conductors from the connection to the first OCPD not smaller than 6 AWG copper or 4 AWG aluminum"
            } else {
                "2023 705.11 keeps the supply-side rules with its overcurrent-protection subsection revised: compare the sources' continuous output with the service conductor ampacity and check the 2023 text for conductor size and OCPD location"
            };
            match input.service_conductor_ampacity {
                Some(a) => {
                    let a = positive("service_conductor_ampacity", a.0)?;
                    OptionCheck {
                        option: supply_name.into(),
                        reference: r.supply.into(),
                        applies: true,
                        note: detail.into(),
                        passes: Some(total <= a + 1e-9),
                        sum_a: Some(total),
                        limit_a: Some(a),
                        max_source_125_a: None,
                        max_inverter_output_a: Some(a),
                        max_source_breaker_a: None,
                    }
                }
                None => not_applicable(
                    supply_name,
                    r.supply,
                    format!("{detail}; give service_conductor_ampacity to check"),
                ),
            }
        }
    };

    if limits_only {
        for c in busbar.iter_mut().chain(feeder_checks.iter_mut()) {
            c.passes = None;
        }
    }
    let passing: Vec<String> = busbar
        .iter()
        .chain(&feeder_checks)
        .filter(|c| c.passes == Some(true))
        .map(|c| format!("{} ({})", c.option, c.reference))
        .collect();
    if main_over_bus {
        assumptions.push(format!(
            "the main ({main} A) is rated above the busbar ({bus} A): the panelboard is not protected at its rating (408.36); the busbar options assume the OCPD protecting the busbar does not exceed it"
        ));
    }
    if input.source_position == SourcePosition::Unknown {
        assumptions.push("source breaker position not stated".into());
    }
    let mut reviewer_checks = vec![
        "busbar rating read from the panelboard label, not from the main breaker".to_string(),
        "each source on a dedicated breaker or fusible disconnect; backfed breakers suitable for backfeed and, if plug-in, fastened unless listed for interactive sources".into(),
        "equipment supplied from more than one source marked to show every source".into(),
        "120 % option: warning label at the source breaker not to relocate it, and the busbar sized for its connected loads by Article 220".into(),
        "sum-of-breakers option: label stating the equipment is fed by multiple sources and that the breakers other than the main may not exceed the busbar".into(),
        "the inverter's listed maximum output OCPD and the conductor ampacity for the chosen breaker".into(),
        "utility interconnection approval and any AHJ or local amendment (some AHJs do not accept the center-fed option or require a main-breaker derate instead)".into(),
    ];
    if e != Edition::Nec2017 {
        reviewer_checks.push(
            "a listed power control system (705.13) may limit the current counted in these calculations".into(),
        );
    }
    Ok(PvInterconnectionResult {
        edition: e,
        sources,
        total_output_a: total,
        total_125_a: total_125,
        busbar_options: busbar,
        feeder_checks,
        passing,
        supply_side,
        reviewer_checks,
        references: vec![r.sizing.into(), "NEC 240.4(B), Table 240.6(A)".into()],
        assumptions,
    })
}

/// Inverter continuous output current from its rated output power: W ÷ V single-phase,
/// W ÷ (V × √3) three-phase.
pub fn inverter_current(kw: f64, volts: f64, three_phase: bool) -> Result<Amps, NecError> {
    let w = positive("kw", kw)? * 1000.0;
    let v = positive("voltage", volts)?;
    Ok(Amps(if three_phase {
        w / (v * 3f64.sqrt())
    } else {
        w / v
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bus: f64, main: f64, out: f64) -> PvInterconnectionInput {
        PvInterconnectionInput {
            edition: Edition::Nec2020,
            busbar_rating: Amps(bus),
            main_ocpd: Amps(main),
            main_position: MainPosition::End,
            source_position: SourcePosition::OppositeEnd,
            dwelling: Some(true),
            sources: vec![Source {
                description: "inverter".into(),
                output_current: Amps(out),
                breaker: None,
            }],
            load_breakers: None,
            feeder: None,
            tap: None,
            service_rating: None,
            service_conductor_ampacity: None,
        }
    }

    fn option<'a>(r: &'a PvInterconnectionResult, name: &str) -> &'a OptionCheck {
        r.busbar_options
            .iter()
            .find(|o| o.option.starts_with(name))
            .unwrap_or_else(|| panic!("no option {name}"))
    }

    #[test]
    fn references_follow_the_edition() {
        for (e, want) in [
            (Edition::Nec2017, "705.12(B)(2)(3)(b)"),
            (Edition::Nec2020, "705.12(B)(3)(2)"),
            (Edition::Nec2023, "705.12(B)(2)"),
        ] {
            let mut i = input(200.0, 200.0, 32.0);
            i.edition = e;
            let r = pv_interconnection(&i).unwrap();
            assert!(option(&r, "120").reference.ends_with(want), "{e}");
        }
    }

    #[test]
    fn position_decides_which_options_apply() {
        let mut i = input(200.0, 200.0, 32.0);
        i.source_position = SourcePosition::Other;
        let r = pv_interconnection(&i).unwrap();
        assert!(!option(&r, "120").applies);
        assert_eq!(option(&r, "100").passes, Some(false));
        // Center-fed, not a dwelling: no center-fed option.
        i.main_position = MainPosition::Center;
        i.source_position = SourcePosition::OppositeEnd;
        i.dwelling = Some(false);
        let r = pv_interconnection(&i).unwrap();
        assert!(!option(&r, "center").applies);
        assert!(!option(&r, "120").applies);
        i.dwelling = Some(true);
        let r = pv_interconnection(&i).unwrap();
        assert_eq!(option(&r, "center").passes, Some(true));
    }

    #[test]
    fn sum_of_breakers_uses_every_breaker() {
        let mut i = input(200.0, 200.0, 24.0);
        i.sources[0].breaker = Some(Amps(30.0));
        i.load_breakers = Some(vec![Amps(50.0), Amps(40.0), Amps(30.0), Amps(20.0)]);
        let r = pv_interconnection(&i).unwrap();
        let s = option(&r, "sum");
        assert_eq!(s.sum_a, Some(170.0));
        assert_eq!(s.passes, Some(true));
        assert_eq!(s.max_source_breaker_a, Some(60.0));
        i.load_breakers = Some(vec![Amps(100.0), Amps(90.0)]);
        let r = pv_interconnection(&i).unwrap();
        assert_eq!(option(&r, "sum").passes, Some(false));
    }

    #[test]
    fn feeder_and_tap_rules() {
        let mut i = input(200.0, 200.0, 32.0);
        i.feeder = Some(FeederConnection {
            ampacity: Amps(200.0),
            primary_ocpd: Amps(200.0),
            at_opposite_end: false,
            load_side_ocpd: None,
        });
        i.tap = Some(TapConnection {
            ampacity: Amps(85.0),
            rule: TapRule::TwentyFiveFoot,
            feeder_ocpd: Amps(200.0),
        });
        let r = pv_interconnection(&i).unwrap();
        assert_eq!(r.feeder_checks[0].passes, Some(false));
        // 1/3 × (200 + 40) = 80 ≤ 85.
        assert_eq!(r.feeder_checks[1].passes, Some(true));
        // A load-side OCPD within the feeder ampacity protects it.
        i.feeder.as_mut().unwrap().load_side_ocpd = Some(Amps(200.0));
        assert_eq!(
            pv_interconnection(&i).unwrap().feeder_checks[0].passes,
            Some(true)
        );
        // 2023: a 25 ft tap counts the source breaker ratings: 1/3 × (200 + 40) = 80.
        i.edition = Edition::Nec2023;
        let r = pv_interconnection(&i).unwrap();
        assert!((r.feeder_checks[1].sum_a.unwrap() - 80.0).abs() < 1e-9);
    }

    #[test]
    fn without_a_source_the_limits_are_given_and_nothing_passes() {
        let mut i = input(225.0, 200.0, 1.0);
        i.sources.clear();
        let r = pv_interconnection(&i).unwrap();
        let o = option(&r, "120");
        assert_eq!(o.passes, None);
        assert_eq!(o.max_source_breaker_a, Some(70.0));
        assert!(r.passing.is_empty());
        // No "-0 A" in the answer.
        assert!(r.total_output_a == 0.0 && r.total_output_a.is_sign_positive());
    }

    #[test]
    fn bad_input_is_refused() {
        let i = input(0.0, 200.0, 32.0);
        assert!(pv_interconnection(&i).is_err());
        let i = input(200.0, 200.0, f64::NAN);
        assert!(pv_interconnection(&i).is_err());
        assert!(inverter_current(-1.0, 240.0, false).is_err());
    }
}
