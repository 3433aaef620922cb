//! Fuzz targets for every parser of outside input, as property tests: arbitrary and mutated
//! input must give a value or a clear error, never a panic, a hang or a runaway allocation.
//! Seeds come from tests/fixtures/. The number of cases per target is `SPARKY_FUZZ_CASES`
//! (default 64, a smoke run in the suite; `.ci/fuzz` runs a long one; see docs/fuzzing.md).

mod endpoints;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use sparky::core::mention;
use sparky::core::untrusted;
use sparky::llm::sse::SseDecoder;
use sparky::platforms::slack::events::parse_slash;
use sparky::retry_after;
use sparky::services::project_files as io;

fn cases() -> u32 {
    std::env::var("SPARKY_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    })
}

/// Counts a target's cases; every 100,000 cases and at the end it prints the count and the rate
/// (seen with `--nocapture`), so a long run stopped early still has an exact count.
struct Progress {
    target: &'static str,
    done: AtomicU64,
    started: Instant,
}

impl Progress {
    fn new(target: &'static str) -> Self {
        Self {
            target,
            done: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// One more case ran.
    fn tick(&self) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(100_000) {
            self.report();
        }
    }

    fn report(&self) {
        let n = self.done.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        eprintln!(
            "fuzz {}: {n} cases in {secs:.1} s ({:.0} cases/s)",
            self.target,
            n as f64 / secs.max(1e-9)
        );
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.report();
    }
}

/// Fixture files of a folder under tests/fixtures/, as seeds.
fn seeds(dir: &str) -> Vec<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                if b.len() < 1 << 20 {
                    out.push(b);
                }
            }
        }
    }
    out.sort();
    out
}

/// Arbitrary bytes, or a seed with a few bytes changed, cut or repeated.
fn mutated(seeds: Vec<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    let raw = prop::collection::vec(any::<u8>(), 0..512).boxed();
    if seeds.is_empty() {
        return raw;
    }
    let seeds = std::sync::Arc::new(seeds);
    let edits = (
        0..seeds.len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(move |(i, flips, cut, cut_it)| {
            let mut b = seeds[i].clone();
            if !b.is_empty() {
                for (at, v) in flips {
                    let at = at.index(b.len());
                    b[at] = v;
                }
                if cut_it {
                    b.truncate(cut.index(b.len() + 1));
                }
            }
            b
        })
        .boxed();
    prop_oneof![raw, edits].boxed()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn fuzz_retry_after_and_rate_limit_headers() {
    let words = prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        "[0-9eE+.\\-]{0,40}",
        "[A-Za-z]{3}, [0-9]{1,2} [A-Za-z]{3} [0-9]{1,5} [0-9:]{0,8} GMT",
        ".{0,64}",
    ];
    let progress = Progress::new("fuzz_retry_after_and_rate_limit_headers");
    runner(cases())
        .run(&words, |v| {
            progress.tick();
            if let Some(d) = retry_after::parse_retry_after(&v) {
                prop_assert!(d <= retry_after::MAX_WAIT);
            }
            if let Some(d) = retry_after::parse_secs(&v) {
                prop_assert!(d <= retry_after::MAX_WAIT);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_sse_stream_parser() {
    let seeds = seeds("llm");
    let strategy = (mutated(seeds), prop::collection::vec(1usize..64, 0..16));
    let progress = Progress::new("fuzz_sse_stream_parser");
    runner(cases())
        .run(&strategy, |(body, cuts)| {
            progress.tick();
            // The same body in arbitrary chunks.
            let mut d = SseDecoder::new();
            let mut events = 0usize;
            let mut at = 0;
            for c in cuts.iter().cycle().take(body.len() / 8 + 1) {
                let end = (at + c).min(body.len());
                events += d.push(&body[at..end]).len();
                at = end;
            }
            events += d.push(&body[at..]).len();
            events += usize::from(d.finish().is_some());
            prop_assert!(events <= body.len() + 1);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_provider_json_and_error_bodies() {
    use sparky::llm::errors::{from_http_status, from_stream_error, ErrorDialect};
    let seeds = seeds("llm");
    let progress = Progress::new("fuzz_provider_json_and_error_bodies");
    runner(cases())
        .run(&(mutated(seeds), any::<u16>()), |(body, status)| {
            progress.tick();
            let body = text(&body);
            for dialect in [ErrorDialect::OpenAi, ErrorDialect::Gemini] {
                let _ = from_http_status(dialect, status, Some(&body), &body);
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                    let _ = from_stream_error(dialect, &v);
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_slack_bodies() {
    let seeds = seeds("platforms/slack");
    let progress = Progress::new("fuzz_slack_bodies");
    runner(cases())
        .run(&mutated(seeds), |body| {
            progress.tick();
            let s = text(&body);
            // Slash command text, events and interactivity payloads as Slack sends them.
            let _ = parse_slash(&s);
            let _ = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body);
            let _ =
                serde_json::from_slice::<slack_morphism::prelude::SlackPushEventCallback>(&body);
            let _ = serde_json::from_slice::<slack_morphism::prelude::SlackInteractionEvent>(&body);
            let _ = sparky::platforms::slack::events::clean_text(&s, Some("U0BOT"));
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_discord_interactions() {
    let seeds = seeds("platforms/discord");
    let progress = Progress::new("fuzz_discord_interactions");
    runner(cases())
        .run(&mutated(seeds), |body| {
            progress.tick();
            let _ = serde_json::from_slice::<serenity::all::Interaction>(&body);
            let _ = sparky::platforms::discord::strip_mention(&text(&body), "1");
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_project_import_json_and_csv() {
    let mut seeds = seeds("nec-tables");
    seeds.push(
        br#"{"format":"sparky-project","version":1,"name":"p","edition":2023,"panels":[{"name":"LP-1","volts":240,"bus_amps":200,"circuits":[{"number":1,"amps":20,"poles":1}]}]}"#
            .to_vec(),
    );
    seeds.push(
        b"circuit,amps,poles,load_va,description\n1,20,1,1200,Lights\n3,30,2,4000,\"Dryer, 240 V\"\n"
            .to_vec(),
    );
    let progress = Progress::new("fuzz_project_import_json_and_csv");
    runner(cases())
        .run(&mutated(seeds), |body| {
            progress.tick();
            let s = text(&body);
            if let Ok(f) = io::parse_file(&s) {
                let _ = io::validate(&f);
            }
            let _ = io::parse_csv(&s);
            let _ = io::parse_schedule_csv(&s, "LP-1");
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_tool_arguments_against_schemas() {
    static REGISTRY: OnceLock<sparky::tools::ToolRegistry> = OnceLock::new();
    let registry = REGISTRY.get_or_init(|| sparky::tools::default_registry(u32::MAX));
    let names: Vec<String> = registry.all().map(|t| t.name().to_string()).collect();
    let n = names.len();
    let json_ish = prop_oneof![
        ".{0,200}",
        prop::collection::btree_map("[a-z_]{1,20}", any::<i64>(), 0..6)
            .prop_map(|m| serde_json::to_string(&m).unwrap_or_default()),
        prop::collection::btree_map("[a-z_]{1,20}", ".{0,12}", 0..6)
            .prop_map(|m| serde_json::to_string(&m).unwrap_or_default()),
    ];
    let progress = Progress::new("fuzz_tool_arguments_against_schemas");
    runner(cases())
        .run(&(0..n.max(1), json_ish), |(i, args)| {
            progress.tick();
            if let Some(name) = names.get(i) {
                let _ = registry.validate(name, &args);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_mentions_and_fences() {
    let progress = Progress::new("fuzz_mentions_and_fences");
    runner(cases())
        .run(&".{0,200}", |s| {
            progress.tick();
            let clean = mention::strip(&s);
            let rendered = mention::render(&clean, |id| format!("<@{}>", id));
            // Without the core's markers no mention appears that was not typed.
            prop_assert!(!rendered.contains("<@") || s.contains("<@"));
            let fenced = untrusted::delimit("src", &s);
            prop_assert_eq!(fenced.matches("<<<end of document>>>").count(), 1);
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_document_ingestion() {
    // One thread: ingestion is driven from here, and no case waits for another thread's wake-up.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let env: std::collections::BTreeMap<String, String> = [(
        "SPARKY_DATABASE__SQLITE_PATH".to_string(),
        dir.path().join("f.db").display().to_string(),
    )]
    .into_iter()
    .collect();
    let config = sparky::config::Config::load(None, &env).unwrap();
    let store = rt.block_on(sparky::app::connect_store(&config)).unwrap();
    let mut seeds = seeds("documents");
    seeds.push(b"# Spec\n\n210.8 GFCI\nAll receptacles.\n".to_vec());
    seeds.push(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer <<>>\n%%EOF".to_vec());
    seeds.push(text_pdf(
        "210.8 Ground-fault circuit-interrupter protection",
    ));
    // The three files are written once per case and ingested in place: one path per kind.
    let paths: Vec<Vec<std::path::PathBuf>> = ["md", "txt", "pdf"]
        .iter()
        .map(|ext| vec![dir.path().join(format!("doc.{ext}"))])
        .collect();
    let quiet = QuietPanics::here();
    let progress = Progress::new("fuzz_document_ingestion");
    let result = runner(cases()).run(&(mutated(seeds), 0usize..3), |(body, kind)| {
        progress.tick();
        std::fs::write(&paths[kind][0], &body).unwrap();
        // A panic in a PDF library is caught by the ingestion or fails this target.
        let _ = rt.block_on(sparky::rag::ingest::ingest_files(
            store.as_ref(),
            None,
            &paths[kind],
            Some(&sparky::project::Workspace::new("test", "w")),
            Some(2023),
            false,
        ));
        Ok(())
    });
    drop(quiet);
    result.unwrap();
}

/// A one-page PDF with a line of text in a base font: a seed the PDF parser reads through.
fn text_pdf(line: &str) -> Vec<u8> {
    use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str};
    let (catalog, tree, page_id, font, content_id) = (
        Ref::new(1),
        Ref::new(2),
        Ref::new(3),
        Ref::new(4),
        Ref::new(5),
    );
    let mut pdf = Pdf::new();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree).kids([page_id]).count(1);
    let mut page = pdf.page(page_id);
    page.media_box(Rect::new(0.0, 0.0, 612.0, 792.0));
    page.parent(tree);
    page.contents(content_id);
    page.resources().fonts().pair(Name(b"F1"), font);
    page.finish();
    pdf.type1_font(font).base_font(Name(b"Helvetica"));
    let mut content = Content::new();
    content.begin_text();
    content.set_font(Name(b"F1"), 12.0);
    content.next_line(72.0, 720.0);
    content.show(Str(line.as_bytes()));
    content.end_text();
    pdf.stream(content_id, &content.finish());
    pdf.finish()
}

/// While alive, panics on the thread that made it are not printed. Ingestion contains the PDF
/// parser's panics; printing (or, without `--nocapture`, keeping in memory) a message and a
/// backtrace for each would cost more than the case itself over a long run. Other threads'
/// panics print as before, and a panic that escapes a case still fails it with its message.
struct QuietPanics {
    previous: std::sync::Arc<PanicHook>,
}

type PanicHook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

impl QuietPanics {
    fn here() -> Self {
        let me = std::thread::current().id();
        let previous = std::sync::Arc::new(std::panic::take_hook());
        let others = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() != me {
                others(info);
            }
        }));
        Self { previous }
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        let previous = self.previous.clone();
        std::panic::set_hook(Box::new(move |info| previous(info)));
    }
}
