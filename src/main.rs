//! The `sparky` command.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use sparky::app::App;
use sparky::config::Config;
use sparky::core::commands::{self, Command};
use sparky::core::session::Mode;
use sparky::platforms::console::{self, ConsoleOptions};

// A turn allocates and frees many small JSON values on every worker thread; mimalloc does that
// at a fraction of glibc malloc's cost (docs/core_bench.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sparky: an NEC compliance copilot for Slack and Discord teams.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Configuration file (default: ./bot-config.toml when present, else built-in defaults).
    #[arg(long, global = true, env = "SPARKY_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Chat with Sparky in the terminal (works offline; scripts can pipe one input per line).
    Chat {
        /// Who you are (confirmations are checked against this name).
        #[arg(long, env = "USER", default_value = "local")]
        user: String,
        /// Mode of a new conversation: general, load or source.
        #[arg(long, value_parser = parse_mode)]
        mode: Option<Mode>,
        /// Conversation (thread) name; the same name continues the same conversation.
        #[arg(long, default_value = "main")]
        thread: String,
        /// Project to work on (created when missing; default: the console's project or "default").
        #[arg(long)]
        project: Option<String>,
        /// Print every effect as one JSON line.
        #[arg(long)]
        json: bool,
    },
    /// Run the configured platforms (Discord, Slack) and the health/metrics server.
    Serve,
    /// Search the knowledge base and print ranked passages with scores.
    Search {
        /// The question.
        question: String,
        /// Passages wanted.
        #[arg(long, default_value_t = 5)]
        k: usize,
        /// NEC edition (2020 or 2023).
        #[arg(long)]
        edition: Option<i32>,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Add documents (PDF, Markdown, text) to the knowledge base; unchanged files do nothing.
    Ingest {
        /// Files to ingest.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Workspace that may see them, as PLATFORM:ID (slack:T0123, discord:GUILD, local)
        /// (default: everyone).
        #[arg(long)]
        workspace: Option<sparky::project::Workspace>,
        /// NEC edition the documents are for.
        #[arg(long)]
        edition: Option<i32>,
        /// File the documents as local amendments of a jurisdiction: a state (WA) or
        /// STATE/CITY-OR-COUNTY (WA/Seattle). Retrieval for projects there prefers them.
        #[arg(long)]
        jurisdiction: Option<String>,
    },
    /// Which NEC edition a state has adopted: `sparky jurisdiction show WA [--date YYYY-MM-DD]`.
    Jurisdiction {
        /// `show`.
        #[arg(value_parser = ["show"])]
        action: String,
        /// State code or name, optionally ", COUNTY County" and ", CITY".
        location: String,
        /// Permit date (default today).
        #[arg(long)]
        date: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate things; `sparky eval retrieval` prints recall@1/@5 and MRR per embedder,
    /// `sparky eval answers` runs the conversation set against the configured model and
    /// prints accuracy per category (docs/eval.md).
    Eval {
        /// What to evaluate: retrieval or answers.
        #[arg(value_parser = ["retrieval", "answers"])]
        what: String,
        /// answers: which tools each request offers: routed (the tool router) or all.
        #[arg(long, default_value = "routed", value_parser = ["routed", "all"])]
        tools: String,
        /// answers: a conversation set file instead of the shipped eval/answers.json.
        #[arg(long)]
        conversations: Option<PathBuf>,
        /// answers: only conversations whose id starts with one of these (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// answers: at most this many conversations.
        #[arg(long)]
        limit: Option<usize>,
        /// answers: print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Question set: corpus (written with the summaries), chat (written apart, the way
        /// people type in chat, with out-of-scope questions), heldout, heldout2 or heldout3 (the same
        /// kind, never used to choose thresholds), gaps (the articles the corpus lacked, with
        /// look-alike out-of-scope questions).
        #[arg(long, default_value = "corpus", value_parser = ["corpus", "chat", "heldout", "heldout2", "heldout3", "gaps"])]
        set: String,
        /// Store to evaluate on: sqlite (a temporary file) or postgres (a temporary database
        /// created through database.url, dropped afterwards).
        #[arg(long, default_value = "sqlite", value_parser = ["sqlite", "postgres"])]
        backend: String,
        /// Also list the questions missed and the out-of-scope questions that got passages.
        #[arg(long)]
        verbose: bool,
    },
    /// Manage the local embedding model: `sparky models fetch`, `sparky models vectors`.
    Models {
        /// fetch: download and verify the model files. vectors: embed the shipped corpus with
        /// the local model and write the vectors compiled into the next build.
        #[arg(value_parser = ["fetch", "vectors"])]
        action: String,
        /// Model directory (default: rag.model_dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// vectors: where to write them.
        #[arg(long, default_value = "src/rag/corpus/vectors.bin")]
        out: PathBuf,
    },
    /// Register the Discord slash commands (in discord.dev_guild_id when set, else globally).
    RegisterCommands,
    /// Apply database migrations and exit.
    Migrate,
    /// Run one tool with JSON arguments and print its JSON result.
    Tool {
        /// Tool name (see --list).
        name: Option<String>,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Project the tool works on.
        #[arg(long)]
        project: Option<String>,
        /// Confirm the proposed change without asking (as --user, and audited so).
        #[arg(long)]
        yes: bool,
        /// The local user the run is done and audited as (the same default as `chat`, so a
        /// project made in a chat can be changed from a script by its owner).
        #[arg(long, env = "USER", default_value = "local")]
        user: String,
        /// List the tools instead.
        #[arg(long)]
        list: bool,
        /// With --list: print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Render a document of a project to a file: `sparky report panel LP-1 --out lp1.pdf`.
    Report {
        /// panel, inspection, load or energy.
        kind: String,
        /// Panel name (for `panel`).
        name: Option<String>,
        /// Project (as for `sparky tool`).
        #[arg(long)]
        project: Option<String>,
        /// pdf or png.
        #[arg(long, default_value = "pdf")]
        format: String,
        /// Where to write the file.
        #[arg(long)]
        out: PathBuf,
    },
    /// A project's latest changes: who asked, who confirmed, what changed, when, from which
    /// thread. Reads the database directly (for the people who run Sparky).
    Audit {
        /// Project name.
        project: String,
        /// The workspace the project belongs to: PLATFORM:ID (e.g. slack:T0123) or local.
        #[arg(long, default_value = "local")]
        workspace: sparky::domain::workspace::Workspace,
        /// How many changes, newest first.
        #[arg(long, short = 'n', default_value_t = sparky::core::audit_log::DEFAULT_LINES)]
        limit: usize,
        /// text, csv or json.
        #[arg(long, default_value = "text")]
        format: AuditFormat,
    },
    /// Import or export a project (JSON) or a panel schedule (CSV).
    Project {
        #[command(subcommand)]
        action: sparky::services::project_files::ProjectCmd,
    },
}

/// How `sparky audit` prints.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum AuditFormat {
    Text,
    Csv,
    Json,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

fn load_config(path: Option<PathBuf>) -> anyhow::Result<Config> {
    let path = path.or_else(|| {
        let local = PathBuf::from("bot-config.toml");
        local.exists().then_some(local)
    });
    Ok(Config::load_from_process(path.as_deref())?)
}

fn main() -> ExitCode {
    // Started by the bot to read one PDF within limits: no runtime, configuration or logging.
    if let Some(code) = sparky::pdf::worker::main_if_worker() {
        return code;
    }
    cli_main()
}

#[tokio::main]
async fn cli_main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sparky: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = load_config(cli.config)?;
    let quiet = matches!(
        cli.command,
        Cmd::Chat { .. } | Cmd::Tool { .. } | Cmd::Report { .. }
    );
    sparky::telemetry::init_logging(&config.log, quiet);
    match cli.command {
        Cmd::Migrate => {
            let app = App::build(config).await?;
            println!("database is up to date ({:?})", app.store.backend());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Chat {
            user,
            mode,
            thread,
            project,
            json,
        } => {
            let app = App::build(config).await?;
            app.embed_in_background();
            console::run(
                app.agent.clone(),
                ConsoleOptions {
                    user,
                    mode,
                    thread,
                    project,
                    json,
                },
            )
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Tool {
            name,
            args,
            project,
            yes,
            user,
            list,
            json,
        } => {
            let app = App::build(config).await?;
            // Each run is its own conversation, so a proposal left by an interrupted run
            // never blocks the next one (it expires).
            let key = console::session_key(&format!("cli-{}", uuid::Uuid::new_v4().simple()));
            if let Some(p) = &project {
                let out = commands::execute(
                    &app.agent,
                    &key,
                    &user,
                    Command::ProjectUse { name: p.clone() },
                )
                .await;
                if out.is_error {
                    println!("{}", out.json);
                    return Ok(ExitCode::FAILURE);
                }
            }
            let out = match (list, name) {
                (true, _) => commands::execute(&app.agent, &key, &user, Command::Tools).await,
                (false, Some(name)) => {
                    commands::run_tool_once(&app.agent, &key, &user, &name, &args, |items| {
                        yes || confirm_on_terminal(items)
                    })
                    .await
                }
                (false, None) => anyhow::bail!("name a tool, or use --list"),
            };
            let value = match &out.json {
                v if list => v.get("tools").cloned().unwrap_or_default(),
                v if !out.is_error => v.get("result").cloned().unwrap_or_default(),
                v => serde_json::json!({"error": v.get("message").cloned().unwrap_or_default()}),
            };
            if list && !json {
                println!("{}", out.text);
            } else {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&value).context("encoding the result")?
                );
            }
            Ok(if out.is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Cmd::Report {
            kind,
            name,
            project,
            format,
            out,
        } => {
            let command = Command::Report {
                kind: sparky::report::ReportKind::parse(&kind, name.as_deref())?,
                format: format.parse()?,
            };
            let app = App::build(config).await?;
            let key = console::session_key("cli");
            if let Some(p) = project {
                let bound =
                    commands::execute(&app.agent, &key, "cli", Command::ProjectUse { name: p })
                        .await;
                if bound.is_error {
                    eprintln!("{}", bound.text);
                    return Ok(ExitCode::FAILURE);
                }
            }
            let result = commands::execute(&app.agent, &key, "cli", command).await;
            match result.files.first() {
                Some(file) if !result.is_error => {
                    std::fs::write(&out, &file.bytes)
                        .with_context(|| format!("writing {}", out.display()))?;
                    println!("{} -> {}", result.text, out.display());
                    Ok(ExitCode::SUCCESS)
                }
                _ => {
                    eprintln!("{}", result.text);
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Cmd::Serve => {
            sparky::service::Service::bind(config)
                .await?
                .run(sparky::service::shutdown_signal())
                .await?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Jurisdiction {
            action: _,
            location,
            date,
            json,
        } => {
            let permit = date
                .as_deref()
                .map(sparky::jurisdiction::site::parse_permit_date)
                .transpose()?
                .flatten();
            let as_of = permit.unwrap_or_else(sparky::jurisdiction::today);
            let (text, value) =
                sparky::jurisdiction::show::show(&location, as_of, permit.is_some())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print!("{text}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Audit {
            project,
            workspace,
            limit,
            format,
        } => {
            use sparky::core::audit_log;
            let store = sparky::app::connect_store(&config).await?;
            let Some(p) = store.project_by_name(&workspace, &project).await? else {
                anyhow::bail!("there is no project named {project} in workspace {workspace}");
            };
            let lines = audit_log::project_history(store.as_ref(), p.id, limit).await?;
            match format {
                AuditFormat::Text => println!(
                    "{}",
                    sparky::core::mention::render(&audit_log::to_text(&p.name, &lines), |id| id
                        .to_string())
                ),
                AuditFormat::Csv => print!("{}", audit_log::to_csv(&lines)),
                AuditFormat::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&audit_log::to_json(&p.name, &lines))?
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Project { action } => {
            let store = sparky::app::connect_store(&config).await?;
            sparky::services::project_files::run_cli(store, action).await?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Search {
            question,
            k,
            edition,
            json,
        } => search(config, &question, k, edition, json).await,
        Cmd::Ingest {
            paths,
            workspace,
            edition,
            jurisdiction,
        } => {
            // A typo in the jurisdiction must fail before anything is stored.
            let jurisdiction = jurisdiction
                .as_deref()
                .map(sparky::jurisdiction::site::jurisdiction_key)
                .transpose()?;
            let app = App::build(config).await?;
            let embedder = app.retriever.embedder().cloned();
            let report = sparky::rag::ingest::ingest_files_for(
                app.store.as_ref(),
                embedder.as_ref(),
                &paths,
                workspace.as_ref(),
                edition,
                jurisdiction.as_deref(),
                true,
            )
            .await?;
            if let Some(e) = &embedder {
                // Measured here, after the library changed, so no later search pays for it.
                if let Some(t) = sparky::rag::index_tuning::tune_if_changed(
                    app.store.as_ref(),
                    e.as_ref(),
                    &app.config.rag,
                )
                .await?
                {
                    eprintln!(
                        "vector index: ef_search {} gives recall@10 {:.3} against exact search (target {}) over {} vectors",
                        t.ef_search, t.recall, t.recall_target, t.vectors
                    );
                }
            }
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Eval {
            what,
            tools,
            conversations,
            only,
            limit,
            json,
            ..
        } if what == "answers" => {
            eval_answers(config, &tools, conversations, &only, limit, json).await
        }
        Cmd::Eval {
            set,
            backend,
            verbose,
            ..
        } => eval_retrieval(config, &set, &backend, verbose).await,
        Cmd::Models { action, dir, out } => {
            let dir = dir.unwrap_or_else(|| sparky::rag::model_dir(&config.rag));
            sparky::llm::tls::install_default_crypto_provider();
            sparky::rag::embed::fetch::fetch_local_model(&dir, true).await?;
            if action == "vectors" {
                let embedder = sparky::rag::embed::local::LocalEmbedder::open(&dir).await?;
                let bytes = sparky::rag::bundled::compute(&embedder)
                    .await
                    .map_err(anyhow::Error::msg)?;
                std::fs::write(&out, &bytes)?;
                println!(
                    "wrote {} bytes of vectors to {}",
                    bytes.len(),
                    out.display()
                );
            } else {
                println!("model files are in {}", dir.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::RegisterCommands => {
            sparky::llm::tls::install_default_crypto_provider();
            let n = sparky::platforms::discord::register_commands_from_config(&config).await?;
            println!("registered {n} Discord command(s)");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Shows a proposed change on a terminal and asks; false when stdin is not a terminal.
fn confirm_on_terminal(items: &[sparky::store::ActionItem]) -> bool {
    use std::io::{IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return false;
    }
    for item in items {
        eprintln!("{}", item.summary);
        for d in &item.details {
            eprintln!("  {d}");
        }
    }
    eprint!("Apply this change? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes")
}

async fn search(
    config: Config,
    question: &str,
    k: usize,
    edition: Option<i32>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let app = App::build(config).await?;
    // Vectors are made by ingest and by a long-running process at start; this only fills in
    // after a change none of them has seen (one read of two counters otherwise).
    app.embed_if_changed(true).await?;
    let opts = sparky::rag::search::SearchOptions {
        k,
        edition,
        workspace: None,
    };
    let out = app.retriever.search(question, &opts).await?;
    if json {
        let rows: Vec<serde_json::Value> = out
            .passages
            .iter()
            .map(|p| {
                serde_json::json!({
                    "section": p.section, "edition": p.edition, "source": p.source,
                    "page": p.page, "score": p.score, "text": p.text,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if out.passages.is_empty() {
        println!("Nothing relevant enough was found ({}).", out.method);
    } else {
        println!("{} passage(s), {}:", out.passages.len(), out.method);
        for p in &out.passages {
            let edition = p.edition.map(|e| format!("NEC {e} ")).unwrap_or_default();
            let section = p.section.as_deref().unwrap_or("(no section)");
            let snippet: String = p.text.chars().take(240).collect();
            println!(
                "\n[{:.4}] {edition}{section} ({})\n{snippet}",
                p.score, p.source
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs a shipped question set against each embedder available here, each on a fresh
/// temporary store (SQLite file or Postgres database) holding the shipped corpus.
async fn eval_retrieval(
    config: Config,
    set: &str,
    backend: &str,
    verbose: bool,
) -> anyhow::Result<ExitCode> {
    use sparky::config::EmbedderKind;
    sparky::llm::tls::install_default_crypto_provider();
    let which: sparky::rag::eval::EvalSet = set.parse().map_err(anyhow::Error::msg)?;
    let questions = sparky::rag::eval::load(which).map_err(anyhow::Error::msg)?;
    let mut kinds = vec![EmbedderKind::None, EmbedderKind::Local];
    if config.secrets.openai_api_key.is_some() {
        kinds.push(EmbedderKind::Openai);
    }
    if config.secrets.gemini_api_key.is_some() {
        kinds.push(EmbedderKind::Gemini);
    }
    println!(
        "{} questions, {} out of scope, on {backend}",
        questions.questions.len(),
        questions.out_of_scope.len()
    );
    println!(
        "{:<40} {:>9} {:>9} {:>7} {:>14}",
        "embedder", "recall@1", "recall@5", "MRR", "out of scope"
    );
    for kind in kinds {
        let mut cfg = config.clone();
        cfg.rag.embedder = kind;
        let (embedder, why_not) = sparky::rag::build_embedder(&cfg, true).await;
        if kind != EmbedderKind::None && !why_not.is_empty() {
            println!("{:<40} unavailable: {why_not}", format!("{kind:?}"));
            continue;
        }
        let dir = tempfile_dir()?;
        let mut drop_db: Option<(String, String)> = None;
        let store: std::sync::Arc<dyn sparky::store::Store> = if backend == "postgres" {
            let admin = config.database.url.clone();
            if !admin.starts_with("postgres") {
                anyhow::bail!(
                    "--backend postgres needs database.url (DATABASE_URL) to be a Postgres URL"
                );
            }
            let name = format!("sparky_eval_{}", uuid::Uuid::new_v4().simple());
            let pool = sqlx::PgPool::connect(&admin).await?;
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&pool)
                .await?;
            pool.close().await;
            let base = admin.rsplit_once('/').map(|x| x.0).unwrap_or(&admin);
            let url = format!("{base}/{name}");
            drop_db = Some((admin.clone(), name));
            std::sync::Arc::new(sparky::store::PostgresStore::connect(&url, 4).await?)
        } else {
            std::sync::Arc::new(sparky::store::SqliteStore::open(&dir.join("eval.db")).await?)
        };
        sparky::rag::ingest::sync_builtin(store.as_ref(), embedder.as_ref()).await?;
        let name = embedder
            .as_ref()
            .map(|e| e.model_name().to_string())
            .unwrap_or_else(|| "full text only".into());
        let retriever = sparky::rag::search::Retriever::new(store.clone(), embedder, why_not);
        let report = sparky::rag::eval::evaluate_set(&retriever, &questions).await;
        drop(retriever);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
        if let Some((admin, db)) = drop_db {
            let pool = sqlx::PgPool::connect(&admin).await?;
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                .execute(&pool)
                .await;
            pool.close().await;
        }
        let report = report?;
        println!(
            "{:<40} {:>9.3} {:>9.3} {:>7.3} {:>8}/{:<5}",
            name,
            report.recall_at_1,
            report.recall_at_5,
            report.mrr,
            report.refused,
            report.out_of_scope
        );
        if verbose {
            for m in &report.misses {
                println!("  miss: {m}");
            }
            for n in &report.noise {
                println!("  noise: {n}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("sparky-eval-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `sparky eval answers`: runs the conversation set and prints the report.
async fn eval_answers(
    config: Config,
    tools: &str,
    conversations: Option<PathBuf>,
    only: &[String],
    limit: Option<usize>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use sparky::eval::{ConversationSet, Report, ToolMode};
    let mode: ToolMode = tools.parse().map_err(anyhow::Error::msg)?;
    let set = match conversations {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            ConversationSet::parse(&text)?
        }
        None => ConversationSet::built_in()?,
    }
    .select(only, limit);
    sparky::llm::tls::install_default_crypto_provider();
    let model = sparky::llm::resilient::build_provider(&config)
        .map(|p| p.name())
        .unwrap_or_default();
    let results = sparky::eval::run(&config, &set, mode).await?;
    let report = Report::new(model, mode, &results);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(ExitCode::SUCCESS)
}
