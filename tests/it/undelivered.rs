//! A 429 storm longer than one call waits out (five attempts, about 4 s) does not lose an
//! answer: it is kept in the outbox (in the database) and delivered once the platform accepts
//! it, never sooner than its Retry-After; an answer older than
//! `server.undelivered_max_age_secs` is dropped and counted, not posted late. Real stores,
//! real HTTP against the fake Slack and Discord, the one delivery loop both platforms share.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sparky::core::{ConfirmationCards, Effect, EffectSink, OutboundMessage, Outbox};
use sparky::platforms::delivery::Delivery;
use sparky::platforms::surface::SurfaceSink;
use sparky::store::Store;
use support::bot::{fresh_postgres_url, Db};
use support::fake_discord::{FakeDiscord, CHANNEL_ID};
use support::fake_llm::Reply;
use support::fake_slack::{app_mention, SlackBot, ALICE, CHANNEL, TEAM};

/// The value of a counter in `/metrics` whose labels include every one of `labels`.
fn metric(name: &str, labels: &[(&str, &str)]) -> f64 {
    sparky::telemetry::render_metrics()
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Runs the delivery loop of `outbox` (cards remembered in `store`) until the returned sender
/// is dropped or fires.
/// Messages still kept for `platform` once the delivery loop is done with them: a kept row is
/// deleted just after the post that delivered it succeeds, so a test that saw the post waits
/// (up to 5 s) for the row to go.
async fn kept_after_delivery(store: &dyn Store, platform: &str) -> i64 {
    let mut left = store.outbound_count(platform).await.expect("count");
    for _ in 0..50 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = store.outbound_count(platform).await.expect("count");
    }
    left
}

fn deliver(
    outbox: Outbox,
    store: Arc<dyn Store>,
    config: &sparky::config::Config,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let cards = ConfirmationCards::new(store);
    tokio::spawn(Delivery::new(outbox, cards, config).run(async {
        let _ = stopped.await;
    }));
    stop
}

async fn slack_storm(db: Db) {
    let bot = SlackBot::start(db, "http").await;
    let poster = bot.serve_http().await;
    let _delivery = deliver(bot.agent.outbox(), bot.store.clone(), &bot.config);
    let waits_before = metric(
        "sparky_platform_rate_limit_waits_total",
        &[("platform", "slack")],
    );
    // Twelve refusals, each asking for 1 s: more than the five attempts of one call.
    bot.slack.rate_limit("chat.postMessage", 1, 12);
    bot.llm.push(Reply::Text("Use a 20 A breaker.".into()));
    let ts = "1700000031.000100";
    let a = poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, ts, "which breaker?", "EvStorm1"),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    bot.slack
        .wait_for("the answer after the storm", Duration::from_secs(60), |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.section_text().contains("20 A breaker"))
        })
        .await;
    let posts = bot.slack.calls_of("chat.postMessage");
    assert_eq!(posts.iter().filter(|c| c.limited).count(), 12, "{posts:?}");
    assert!(!posts.last().expect("posts").limited);
    // Never sent again before the Retry-After.
    for pair in posts.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(
            gap >= Duration::from_millis(950),
            "sent again after {gap:?}"
        );
    }
    // Delivered once, and nobody was told anything that is not the cause.
    let answers = bot
        .slack
        .thread(CHANNEL, ts)
        .into_iter()
        .filter(|m| m.section_text().contains("20 A breaker"))
        .count();
    assert_eq!(answers, 1);
    assert!(
        bot.slack.ephemerals().is_empty(),
        "{:?}",
        bot.slack.ephemerals()
    );
    assert!(bot
        .slack
        .messages()
        .iter()
        .all(|m| !m.section_text().contains("invite")));
    assert_eq!(kept_after_delivery(bot.store.as_ref(), "slack").await, 0);
    let waited = metric(
        "sparky_platform_rate_limit_waits_total",
        &[("platform", "slack")],
    ) - waits_before;
    assert!(waited >= 11.0, "{waited} waits counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_answer_outlives_a_429_storm_longer_than_a_calls_retries_sqlite() {
    slack_storm(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_answer_outlives_a_429_storm_longer_than_a_calls_retries_postgres() {
    slack_storm(Db::Postgres).await;
}

/// A kept answer survives a restart (a new process on the same database delivers it), and
/// one older than the maximum age is dropped and counted instead of posted.
async fn kept_across_a_restart(db: Db) {
    let mut bot = SlackBot::start(db, "http").await;
    let thread = "1700000032.000100";
    let now = Utc::now();
    let message = |text: &str, created_at| OutboundMessage {
        platform: "slack".into(),
        channel: CHANNEL.into(),
        thread: thread.into(),
        text: text.into(),
        edit_of: None,
        card: None,
        created_at,
        not_before: now,
    };
    let outbox = bot.agent.outbox();
    outbox
        .queue(&message(
            "An answer from two hours ago.",
            now - chrono::Duration::hours(2),
        ))
        .await
        .expect("queue old");
    outbox
        .queue(&message("A fresh answer.", now))
        .await
        .expect("queue fresh");
    let expired_before = metric(
        "sparky_outbound_messages_total",
        &[("platform", "slack"), ("outcome", "expired")],
    );
    bot.restart().await;
    assert_eq!(bot.config.server.undelivered_max_age_secs, 3600);
    let _delivery = deliver(bot.agent.outbox(), bot.store.clone(), &bot.config);
    bot.slack
        .wait_for("the fresh answer", Duration::from_secs(20), |s| {
            s.thread(CHANNEL, thread)
                .into_iter()
                .find(|m| m.section_text().contains("A fresh answer."))
        })
        .await;
    assert!(bot
        .slack
        .messages()
        .iter()
        .all(|m| !m.section_text().contains("two hours ago")));
    assert_eq!(kept_after_delivery(bot.store.as_ref(), "slack").await, 0);
    let expired = metric(
        "sparky_outbound_messages_total",
        &[("platform", "slack"), ("outcome", "expired")],
    ) - expired_before;
    assert!(expired >= 1.0, "{expired}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_survives_a_restart_and_an_old_one_is_dropped_sqlite() {
    kept_across_a_restart(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_survives_a_restart_and_an_old_one_is_dropped_postgres() {
    kept_across_a_restart(Db::Postgres).await;
}

/// A fake Discord whose next eight posts to the channel are refused with a Retry-After of
/// 1 s (more than the five attempts of one call), the configuration that reaches it, and the
/// store of `db` (kept in `dir`).
async fn discord_in_a_storm(
    db: Db,
    dir: &tempfile::TempDir,
) -> (FakeDiscord, sparky::config::Config, Arc<dyn Store>) {
    sparky::llm::tls::install_default_crypto_provider();
    let discord = FakeDiscord::start().await;
    let mut env: BTreeMap<String, String> = discord.env().into_iter().collect();
    match db {
        Db::Sqlite => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.path().join("d.db").display().to_string(),
            );
        }
        Db::Postgres => {
            env.insert("DATABASE_URL".into(), fresh_postgres_url().await);
        }
    }
    let config = sparky::config::Config::load(None, &env).expect("config");
    let store: Arc<dyn Store> = sparky::app::connect_store(&config).await.expect("store");
    for _ in 0..8 {
        discord.rate_limit_next("POST", &storm_path(), 1.0);
    }
    (discord, config, store)
}

fn storm_path() -> String {
    format!("/channels/{CHANNEL_ID}/messages")
}

async fn discord_storm(db: Db) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (discord, config, store) = discord_in_a_storm(db, &dir).await;
    let outbox = Outbox::new(store.clone());
    let path = storm_path();
    let waits_before = metric(
        "sparky_platform_rate_limit_waits_total",
        &[("platform", "discord")],
    );
    let surface = sparky::platforms::thread_surfaces(&config)("discord", CHANNEL_ID, CHANNEL_ID)
        .expect("a Discord surface");
    let sink = SurfaceSink::new(
        surface,
        ConfirmationCards::new(store.clone()),
        outbox.clone(),
    );
    sink.emit(Effect::Text {
        text: "Use a 20 A breaker.".into(),
        citations: Vec::new(),
    })
    .await;
    assert_eq!(store.outbound_count("discord").await.expect("count"), 1);
    let _delivery = deliver(outbox, store.clone(), &config);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !discord
        .messages_in(CHANNEL_ID)
        .iter()
        .any(|m| m.content().contains("20 A breaker"))
    {
        assert!(std::time::Instant::now() < deadline, "never delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let posts = discord.calls_to("POST", &path);
    assert_eq!(posts.iter().filter(|c| c.status == 429).count(), 8);
    for pair in posts.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(
            gap >= Duration::from_millis(950),
            "sent again after {gap:?}"
        );
    }
    assert_eq!(
        discord
            .messages_in(CHANNEL_ID)
            .iter()
            .filter(|m| m.content().contains("20 A breaker"))
            .count(),
        1
    );
    assert_eq!(kept_after_delivery(store.as_ref(), "discord").await, 0);
    let waited = metric(
        "sparky_platform_rate_limit_waits_total",
        &[("platform", "discord")],
    ) - waits_before;
    assert!(waited >= 7.0, "{waited} waits counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_answer_outlives_a_429_storm_longer_than_a_calls_retries_sqlite() {
    discord_storm(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_answer_outlives_a_429_storm_longer_than_a_calls_retries_postgres() {
    discord_storm(Db::Postgres).await;
}

/// A slash command whose thread cannot be started because Slack keeps answering 429 is told
/// that Slack is limiting the bot, not to invite it (which would not help).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_slash_command_is_told_the_rate_limit_not_to_invite_the_bot() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    // Five refusals: every attempt of the header's post.
    bot.slack.rate_limit("chat.postMessage", 1, 5);
    let form =
        support::fake_slack::slash_command_form(TEAM, CHANNEL, ALICE, "project show", "cmd.storm");
    assert_eq!(poster.command(&form).await.status, 200);
    let note = bot
        .slack
        .wait_for("the note to the person", Duration::from_secs(30), |s| {
            s.ephemerals().into_iter().next()
        })
        .await;
    let text = note["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("limiting how fast"), "{text}");
    assert!(!text.to_lowercase().contains("invite"), "{text}");
}

/// A confirmation card refused through a storm is kept like an answer: it is posted with its
/// buttons once Discord accepts it, and remembered as its action's card (so the outcome edits
/// it later). Both stores.
async fn discord_card_storm(db: Db) {
    use sparky::core::session::Mode;
    let dir = tempfile::tempdir().expect("temp dir");
    let (discord, config, store) = discord_in_a_storm(db, &dir).await;
    let session = store
        .open_session(&support::db::key("card"), Mode::General, None)
        .await
        .expect("session");
    let action = support::db::new_pending("act-storm", session.id);
    store.create_pending(&action).await.expect("pending");
    let outbox = Outbox::new(store.clone());
    let surface = sparky::platforms::thread_surfaces(&config)("discord", CHANNEL_ID, CHANNEL_ID)
        .expect("a Discord surface");
    let sink = SurfaceSink::new(
        surface,
        ConfirmationCards::new(store.clone()),
        outbox.clone(),
    );
    sink.emit(Effect::Confirmation {
        action_id: "act-storm".into(),
        items: action.items.clone(),
        rejected: Vec::new(),
        requested_by: "U1".into(),
        confirmers: "anyone with the editor role".into(),
        expires_at: Utc::now() + chrono::Duration::minutes(10),
    })
    .await;
    assert_eq!(store.outbound_count("discord").await.expect("count"), 1);
    let _delivery = deliver(outbox, store.clone(), &config);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !discord
        .messages_in(CHANNEL_ID)
        .iter()
        .any(|m| !m.buttons().is_empty())
    {
        assert!(std::time::Instant::now() < deadline, "the card never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cards: Vec<_> = discord
        .messages_in(CHANNEL_ID)
        .into_iter()
        .filter(|m| !m.buttons().is_empty())
        .collect();
    assert_eq!(cards.len(), 1);
    assert!(cards[0].buttons().iter().any(|b| b.0.contains("act-storm")));
    // Remembered as the action's card, so its outcome edits this message.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let p = store
            .pending("act-storm")
            .await
            .expect("get")
            .expect("exists");
        if p.message_ref.is_some() {
            assert!(p.message_ref.unwrap_or_default().contains(&cards[0].id));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the card was not remembered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kept_after_delivery(store.as_ref(), "discord").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_card_outlives_a_429_storm_sqlite() {
    discord_card_storm(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_card_outlives_a_429_storm_postgres() {
    discord_card_storm(Db::Postgres).await;
}
