//! End to end over Socket Mode: slack-morphism's listener connects to the fake's WebSocket
//! (after `apps.connections.open` with the app token), receives envelopes built from the
//! recorded ones and acknowledges them; replies go through the fake Web API.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::bot::Db;
use support::fake_llm::Reply;
use support::fake_slack::{
    app_mention, block_action, events_envelope, interactive_envelope, slash_envelope, SlackBot,
    ALICE, APP_TOKEN, CHANNEL, TEAM,
};
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn socket_mode_mention_confirm_retry_command_reconnect_and_shutdown() {
    let bot = SlackBot::start(Db::Sqlite, "socket").await;
    let (stop, stopped) = oneshot::channel::<()>();
    let agent = bot.agent.clone();
    let config = bot.config.clone();
    let runner = tokio::spawn(async move {
        sparky::platforms::slack::run(agent, &config, async {
            let _ = stopped.await;
        })
        .await
    });
    bot.slack
        .wait_for("a Socket Mode connection", WAIT, |s| {
            (s.connections() >= 1).then_some(())
        })
        .await;
    let opened = bot.slack.calls_of("apps.connections.open");
    assert_eq!(opened[0].token.as_deref(), Some(APP_TOKEN));

    // A mention: acknowledged at once, answered in its thread.
    bot.llm.push(Reply::Text("Hello from **Sparky**.".into()));
    let ts = "1700000101.000100";
    let started = std::time::Instant::now();
    bot.slack.send_envelope(&events_envelope(
        &app_mention(TEAM, CHANNEL, ALICE, ts, "hi", "EvS1"),
        "env-1",
        0,
    ));
    bot.slack.wait_ack("env-1", Duration::from_secs(3)).await;
    // Slack's own bound: an envelope not acknowledged within 3 s is sent again.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "ack took {:?}",
        started.elapsed()
    );
    bot.slack
        .wait_for("the reply", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.section_text().contains("Hello from *Sparky*."))
        })
        .await;

    // A write tool: Block Kit card, Confirm over Socket Mode, executed once.
    bot.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Replace breaker 7"}),
    )]));
    let ts = "1700000102.000100";
    let mention = app_mention(TEAM, CHANNEL, ALICE, ts, "add a task", "EvS2");
    bot.slack
        .send_envelope(&events_envelope(&mention, "env-2", 0));
    let card = bot
        .slack
        .wait_for("the card", WAIT, |s| {
            s.thread(CHANNEL, ts).into_iter().find(|m| m.has_buttons())
        })
        .await;
    // Slack redelivers the same event (retry_attempt 1): acknowledged, not run again.
    bot.slack
        .send_envelope(&events_envelope(&mention, "env-2b", 1));
    bot.slack.wait_ack("env-2b", Duration::from_secs(3)).await;

    bot.llm.push(Reply::Text("Added.".into()));
    let confirm = card.buttons()[0]["action_id"].as_str().unwrap().to_string();
    bot.slack.send_envelope(&interactive_envelope(
        &block_action(TEAM, ALICE, &card, &confirm, "trig.s1"),
        "env-3",
    ));
    bot.slack.wait_ack("env-3", Duration::from_secs(3)).await;
    bot.slack
        .wait_for("the card closed and the follow-up", WAIT, |s| {
            let closed = s
                .messages()
                .into_iter()
                .any(|m| m.ts == card.ts && !m.has_buttons());
            let follow = s
                .thread(CHANNEL, ts)
                .into_iter()
                .any(|m| m.section_text().contains("Added."));
            (closed && follow).then_some(())
        })
        .await;
    bot.settled().await;
    assert_eq!(bot.tasks().await.len(), 1);
    assert_eq!(
        bot.llm.requests().len(),
        3,
        "hello, proposal, after-confirm"
    );

    // A slash command: the ack carries the ephemeral note; the answer goes to a thread.
    bot.slack.send_envelope(&slash_envelope(
        TEAM, CHANNEL, ALICE, "tools", "trig.cmd", "env-4",
    ));
    let ack = bot.slack.wait_ack("env-4", Duration::from_secs(3)).await;
    assert!(
        ack["payload"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("thread"),
        "{ack}"
    );
    let header = bot
        .slack
        .wait_for("the command header", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("tools"))
        })
        .await;
    bot.slack
        .wait_for("the tool list", WAIT, |s| {
            s.thread(CHANNEL, &header.ts)
                .into_iter()
                .find(|m| m.section_text().contains("create_task"))
        })
        .await;

    // Slack asks the client to reconnect: it opens a new connection and keeps working.
    let before = bot.slack.connections();
    bot.slack.disconnect_all();
    bot.slack
        .wait_for("a reconnection", Duration::from_secs(40), |s| {
            (s.connections() > before).then_some(())
        })
        .await;
    bot.llm.push(Reply::Text("Still here.".into()));
    let ts = "1700000103.000100";
    bot.slack.send_envelope(&events_envelope(
        &app_mention(TEAM, CHANNEL, ALICE, ts, "still?", "EvS3"),
        "env-5",
        0,
    ));
    bot.slack
        .wait_for("the reply after reconnecting", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.section_text().contains("Still here."))
        })
        .await;

    let _ = stop.send(());
    let result = tokio::time::timeout(Duration::from_secs(10), runner)
        .await
        .expect("run stops after shutdown")
        .expect("no panic");
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn socket_mode_refuses_a_wrong_bot_token() {
    let mut bot = SlackBot::start(Db::Sqlite, "socket").await;
    bot.config.secrets.slack_bot_token = Some(sparky::config::Secret::new("xoxb-wrong"));
    let r = sparky::platforms::slack::run(bot.agent.clone(), &bot.config, async {}).await;
    assert!(
        matches!(r, Err(sparky::platforms::slack::SlackError::Api(ref e)) if e.contains("invalid_auth")),
        "{r:?}"
    );
}
