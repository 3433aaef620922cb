//! Box fill (314.16): the volume the contents of an outlet, device or junction box require
//! (314.16(B), with the allowances of Table 314.16(B)) against the box volume (314.16(A): a
//! standard metal box of Table 314.16(A) or the marked volume, plus marked plaster rings,
//! extension rings and domed covers).
//!
//! Edition differences: the equipment grounding conductor allowance (314.16(B)(5)). 2017:
//! one allowance for all of them by the largest, plus one more for an isolated set permitted
//! by 250.146(D), by the largest of that set. 2020 and 2023: one allowance for up to four,
//! then a quarter allowance for each further one, all by the largest.

use serde::Serialize;

use super::error::{non_negative, positive, NecError};
use super::fill_tables::{self, fill_tables, MetalBox};
use super::units::{ConductorSize, Edition};

/// How a conductor counts (314.16(B)(1)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConductorRun {
    /// Originates outside the box and terminates or is spliced inside: one allowance.
    #[default]
    Terminates,
    /// Passes through unbroken and is shorter than twice the 300.14 free length: one allowance.
    PassesThrough,
    /// Unbroken, looped or coiled, at least twice the 300.14 free length (12 in.): two.
    Looped,
    /// Originates and ends inside the box (pigtail, jumper): none.
    Internal,
}

/// Conductors of one size counted the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxConductors {
    /// How many.
    pub count: u32,
    /// Their size (18 through 6 AWG).
    pub size: ConductorSize,
    /// How they count.
    pub run: ConductorRun,
}

/// Equipment grounding conductors or bonding jumpers of one size entering the box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxEgcs {
    /// How many.
    pub count: u32,
    /// Their size.
    pub size: ConductorSize,
    /// Part of an isolated set for isolated-ground receptacles (250.146(D)).
    pub isolated: bool,
}

/// A yoke or strap with its devices or equipment (314.16(B)(4)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Yoke {
    /// The largest conductor connected to a device on it; `None`: the largest in the box.
    pub largest_conductor: Option<ConductorSize>,
    /// Gangs the device needs when wider than a single 2 in. device box (default 1).
    pub gangs: u32,
    /// What is on it ("duplex receptacle").
    pub description: String,
}

/// Where the box volume comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum BoxVolume {
    /// A standard metal box of Table 314.16(A).
    Standard(&'static MetalBox),
    /// The volume marked on the box (nonmetallic boxes, boxes not in the table), in³.
    Marked(f64),
}

/// Something assembled to the box and marked with its volume (314.16(A)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddedVolume {
    /// "plaster ring", "extension ring", "domed cover".
    pub description: String,
    /// Marked volume, in³.
    pub volume_in3: f64,
}

/// The contents of a box and its volume.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxFillInput {
    /// The edition whose 314.16 applies.
    pub edition: Edition,
    /// The box; `None` answers the required volume and the smallest standard boxes only.
    pub volume: Option<BoxVolume>,
    /// Plaster rings, extension rings, domed covers marked with their volume.
    pub added: Vec<AddedVolume>,
    /// Insulated circuit conductors (and bare ones that are not EGCs).
    pub conductors: Vec<BoxConductors>,
    /// Fixture wires (18 or 16 AWG and the like) entering the box.
    pub fixture_wires: Vec<BoxConductors>,
    /// The fixture wires come from a domed luminaire or similar canopy and end in the box.
    pub fixture_wires_from_canopy: bool,
    /// Equipment grounding conductors and bonding jumpers entering the box.
    pub egcs: Vec<BoxEgcs>,
    /// One or more internal cable clamps.
    pub internal_clamps: bool,
    /// Types of support fitting (luminaire stud, hickey): one allowance each type.
    pub support_fitting_types: u32,
    /// Yokes or straps.
    pub yokes: Vec<Yoke>,
    /// Terminal block assemblies: the largest conductor terminated on each (314.16(B)(6),
    /// 2023).
    pub terminal_blocks: Vec<ConductorSize>,
    /// Barriers installed in the box (314.16(A)).
    pub barriers: Vec<Barrier>,
}

/// A barrier in the box; unless marked, it takes 1/2 in³ (metal) or 1 in³ (nonmetallic).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Barrier {
    /// Metal (true) or nonmetallic.
    pub metal: bool,
    /// Its marked volume, when marked.
    pub marked_in3: Option<f64>,
}

/// One line of the fill calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllowanceLine {
    /// What is counted.
    pub item: String,
    /// Volume allowances (may be a fraction since 2020 for EGCs).
    pub allowances: f64,
    /// The size whose allowance is used.
    pub size: ConductorSize,
    /// Volume allowance of that size (Table 314.16(B); 2023: Table 314.16(B)(1)), in³.
    pub each_in3: f64,
    /// allowances × each.
    pub volume_in3: f64,
    /// The NEC rule.
    pub reference: String,
}

/// How many conductors of one size a box holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxConductors {
    /// Conductor size.
    pub size: ConductorSize,
    /// In the empty box (the Table 314.16(A) count: volume ÷ allowance, rounded down).
    pub empty_box: u32,
    /// More of that size that still fit besides what is in the box now.
    pub more_now: u32,
}

/// The smallest standard metal box of one shape that holds the required volume.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StandardBox {
    /// Table 314.16(A) key.
    pub key: String,
    /// "4 x 2-1/8 square".
    pub label: String,
    /// Its volume, in³.
    pub volume_in3: f64,
}

/// The box fill result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxFillResult {
    /// Edition applied.
    pub edition: Edition,
    /// The allowance table as the edition numbers it.
    pub allowance_table: &'static str,
    /// The allowances, line by line.
    pub lines: Vec<AllowanceLine>,
    /// Sum of the lines, in³ (314.16(B)).
    pub required_in3: f64,
    /// Where the box volume comes from (no box given: `None`, and so the fields below).
    pub box_description: Option<String>,
    /// The box alone, in³.
    pub box_volume_in3: Option<f64>,
    /// Marked rings and covers added to it.
    pub added: Vec<AddedVolume>,
    /// Box plus added volume, in³ (314.16(A)).
    pub total_volume_in3: Option<f64>,
    /// Whether the required volume fits.
    pub passes: Option<bool>,
    /// total volume − required, in³ (negative when over).
    pub spare_in3: Option<f64>,
    /// Conductors of each size the box holds (empty without a box).
    pub max_conductors: Vec<MaxConductors>,
    /// The smallest standard metal box of each shape that holds the required volume (with no
    /// ring or cover added).
    pub smallest_standard_boxes: Vec<StandardBox>,
    /// Notes on what was and was not counted.
    pub notes: Vec<String>,
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// The box fill calculation of 314.16.
pub fn box_fill(input: &BoxFillInput) -> Result<BoxFillResult, NecError> {
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    let mut present: Vec<ConductorSize> = Vec::new();

    for c in &input.conductors {
        let each = fill_tables::volume_allowance(c.size)?;
        present.push(c.size);
        let (per, what, reference) = match c.run {
            ConductorRun::Terminates => (
                1.0,
                "terminating or spliced in the box",
                "314.16(B)(1): one allowance for each conductor from outside the box",
            ),
            ConductorRun::PassesThrough => (
                1.0,
                "passing through unbroken",
                "314.16(B)(1): one allowance for each conductor passing through",
            ),
            ConductorRun::Looped => (
                2.0,
                "unbroken, looped (12 in. or more)",
                "314.16(B)(1): two allowances for an unbroken loop at least twice the 300.14 length",
            ),
            ConductorRun::Internal => (
                0.0,
                "originating and ending in the box (pigtails, jumpers)",
                "314.16(B)(1): not counted",
            ),
        };
        let n = f64::from(c.count) * per;
        lines.push(line(
            format!("{} × {} {what}", c.count, c.size),
            n,
            c.size,
            each,
            reference.to_string(),
        ));
    }

    let small_fixture_wires: u32 = input
        .fixture_wires
        .iter()
        .filter(|f| f.size < ConductorSize::Awg(14))
        .map(|f| f.count)
        .sum();
    // 314.16(B)(1) Exception: up to four fixture wires smaller than 14 AWG (and the EGC) from
    // a domed canopy that end in the box are left out.
    let canopy_exception = input.fixture_wires_from_canopy
        && small_fixture_wires <= 4
        && input
            .fixture_wires
            .iter()
            .all(|f| f.size < ConductorSize::Awg(14));
    for f in &input.fixture_wires {
        let each = fill_tables::volume_allowance(f.size)?;
        present.push(f.size);
        if canopy_exception {
            lines.push(line(
                format!("{} × {} fixture wire from a domed canopy", f.count, f.size),
                0.0,
                f.size,
                each,
                "314.16(B)(1) Exception: not more than four fixture wires smaller than 14 AWG \
                 from a domed luminaire canopy, ending in the box, are omitted"
                    .into(),
            ));
        } else {
            lines.push(line(
                format!("{} × {} fixture wire", f.count, f.size),
                f64::from(f.count),
                f.size,
                each,
                "314.16(B)(1): one allowance for each fixture wire".into(),
            ));
        }
    }
    if input.fixture_wires_from_canopy && !canopy_exception && !input.fixture_wires.is_empty() {
        notes.push(format!(
            "The domed-canopy exception of 314.16(B)(1) was not applied: it covers at most four \
             fixture wires smaller than 14 AWG ({small_fixture_wires} given, sizes {})",
            input
                .fixture_wires
                .iter()
                .map(|f| f.size.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    for e in &input.egcs {
        fill_tables::volume_allowance(e.size)?;
        present.push(e.size);
    }
    let largest = present.iter().copied().max();

    if input.internal_clamps {
        let size = largest.ok_or_else(|| no_conductors("internal_clamps"))?;
        lines.push(line(
            "internal cable clamps (one allowance for all)".into(),
            1.0,
            size,
            fill_tables::volume_allowance(size)?,
            "314.16(B)(2): one allowance by the largest conductor in the box".into(),
        ));
    }
    if input.support_fitting_types > 0 {
        let size = largest.ok_or_else(|| no_conductors("support_fittings"))?;
        lines.push(line(
            format!(
                "luminaire studs / hickeys ({} type{})",
                input.support_fitting_types,
                if input.support_fitting_types == 1 { "" } else { "s" }
            ),
            f64::from(input.support_fitting_types),
            size,
            fill_tables::volume_allowance(size)?,
            "314.16(B)(3): one allowance for each type of fitting, by the largest conductor in the box"
                .into(),
        ));
    }
    for (i, y) in input.yokes.iter().enumerate() {
        let gangs = y.gangs.max(1);
        let size = match y.largest_conductor {
            Some(s) => s,
            None => {
                let s = largest.ok_or_else(|| no_conductors("yokes"))?;
                notes.push(format!(
                    "Yoke {} ({}): the largest conductor connected to it was not given; the \
                     largest in the box ({s}) was used",
                    i + 1,
                    y.description
                ));
                s
            }
        };
        let label = if y.description.is_empty() {
            format!("yoke {}", i + 1)
        } else {
            format!("yoke {} ({})", i + 1, y.description)
        };
        let (item, reference) = if gangs > 1 {
            (
                format!("{label}, {gangs} gangs wide"),
                "314.16(B)(4): a device wider than a single 2 in. device box takes two allowances \
                 for each gang it needs, by the largest conductor connected to it",
            )
        } else {
            (
                label,
                "314.16(B)(4): two allowances for each yoke, by the largest conductor connected \
                 to its devices",
            )
        };
        lines.push(line(
            item,
            2.0 * f64::from(gangs),
            size,
            fill_tables::volume_allowance(size)?,
            reference.into(),
        ));
    }

    for (i, size) in input.terminal_blocks.iter().enumerate() {
        let each = fill_tables::volume_allowance(*size)?;
        let (n, reference) = if input.edition >= Edition::Nec2023 {
            (
                1.0,
                "314.16(B)(6) (2023): one allowance for each terminal block assembly, by the \
                 largest conductor terminated on it",
            )
        } else {
            (
                0.0,
                "no terminal block allowance before 2023 (314.16(B)(6) is new in 2023); the \
                 block still takes room",
            )
        };
        lines.push(line(
            format!("terminal block {}", i + 1),
            n,
            *size,
            each,
            reference.into(),
        ));
    }

    egc_lines(input, &mut lines, &mut notes)?;

    let required: f64 = lines.iter().map(|l| l.volume_in3).sum();
    let boxed = match &input.volume {
        Some(BoxVolume::Standard(b)) => Some((
            format!("{} metal box, Table 314.16(A)", b.label()),
            b.volume_in3,
        )),
        Some(BoxVolume::Marked(v)) => Some((
            "volume marked on the box (314.16(A)(2))".to_string(),
            positive("box_volume_in3", *v)?,
        )),
        None => None,
    };
    let mut added = 0.0;
    for a in &input.added {
        added += positive("added volume", a.volume_in3)?;
    }
    let mut barriers = 0.0;
    for b in &input.barriers {
        barriers += match b.marked_in3 {
            Some(v) => positive("barrier marked volume", v)?,
            None if b.metal => 0.5,
            None => 1.0,
        };
    }
    if !input.barriers.is_empty() {
        notes.push(format!(
            "Barriers take {barriers} in³ from the box (314.16(A): 1/2 in³ each metal, 1 in³ \
             each nonmetallic, unless marked); the volume must also be apportioned to each \
             space they make, which this calculation does not split"
        ));
    }
    let added = added - barriers;
    let total = boxed.as_ref().map(|(_, v)| v + added);
    let spare = total.map(|t| t - required);
    let max_conductors = match (total, spare) {
        (Some(total), Some(spare)) => fill_tables()?
            .allowance
            .iter()
            .map(|(size, each)| MaxConductors {
                size: *size,
                empty_box: floor_count(total / each),
                more_now: floor_count(spare.max(0.0) / each),
            })
            .collect(),
        _ => Vec::new(),
    };
    let smallest_standard_boxes = smallest_boxes(required)?;

    if largest.is_some_and(|s| s > ConductorSize::Awg(6)) {
        notes.push("Conductors 4 AWG and larger: size the box by 314.28".into());
    }
    notes.push(
        "Conduit bodies (314.16(C)), boxes with 4 AWG or larger conductors (314.28) and the \
         volume of a nonmetallic box or ring not marked with it are outside this calculation; \
         a listing or the AHJ can require more room (e.g. for a device's own instructions)."
            .into(),
    );

    Ok(BoxFillResult {
        edition: input.edition,
        allowance_table: if input.edition >= Edition::Nec2023 {
            "Table 314.16(B)(1)"
        } else {
            "Table 314.16(B)"
        },
        lines,
        required_in3: round4(required),
        box_description: boxed.as_ref().map(|(d, _)| d.clone()),
        box_volume_in3: boxed.as_ref().map(|(_, v)| *v),
        added: input.added.clone(),
        total_volume_in3: total.map(round4),
        passes: spare.map(|s| s >= -1e-9),
        spare_in3: spare.map(round4),
        max_conductors,
        smallest_standard_boxes,
        notes,
    })
}

fn no_conductors(what: &'static str) -> NecError {
    NecError::MissingInput {
        field: what,
        reason: "its allowance is sized by the largest conductor in the box; list the conductors"
            .into(),
    }
}

fn line(
    item: String,
    allowances: f64,
    size: ConductorSize,
    each: f64,
    reference: String,
) -> AllowanceLine {
    AllowanceLine {
        item,
        allowances,
        size,
        each_in3: each,
        volume_in3: round4(allowances * each),
        reference,
    }
}

/// A whole number of conductors in `v` allowances (a tiny tolerance for float error).
fn floor_count(v: f64) -> u32 {
    (v + 1e-9).floor().max(0.0) as u32
}

/// 314.16(B)(5), by edition.
fn egc_lines(
    input: &BoxFillInput,
    lines: &mut Vec<AllowanceLine>,
    notes: &mut Vec<String>,
) -> Result<(), NecError> {
    let all: Vec<&BoxEgcs> = input.egcs.iter().filter(|e| e.count > 0).collect();
    let Some(largest) = all.iter().map(|e| e.size).max() else {
        return Ok(());
    };
    let count: u32 = all.iter().map(|e| e.count).sum();
    let each = fill_tables::volume_allowance(largest)?;
    match input.edition {
        Edition::Nec2017 => {
            let regular: Vec<&&BoxEgcs> = all.iter().filter(|e| !e.isolated).collect();
            let isolated: Vec<&&BoxEgcs> = all.iter().filter(|e| e.isolated).collect();
            if let Some(size) = regular.iter().map(|e| e.size).max() {
                let n: u32 = regular.iter().map(|e| e.count).sum();
                lines.push(line(
                    format!("{n} equipment grounding conductor(s)/bonding jumper(s)"),
                    1.0,
                    size,
                    fill_tables::volume_allowance(size)?,
                    "314.16(B)(5) (2017): one allowance for all, by the largest".into(),
                ));
            }
            if let Some(size) = isolated.iter().map(|e| e.size).max() {
                notes.push(
                    "The 2017 allowance for an isolated EGC set is applied from the 2017 text; \
                     no second public copy of that sentence was found, so check it against \
                     the code book"
                        .into(),
                );
                let n: u32 = isolated.iter().map(|e| e.count).sum();
                lines.push(line(
                    format!("{n} isolated equipment grounding conductor(s) (250.146(D) set)"),
                    1.0,
                    size,
                    fill_tables::volume_allowance(size)?,
                    "314.16(B)(5) (2017): one more allowance for the additional set permitted by \
                     250.146(D), by its largest"
                        .into(),
                ));
            }
            if count > 4 {
                notes.push(format!(
                    "{count} EGCs: under 2017 they take one allowance however many there are; \
                     2020 and later add a quarter allowance for each beyond four"
                ));
            }
        }
        Edition::Nec2020 | Edition::Nec2023 => {
            let extra = count.saturating_sub(4);
            let year = input.edition.year();
            lines.push(line(
                format!(
                    "{} equipment grounding conductor(s)/bonding jumper(s) (up to four)",
                    count.min(4)
                ),
                1.0,
                largest,
                each,
                format!("314.16(B)(5) ({year}): one allowance for up to four, by the largest"),
            ));
            if extra > 0 {
                lines.push(line(
                    format!("{extra} more equipment grounding conductor(s) beyond four"),
                    0.25 * f64::from(extra),
                    largest,
                    each,
                    format!(
                        "314.16(B)(5) ({year}): a quarter allowance for each beyond four, by the \
                         largest"
                    ),
                ));
            }
            if all.iter().any(|e| e.isolated) {
                notes.push(format!(
                    "Isolated EGCs (250.146(D)) are counted with the others under {year}; 2017 \
                     gave the isolated set an allowance of its own"
                ));
            }
        }
    }
    Ok(())
}

/// The smallest standard box of each shape holding `required` in³.
fn smallest_boxes(required: f64) -> Result<Vec<StandardBox>, NecError> {
    non_negative("required volume", required)?;
    let mut out: Vec<StandardBox> = Vec::new();
    let mut shapes: Vec<&str> = Vec::new();
    let boxes = &fill_tables()?.boxes;
    for b in boxes {
        let shape = shape_of(&b.key);
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    for shape in shapes {
        if let Some(b) = boxes
            .iter()
            .filter(|b| shape_of(&b.key) == shape && b.volume_in3 + 1e-9 >= required)
            .min_by(|a, b| a.volume_in3.total_cmp(&b.volume_in3))
        {
            out.push(StandardBox {
                key: b.key.clone(),
                label: b.label(),
                volume_in3: b.volume_in3,
            });
        }
    }
    Ok(out)
}

/// The shape family of a box key: round/octagonal, 4 in. square, 4-11/16 in. square, 3 x 2
/// device, 4 x 2-1/8 device, masonry, FS/FD.
fn shape_of(key: &str) -> &str {
    let (shape, size) = key.split_once('_').unwrap_or((key, ""));
    match shape {
        "square" if size.starts_with("4-11/16") => "square_4-11/16",
        "square" => "square_4",
        "device" if size.starts_with("4x") => "device_4x2-1/8",
        "device" => "device_3x2",
        "fs" | "fd" => "fs_fd",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> ConductorSize {
        t.parse().unwrap()
    }

    fn input(edition: Edition) -> BoxFillInput {
        BoxFillInput {
            edition,
            volume: Some(BoxVolume::Marked(18.0)),
            added: vec![],
            conductors: vec![],
            fixture_wires: vec![],
            fixture_wires_from_canopy: false,
            egcs: vec![],
            internal_clamps: false,
            support_fitting_types: 0,
            yokes: vec![],
            terminal_blocks: vec![],
            barriers: vec![],
        }
    }

    fn conductors(count: u32, size: &str, run: ConductorRun) -> BoxConductors {
        BoxConductors {
            count,
            size: s(size),
            run,
        }
    }

    /// Mike Holt forum, "EGC Fill" (2020 NEC 314.16(B)(5)): five 14 AWG and five 12 AWG EGCs
    /// take one allowance for four plus a quarter for each of the six others, all 12 AWG:
    /// 2.5 × 2.25 = 5.625 in³. Under 2017 the same ten take one allowance, 2.25 in³.
    #[test]
    fn egc_allowance_changes_in_2020() {
        let egcs = vec![
            BoxEgcs {
                count: 5,
                size: s("14"),
                isolated: false,
            },
            BoxEgcs {
                count: 5,
                size: s("12"),
                isolated: false,
            },
        ];
        for (edition, want) in [
            (Edition::Nec2017, 2.25),
            (Edition::Nec2020, 5.625),
            (Edition::Nec2023, 5.625),
        ] {
            let mut i = input(edition);
            i.egcs = egcs.clone();
            let r = box_fill(&i).unwrap();
            assert_eq!(r.required_in3, want, "{edition}");
        }
        // Four or fewer: one allowance in every edition.
        let mut i = input(Edition::Nec2023);
        i.egcs = vec![BoxEgcs {
            count: 4,
            size: s("12"),
            isolated: false,
        }];
        assert_eq!(box_fill(&i).unwrap().required_in3, 2.25);
    }

    /// An isolated set (250.146(D)) had its own allowance in 2017; from 2020 it is counted with
    /// the other EGCs.
    #[test]
    fn isolated_egc_set_by_edition() {
        let egcs = vec![
            BoxEgcs {
                count: 2,
                size: s("12"),
                isolated: false,
            },
            BoxEgcs {
                count: 2,
                size: s("12"),
                isolated: true,
            },
        ];
        let mut i = input(Edition::Nec2017);
        i.egcs = egcs.clone();
        assert_eq!(box_fill(&i).unwrap().required_in3, 4.5);
        i.edition = Edition::Nec2020;
        assert_eq!(box_fill(&i).unwrap().required_in3, 2.25);
    }

    /// Conductor counting, clamps, fittings, yokes (wide devices by gang) and the canopy
    /// exception, line by line.
    #[test]
    fn every_allowance_counts_as_314_16_b_says() {
        let mut i = input(Edition::Nec2023);
        i.conductors = vec![
            conductors(4, "12", ConductorRun::Terminates),
            conductors(2, "14", ConductorRun::PassesThrough),
            conductors(1, "12", ConductorRun::Looped),
            conductors(3, "12", ConductorRun::Internal),
        ];
        i.internal_clamps = true;
        i.support_fitting_types = 1;
        i.yokes = vec![
            Yoke {
                largest_conductor: Some(s("14")),
                gangs: 1,
                description: "switch".into(),
            },
            Yoke {
                largest_conductor: Some(s("10")),
                gangs: 2,
                description: "range receptacle".into(),
            },
        ];
        // 4×2.25 + 2×2 + 2×2.25 + 0 + clamps 2.25 + stud 2.25 + switch 2×2 + wide device 4×2.5
        let r = box_fill(&i).unwrap();
        let v: Vec<f64> = r.lines.iter().map(|l| l.volume_in3).collect();
        assert_eq!(v, vec![9.0, 4.0, 4.5, 0.0, 2.25, 2.25, 4.0, 10.0]);
        assert_eq!(r.required_in3, 36.0);
        assert_eq!(r.passes, Some(false));
        assert_eq!(r.spare_in3, Some(-18.0));
        // Smallest standard boxes holding 36 in³: only the deep 4-11/16 in. square box.
        let keys: Vec<&str> = r
            .smallest_standard_boxes
            .iter()
            .map(|b| b.key.as_str())
            .collect();
        assert_eq!(keys, vec!["square_4-11/16x2-1/8"]);

        // Three 18 AWG fixture wires from a domed canopy are left out; five are not.
        let mut i = input(Edition::Nec2020);
        i.fixture_wires = vec![conductors(3, "18", ConductorRun::Terminates)];
        i.fixture_wires_from_canopy = true;
        assert_eq!(box_fill(&i).unwrap().required_in3, 0.0);
        i.fixture_wires = vec![conductors(5, "18", ConductorRun::Terminates)];
        let r = box_fill(&i).unwrap();
        assert_eq!(r.required_in3, 7.5);
        assert!(r.notes[0].contains("not applied"), "{:?}", r.notes);
    }

    /// 2023 adds one allowance per terminal block assembly (EC&M Code Quiz "Volume Allowance
    /// Requirement for a Terminal Block", 2023 NEC); earlier editions have no such line.
    /// Unmarked barriers take 1/2 in³ (metal) or 1 in³ (nonmetallic).
    #[test]
    fn terminal_blocks_2023_and_barriers() {
        let mut i = input(Edition::Nec2023);
        i.conductors = vec![conductors(4, "10", ConductorRun::Terminates)];
        i.terminal_blocks = vec![s("10")];
        assert_eq!(box_fill(&i).unwrap().required_in3, 12.5);
        i.edition = Edition::Nec2020;
        assert_eq!(box_fill(&i).unwrap().required_in3, 10.0);
        i.barriers = vec![
            Barrier {
                metal: true,
                marked_in3: None,
            },
            Barrier {
                metal: false,
                marked_in3: None,
            },
        ];
        let r = box_fill(&i).unwrap();
        assert_eq!(r.total_volume_in3, Some(16.5));
        assert!(
            r.notes.iter().any(|n| n.contains("apportioned")),
            "{:?}",
            r.notes
        );
    }

    /// The box volume adds the marked volume of rings and covers; the counts per size are the
    /// Table 314.16(A) arithmetic on the total.
    #[test]
    fn rings_add_volume_and_counts_follow() {
        let mut i = input(Edition::Nec2023);
        i.volume = Some(BoxVolume::Standard(
            fill_tables::metal_box("square_4x1-1/2").unwrap(),
        ));
        i.added = vec![AddedVolume {
            description: "plaster ring".into(),
            volume_in3: 3.6,
        }];
        i.conductors = vec![conductors(6, "12", ConductorRun::Terminates)];
        let r = box_fill(&i).unwrap();
        assert_eq!(r.total_volume_in3, Some(24.6));
        assert_eq!(r.required_in3, 13.5);
        let twelve = r.max_conductors.iter().find(|m| m.size == s("12")).unwrap();
        assert_eq!((twelve.empty_box, twelve.more_now), (10, 4));
        // 4 AWG is 314.28, not 314.16.
        i.conductors = vec![conductors(3, "4", ConductorRun::Terminates)];
        assert!(box_fill(&i).unwrap_err().to_string().contains("314.28"));
        // A clamp needs a conductor to size it.
        let mut i = input(Edition::Nec2023);
        i.internal_clamps = true;
        assert!(matches!(box_fill(&i), Err(NecError::MissingInput { .. })));
    }
}
