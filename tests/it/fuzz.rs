//! Fuzz targets for every parser of outside input, as property tests: arbitrary and mutated
//! input must give a value or a clear error, never a panic, a hang or a runaway allocation.
//! Seeds come from tests/fixtures/. The number of cases per target is `SPARKY_FUZZ_CASES`
//! (default 64, a smoke run in the suite; `.ci/fuzz` runs a long one; see docs/fuzzing.md).

mod endpoints;

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use sparky::core::mention;
use sparky::core::untrusted;
use sparky::llm::sse::SseDecoder;
use sparky::platforms::slack::events::parse_slash;
use sparky::server_wait;
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
    runner(cases())
        .run(&words, |v| {
            if let Some(d) = server_wait::parse_retry_after(&v) {
                prop_assert!(d <= server_wait::MAX_WAIT);
            }
            if let Some(d) = server_wait::parse_secs(&v) {
                prop_assert!(d <= server_wait::MAX_WAIT);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_sse_stream_parser() {
    let seeds = seeds("llm");
    let strategy = (mutated(seeds), prop::collection::vec(1usize..64, 0..16));
    runner(cases())
        .run(&strategy, |(body, cuts)| {
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
    runner(cases())
        .run(&(mutated(seeds), any::<u16>()), |(body, status)| {
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
    runner(cases())
        .run(&mutated(seeds), |body| {
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
    runner(cases())
        .run(&mutated(seeds), |body| {
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
    runner(cases())
        .run(&mutated(seeds), |body| {
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
    runner(cases())
        .run(&(0..n.max(1), json_ish), |(i, args)| {
            if let Some(name) = names.get(i) {
                let _ = registry.validate(name, &args);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_mentions_and_fences() {
    runner(cases())
        .run(&".{0,200}", |s| {
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
    let rt = tokio::runtime::Runtime::new().unwrap();
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
    // A database write per case: a sixteenth of the other targets' count.
    runner((cases() / 16).max(4))
        .run(&(mutated(seeds), 0usize..3), |(body, kind)| {
            let ext = ["md", "txt", "pdf"][kind];
            let path = dir.path().join(format!("doc.{ext}"));
            std::fs::write(&path, &body).unwrap();
            let paths = vec![path];
            // A panic in a PDF library is caught by the ingestion or fails this target.
            let _ = rt.block_on(sparky::rag::ingest::ingest_files(
                store.as_ref(),
                None,
                &paths,
                Some("w"),
                Some(2023),
                false,
            ));
            Ok(())
        })
        .unwrap();
}
