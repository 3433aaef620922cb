//! Rendered documents: the PDF's text (extracted with pdf-extract) holds the values the
//! analysis code computes, the PNG decodes at the page size, golden images catch layout
//! regressions, and the files reach Slack and Discord threads in their real upload shapes.
//!
//! `SPARKY_UPDATE_GOLDEN=1 cargo test --test it reports::` rewrites the golden images in
//! `tests/fixtures/reports/` and the samples in `docs/reports/` after an intended change.

use crate::support;
use crate::tools_fixture;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use resvg::tiny_skia::Pixmap;
use serde_json::json;
use sparky::nec::units::Watts;
use sparky::project::analysis::{
    circuit_voltage_drop, panel_loading, spare_spaces, FaultCalculator,
};
use sparky::project::inspection::{inspect, InspectOptions};
use sparky::project::{ChargingSourceSpec, LoadItemSpec, ProjectData, Workspace};
use sparky::report::document::num;
use sparky::report::{self, Format, ReportKind};
use sparky::store::Store;
use support::bot::{Bot, Db};
use support::fake_llm::Reply;
use support::fake_slack::{app_mention, slash_command_form, SlackBot, ALICE, CHANNEL, TEAM};

const WAIT: Duration = Duration::from_secs(20);

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0)
        .single()
        .expect("date")
}

async fn add_energy(store: &Arc<dyn Store>, project: i64) {
    for (name, w, h, duty, qty) in [
        ("Dometic CFX3 45 fridge", 45.0, 24.0, 0.35, 1),
        ("LED cabin lights", 4.0, 5.0, 1.0, 6),
        ("Water pump", 60.0, 0.5, 1.0, 1),
    ] {
        store
            .add_load_item(
                project,
                &LoadItemSpec {
                    name: name.into(),
                    watts: Watts(w),
                    hours_per_day: h,
                    duty_cycle: duty,
                    quantity: qty,
                    notes: String::new(),
                },
            )
            .await
            .expect("load");
    }
    store
        .add_charging_source(
            project,
            &ChargingSourceSpec {
                name: "400 W roof solar".into(),
                kind: "solar".into(),
                watts: Watts(400.0),
                hours_per_day: 4.5,
                efficiency: 0.8,
                notes: "peak sun hours, winter".into(),
            },
        )
        .await
        .expect("source");
}

/// The seeded "Shop" project (tools_fixture) with an energy budget.
async fn project() -> (ProjectData, tempfile::TempDir) {
    let (store, dir) = tools_fixture::sqlite().await;
    let id = tools_fixture::seed(&store, "Shop").await;
    add_energy(&store, id).await;
    (store.load_project(id).await.expect("load"), dir)
}

fn render(p: &ProjectData, kind: &ReportKind, format: Format) -> report::Rendered {
    report::render(p, kind, format, "alice", at()).expect("render")
}

/// The PDF's text as pdf-extract reads it, without whitespace: each glyph is placed on its
/// own, and pdf-extract's word-gap guess puts a space between most of them.
fn pdf_text(bytes: &[u8]) -> Text {
    let text = pdf_extract::extract_text_from_mem(bytes).expect("pdf text");
    Text(text.chars().filter(|c| !c.is_whitespace()).collect())
}

/// Extracted text, compared without whitespace.
#[derive(Debug)]
struct Text(String);

impl Text {
    fn contains(&self, needle: &str) -> bool {
        let n: String = needle.chars().filter(|c| !c.is_whitespace()).collect();
        self.0.contains(&n)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn panel(name: &str) -> ReportKind {
    ReportKind::Panel { panel: name.into() }
}

#[tokio::test]
async fn the_panel_schedule_pdf_is_searchable_and_holds_the_schedule_values() {
    let (p, _dir) = project().await;
    let r = render(&p, &panel("LP-1"), Format::Pdf);
    assert!(r.bytes.starts_with(b"%PDF-"));
    assert_eq!(r.file_name, "panel-schedule-LP-1.pdf");
    let raw = String::from_utf8_lossy(&r.bytes);
    // The embedded font program travels with the file; no standard-14 font is referenced.
    assert!(raw.contains("/FontFile2"), "font embedded");
    assert!(!raw.contains("/Helvetica"));
    let text = pdf_text(&r.bytes);
    for needle in [
        "Panel schedule LP-1",
        "Project: Shop",
        "NEC 2023",
        "issued 2026-11-24",
        "requested by alice",
        "225 A",
        "200 A breaker",
        "BELOW the available fault current",
        "Page 1 of 1",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
    let lp1 = p.panel_by_name("LP-1").expect("LP-1");
    let circuits = p.circuits_of(lp1.id);
    assert_eq!(circuits.len(), 6);
    for c in &circuits {
        let c = &c.spec;
        assert!(text.contains(&c.description), "{} missing", c.description);
        assert!(
            text.contains(&num(c.load_va.0, 0)),
            "{} VA missing",
            c.load_va.0
        );
        assert!(text.contains(&format!("{}", c.breaker)));
        // Voltage drop exactly as the analysis computes it, where it can.
        if let Ok(vd) = circuit_voltage_drop(&lp1.spec, c, None, None) {
            assert!(
                text.contains(&format!("{:.2} %", vd.percent)),
                "VD of {}",
                c.description
            );
        }
    }
    // Per-phase totals with continuous loads at 125 %.
    let specs: Vec<_> = circuits.iter().map(|c| &c.spec).collect();
    let loading = panel_loading(&lp1.spec, &specs)
        .expect("loading")
        .expect("some");
    for ph in &loading.phases {
        assert!(
            text.contains(&num(ph.design_va, 0)),
            "phase {} design VA",
            ph.phase
        );
        assert!(
            text.contains(&num(ph.design_amps, 1)),
            "phase {} amps",
            ph.phase
        );
    }
    assert!(text.contains(&num(loading.continuous_va * 1.25, 0)));
    // Spare spaces, the recorded EGC and the fault current at the panel.
    assert!(text.contains(&format!(
        "Spare spaces ({}): 11-41, 10-42",
        spare_spaces(&lp1.spec, &circuits)
    )));
    assert!(text.contains("12 AWG"), "EV charger's recorded #12 EGC");
    let fault = FaultCalculator::new(&p).at("LP-1").expect("fault");
    assert!(text.contains(&format!("{} kA", num(fault.fault_ka, 2))));
}

#[tokio::test]
async fn the_png_decodes_at_the_page_size() {
    let (p, _dir) = project().await;
    let r = render(&p, &panel("LP-1"), Format::Png);
    assert_eq!(r.file_name, "panel-schedule-LP-1.png");
    assert_eq!(r.pages, 1);
    let img = Pixmap::decode_png(&r.bytes).expect("PNG decodes");
    // Letter landscape, 792 × 612 pt at 1.5 px/pt.
    assert_eq!((img.width(), img.height()), (1188, 918));
    // Portrait documents stack their pages with a 12 pt gap.
    let r = render(&p, &ReportKind::Inspection, Format::Png);
    let img = Pixmap::decode_png(&r.bytes).expect("PNG decodes");
    let pages = r.pages as u32;
    assert_eq!(img.width(), 918);
    assert_eq!(img.height(), 1188 * pages + 18 * (pages - 1));
}

#[tokio::test]
async fn inspection_load_and_energy_documents_carry_the_computed_values() {
    let (p, _dir) = project().await;
    let r = render(&p, &ReportKind::Inspection, Format::Pdf);
    let text = pdf_text(&r.bytes);
    let insp = inspect(&p, &InspectOptions::default()).expect("inspect");
    assert!(insp.counts.violations > 0);
    assert!(
        text.contains(&format!("Violations ({})", insp.counts.violations)),
        "{text}"
    );
    if insp.counts.warnings > 0 {
        assert!(text.contains(&format!("Warnings ({})", insp.counts.warnings)));
    }
    assert!(text.contains("NEC 250.122"), "EGC finding reference");
    assert!(text.contains("EV charger garage"));
    assert_eq!(r.summary, sparky::project::inspection::summary_line(&insp));
    assert!(r.summary.starts_with(&format!(
        "{} violation(s), {} warning(s), {} info; checks: ",
        insp.counts.violations, insp.counts.warnings, insp.counts.info
    )));
    // The seeded project has circuits without length or size: never read as clean.
    assert!(r.summary.contains("not a clean result"), "{}", r.summary);

    // Service load: every circuit once, continuous at 125 %; summed here independently.
    let total: f64 = p
        .circuits
        .iter()
        .map(|c| c.spec.load_va.0 * if c.spec.continuous { 1.25 } else { 1.0 })
        .sum();
    let text = pdf_text(&render(&p, &ReportKind::Load, Format::Pdf).bytes);
    assert!(text.contains(&num(total, 0)), "{} in {text}", num(total, 0));
    let amps = total / (3f64.sqrt() * 208.0);
    assert!(text.contains(&format!("{} A", num(amps, 1))), "{text}");

    // Energy budget: 45 W × 24 h × 35 % = 378 Wh; 6 × 4 W × 5 h = 120 Wh; solar 1,440 Wh.
    let text = pdf_text(&render(&p, &ReportKind::Energy, Format::Pdf).bytes);
    for needle in [
        "378",
        "120",
        "1,440",
        "surplus of 912 Wh/day",
        "Dometic CFX3 45 fridge",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from: {text}");
    }
}

#[tokio::test]
async fn long_schedules_are_paged_with_numbered_pages() {
    let (store, _dir) = tools_fixture::sqlite().await;
    let id = tools_fixture::seed(&store, "Big").await;
    let big = store
        .add_panel(
            id,
            &sparky::project::PanelSpec {
                name: "DP-9".into(),
                voltage: sparky::nec::units::Volts(208.0),
                phase: sparky::nec::units::Phase::Three,
                bus_rating: sparky::nec::units::Amps(800.0),
                main_breaker: None,
                interrupting_rating_ka: Some(65.0),
                fed_from: Some("service".into()),
                spaces: 84,
                location: String::new(),
            },
        )
        .await
        .expect("panel");
    for n in 1..=84 {
        let c = tools_fixture::circuit(
            n,
            1,
            &format!("Office receptacles {n}"),
            360.0,
            20.0,
            Some("12"),
            Some(50.0),
        );
        store.add_circuit(big.id, &c).await.expect("circuit");
    }
    let p = store.load_project(id).await.expect("load");
    let r = render(&p, &panel("DP-9"), Format::Pdf);
    assert!(r.pages >= 3, "{} pages", r.pages);
    let raw = String::from_utf8_lossy(&r.bytes);
    let page_objects = raw.matches("/Type /Page").count() - raw.matches("/Type /Pages").count();
    assert_eq!(page_objects, r.pages);
    let text = pdf_text(&r.bytes);
    for n in 1..=r.pages {
        assert!(text.contains(&format!("Page {n} of {}", r.pages)));
    }
    for n in 1..=84 {
        assert!(
            text.contains(&format!("Office receptacles {n}360")),
            "circuit {n} and its load"
        );
    }
}

#[tokio::test]
async fn unknown_panels_and_empty_budgets_are_clear_errors() {
    let (store, _dir) = tools_fixture::sqlite().await;
    let id = tools_fixture::seed(&store, "Shop").await;
    let p = store.load_project(id).await.expect("load");
    let e = report::render(&p, &panel("LP-9"), Format::Pdf, "a", at()).unwrap_err();
    assert!(e.to_string().contains("LP-1, LP-2"), "{e}");
    let e = report::render(&p, &ReportKind::Energy, Format::Png, "a", at()).unwrap_err();
    assert!(
        e.to_string().contains("no loads or charging sources"),
        "{e}"
    );
    assert!(ReportKind::parse("panel", None).is_err());
    assert!(ReportKind::parse("invoice", None).is_err());
    assert!("docx".parse::<Format>().is_err());
}

// ----- golden images -----

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Share of pixels differing by more than 48 levels in a channel, and the mean difference.
fn difference(a: &Pixmap, b: &Pixmap) -> (f64, f64) {
    let (pa, pb) = (a.data(), b.data());
    let mut off = 0usize;
    let mut sum = 0u64;
    for (x, y) in pa.chunks(4).zip(pb.chunks(4)) {
        let d = x
            .iter()
            .zip(y)
            .map(|(p, q)| p.abs_diff(*q))
            .max()
            .unwrap_or(0);
        sum += u64::from(d);
        if d > 48 {
            off += 1;
        }
    }
    let n = (pa.len() / 4).max(1) as f64;
    (off as f64 / n, sum as f64 / n)
}

/// Within tolerance of the golden image: same size, at most 0.3 % of pixels visibly off.
fn matches_golden(png: &[u8], golden: &[u8]) -> Result<(), String> {
    let a = Pixmap::decode_png(png).map_err(|e| e.to_string())?;
    let b = Pixmap::decode_png(golden).map_err(|e| e.to_string())?;
    if (a.width(), a.height()) != (b.width(), b.height()) {
        return Err(format!(
            "size {}×{} instead of {}×{}",
            a.width(),
            a.height(),
            b.width(),
            b.height()
        ));
    }
    let (off, mean) = difference(&a, &b);
    if off > 0.003 || mean > 1.5 {
        return Err(format!(
            "{:.3} % of pixels differ (mean {mean:.2})",
            off * 100.0
        ));
    }
    Ok(())
}

#[tokio::test]
async fn every_document_matches_its_golden_image() {
    let (p, _dir) = project().await;
    let update = std::env::var_os("SPARKY_UPDATE_GOLDEN").is_some();
    let kinds = [
        panel("LP-1"),
        ReportKind::Inspection,
        ReportKind::Load,
        ReportKind::Energy,
    ];
    let mut failures = Vec::new();
    for kind in &kinds {
        let png = render(&p, kind, Format::Png);
        let golden = repo(&format!("tests/fixtures/reports/{}", png.file_name));
        if update {
            let pdf = render(&p, kind, Format::Pdf);
            std::fs::create_dir_all(repo("tests/fixtures/reports")).expect("dir");
            std::fs::create_dir_all(repo("docs/reports")).expect("dir");
            std::fs::write(&golden, &png.bytes).expect("golden");
            std::fs::write(repo(&format!("docs/reports/{}", png.file_name)), &png.bytes)
                .expect("sample");
            std::fs::write(repo(&format!("docs/reports/{}", pdf.file_name)), &pdf.bytes)
                .expect("sample");
            continue;
        }
        let expected = std::fs::read(&golden).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with SPARKY_UPDATE_GOLDEN=1)",
                golden.display()
            )
        });
        if let Err(e) = matches_golden(&png.bytes, &expected) {
            failures.push(format!("{}: {e}", png.file_name));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test]
async fn the_golden_comparison_catches_a_layout_change() {
    let (mut p, _dir) = project().await;
    let golden =
        std::fs::read(repo("tests/fixtures/reports/panel-schedule-LP-1.png")).expect("golden");
    // One more circuit is one more row: the comparison must notice.
    let mut extra = p.circuits[0].clone();
    extra.spec.number = 9;
    extra.spec.description = "Added row that moves the totals".into();
    p.circuits.push(extra);
    let changed = render(&p, &panel("LP-1"), Format::Png);
    assert!(matches_golden(&changed.bytes, &golden).is_err());
}

// ----- command line -----

#[tokio::test]
async fn the_cli_writes_the_report_file() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok, "migrate");
    tools_fixture::seed(&bot.store().await, "Shop").await;
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("lp1.pdf");
    let out_s = out.display().to_string();
    let (lines, ok) = bot
        .run(
            &[
                "report",
                "panel",
                "LP-1",
                "--project",
                "Shop",
                "--format",
                "pdf",
                "--out",
                &out_s,
            ],
            "",
        )
        .await;
    assert!(ok, "{lines:?}");
    assert!(lines.join(" ").contains("Panel schedule LP-1"), "{lines:?}");
    let bytes = std::fs::read(&out).expect("file written");
    assert!(pdf_text(&bytes).contains("Kitchen receptacles"));

    let png = dir.path().join("insp.png");
    let png_s = png.display().to_string();
    let (_, ok) = bot
        .run(
            &[
                "report",
                "inspection",
                "--project",
                "Shop",
                "--format",
                "png",
                "--out",
                &png_s,
            ],
            "",
        )
        .await;
    assert!(ok);
    assert!(Pixmap::decode_png(&std::fs::read(&png).expect("png")).is_ok());

    let (_, stderr, ok) = bot
        .run_bytes(
            &[
                "report",
                "panel",
                "XX-9",
                "--project",
                "Shop",
                "--out",
                &out_s,
            ],
            b"",
        )
        .await;
    assert!(!ok);
    assert!(stderr.contains("no panel named 'XX-9'"), "{stderr}");
}

// ----- Slack -----

/// A Slack bot whose channel is bound to the seeded project.
async fn slack_bot() -> SlackBot {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let id = tools_fixture::seed_in(&bot.store, &Workspace::new("slack", TEAM), "Yard").await;
    bot.store
        .bind_channel("slack", TEAM, CHANNEL, id)
        .await
        .expect("bind");
    bot
}

#[tokio::test]
async fn slack_slash_report_uploads_the_file_into_the_command_thread() {
    let bot = slack_bot().await;
    let poster = bot.serve_http().await;
    let r = poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "report panel LP-1",
            "cmd.r1",
        ))
        .await;
    assert_eq!(r.status, 200);
    let upload = bot
        .slack
        .wait_for("a shared upload", WAIT, |s| {
            s.uploads().into_iter().find(|u| u.channel.is_some())
        })
        .await;
    let header = bot
        .slack
        .messages()
        .into_iter()
        .find(|m| m.thread_ts.is_none() && m.section_text().contains("report panel LP-1"))
        .expect("command header");
    assert_eq!(upload.channel.as_deref(), Some(CHANNEL));
    assert_eq!(upload.thread_ts.as_deref(), Some(header.ts.as_str()));
    assert_eq!(upload.filename, "panel-schedule-LP-1.pdf");
    assert_eq!(upload.title.as_deref(), Some("Panel schedule LP-1"));
    assert_eq!(upload.length, upload.bytes.len());
    assert_eq!(upload.content_type.as_deref(), Some("application/pdf"));
    assert!(pdf_text(&upload.bytes).contains("EV charger garage"));
    // The documented order: get the URL, upload, complete.
    let methods: Vec<String> = bot
        .slack
        .calls()
        .into_iter()
        .map(|c| c.method)
        .filter(|m| m.starts_with("files."))
        .collect();
    assert_eq!(
        methods,
        ["files.getUploadURLExternal", "files.completeUploadExternal"]
    );
    let get = &bot.slack.calls_of("files.getUploadURLExternal")[0];
    assert_eq!(get.args["length"], upload.bytes.len().to_string());
    // The text answer is in the same thread.
    bot.slack
        .wait_for("the text answer", WAIT, |s| {
            s.thread(CHANNEL, &header.ts).into_iter().find(|m| {
                m.section_text()
                    .contains("Panel schedule LP-1 (1 page, PDF)")
            })
        })
        .await;
}

#[tokio::test]
async fn the_model_sends_a_schedule_and_only_its_name_reaches_the_history() {
    let bot = slack_bot().await;
    let poster = bot.serve_http().await;
    bot.llm.push(Reply::ToolCalls(vec![(
        "send_report".into(),
        json!({"document": "panel_schedule", "panel": "LP-1", "format": "png"}),
    )]));
    bot.llm.push(Reply::Text("Here is LP-1's schedule.".into()));
    let ts = "1700000500.000100";
    let a = poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, ts, "send me LP-1's schedule", "EvR1"),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let upload = bot
        .slack
        .wait_for("the schedule upload", WAIT, |s| {
            s.uploads().into_iter().find(|u| u.channel.is_some())
        })
        .await;
    assert_eq!(upload.thread_ts.as_deref(), Some(ts));
    assert_eq!(upload.filename, "panel-schedule-LP-1.png");
    let img = Pixmap::decode_png(&upload.bytes).expect("png");
    assert_eq!((img.width(), img.height()), (1188, 918));
    bot.slack
        .wait_for("the answer", WAIT, |s| {
            s.thread(CHANNEL, ts).into_iter().find(|m| {
                m.text.contains("Here is LP-1") || m.section_text().contains("Here is LP-1")
            })
        })
        .await;
    // The model saw the file's name and that it was delivered, never its bytes.
    let second = bot.llm.requests()[1].to_string();
    assert!(second.contains("panel-schedule-LP-1.png"), "{second}");
    assert!(second.contains("delivered"));
    assert!(
        !second.contains("base64"),
        "file content leaked to the model"
    );
    let tool_message = bot.llm.requests()[1]["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
        .expect("the tool result message");
    let content = tool_message["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        content.len() < 1_000,
        "tool result is {} bytes: {content}",
        content.len()
    );
    // Nor does the audit row keep it.
    let mut audit = Vec::new();
    for session in 1..=5 {
        audit.extend(
            bot.store
                .audit_for_session(session)
                .await
                .expect("audit")
                .into_iter()
                .filter(|r| r.entry.tool.as_deref() == Some("send_report")),
        );
    }
    assert_eq!(audit.len(), 1);
    let result = &audit[0].entry.result;
    assert!(!result.to_string().contains("base64"));
    assert_eq!(result["attachment"]["file_name"], "panel-schedule-LP-1.png");
}

// ----- large projects -----

/// A project of `panels` panels, each 200 spaces of 30 A breakers on 114 ft of 12 AWG: every
/// circuit breaks 240.4(B) and 240.4(D) and drops too much voltage, and every panel's 10 kA
/// rating is under the service's 22 kA. 200 × 4 circuits give over 2,000 findings.
async fn big_project(store: &Arc<dyn Store>, name: &str, panels: usize) -> i64 {
    use sparky::nec::units::{Amps, Edition, Phase, Volts};
    use sparky::project::{PanelSpec, ServiceSpec};
    let p = store
        .create_project(&Workspace::local(), name, Edition::Nec2023)
        .await
        .expect("project");
    let service = ServiceSpec {
        voltage: Volts(208.0),
        phase: Phase::Three,
        rating: Amps(4000.0),
        available_fault_ka: Some(22.0),
        notes: String::new(),
    };
    store.set_service(p.id, &service).await.expect("service");
    for k in 1..=panels {
        let panel = PanelSpec {
            name: format!("P-{k}"),
            voltage: Volts(208.0),
            phase: Phase::Three,
            bus_rating: Amps(225.0),
            main_breaker: Some(Amps(200.0)),
            interrupting_rating_ka: Some(10.0),
            fed_from: Some("service".into()),
            spaces: 200,
            location: String::new(),
        };
        let panel = store.add_panel(p.id, &panel).await.expect("panel");
        for n in 1..=200 {
            let desc = format!("Heater {k}-{n}");
            let c = tools_fixture::circuit(n, 1, &desc, 1800.0, 30.0, Some("12"), Some(114.0));
            store.add_circuit(panel.id, &c).await.expect("circuit");
        }
    }
    p.id
}

/// Ticks of a 10 ms interval on the runtime; a tick that could not run is not made up later.
fn ticker() -> (
    Arc<std::sync::atomic::AtomicU64>,
    tokio::task::JoinHandle<()>,
) {
    let ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = ticks.clone();
    let task = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(10));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    (ticks, task)
}

// One worker: the render must not hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn two_thousand_findings_make_a_capped_png_while_the_runtime_keeps_going() {
    use sparky::core::runner::{RunFor, ToolRunner};
    let (store, _dir) = tools_fixture::sqlite().await;
    let id = big_project(&store, "Plant", 4).await;
    let p = store.load_project(id).await.expect("load");
    let findings = inspect(&p, &InspectOptions::default()).expect("inspect");
    assert!(
        findings.findings.len() >= 2000,
        "{}",
        findings.findings.len()
    );

    let runner = ToolRunner::new(
        store.clone(),
        Arc::new(sparky::tools::default_registry(1000)),
        Duration::from_secs(120),
    );
    let call = sparky::llm::ToolCall {
        id: "c1".into(),
        name: "send_report".into(),
        arguments: json!({"document": "inspection", "format": "png"}).to_string(),
        thought_signature: None,
    };
    let valid = runner.validate(None, &call).expect("valid");
    let sparky::tools::RegisteredTool::Read(tool) = valid.tool else {
        panic!("send_report reads");
    };
    let ctx = sparky::tools::ToolContext::new(store.clone(), Some(id), "alice", None);
    let who = RunFor {
        session_id: None,
        actor: "alice",
    };
    let (ticks, task) = ticker();
    let started = std::time::Instant::now();
    let r = runner.run_read(&call, tool, valid.args, &ctx, who).await;
    let elapsed = started.elapsed();
    task.abort();

    assert!(!r.is_error, "{}", r.content);
    let mut v = serde_json::Value::clone(&r.content);
    let pages = v["pages"].as_u64().expect("pages");
    assert!(pages > 10, "{pages} pages");
    let limits = format!("showing pages 1–10 of {pages}; the PDF has them all");
    assert_eq!(v["limits"], limits.as_str(), "{v:#}");
    assert!(v["note"].as_str().unwrap_or_default().contains(&limits));
    let file = sparky::tools::attachment::take_attachment(&mut v).expect("attached");
    let img = Pixmap::decode_png(&file.bytes).expect("png");
    assert_eq!((img.width(), img.height()), (918, 1188 * 10 + 18 * 9));
    // The ticker kept its pace (one tick per 10 ms, give or take a loaded machine) while the
    // report was rendered: no worker was held by it.
    let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
    let expected = elapsed.as_millis() as u64 / 10;
    assert!(n * 3 >= expected, "{n} ticks in {elapsed:?}");
}

#[tokio::test]
async fn a_capped_png_report_says_so_and_the_pdf_keeps_every_page() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (_, ok) = bot.run(&["migrate"], "").await;
    assert!(ok, "migrate");
    let store = bot.store().await;
    let id = big_project(&store, "Plant", 4).await;
    let dir = tempfile::tempdir().expect("dir");
    let png = dir.path().join("insp.png");
    let png_s = png.display().to_string();
    let args = ["report", "inspection", "--project", "Plant", "--out"];
    let (lines, ok) = bot
        .run(&[&args[..], &[&png_s, "--format", "png"]].concat(), "")
        .await;
    assert!(ok, "{lines:?}");
    let reply = lines.join(" ");
    assert!(reply.contains("; the PDF has them all)"), "{reply}");
    let pages: usize = reply
        .split("showing pages 1–10 of ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no page note in {reply}"));
    assert!(pages > 10, "{reply}");
    let img = Pixmap::decode_png(&std::fs::read(&png).expect("png")).expect("decodes");
    assert_eq!(img.height(), 1188 * 10 + 18 * 9);

    // The PDF has every page, from the same layout.
    let p = store.load_project(id).await.expect("load");
    let r = render(&p, &ReportKind::Inspection, Format::Pdf);
    assert_eq!(
        (r.pages, r.pages_in_file, r.rows_left_out),
        (pages, pages, 0)
    );
    assert_eq!(r.limits_note(), None);
    let raw = String::from_utf8_lossy(&r.bytes);
    let page_objects = raw.matches("/Type /Page").count() - raw.matches("/Type /Pages").count();
    assert_eq!(page_objects, pages);
}
