//! End to end over the HTTP Events API: signed requests from "Slack" to Sparky's axum
//! endpoint, Sparky's slack-morphism client to the fake Web API, the fake LLM, a real database.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::bot::Db;
use support::fake_llm::Reply;
use support::fake_slack::{
    app_mention, block_action, signature, slash_command_form, thread_message, Message,
    SignedPoster, SlackBot, ALICE, BOB, CHANNEL, SIGNING_SECRET, TEAM,
};

const WAIT: Duration = Duration::from_secs(15);

/// The first message in `thread` with buttons.
async fn confirmation(bot: &SlackBot, thread: &str) -> Message {
    bot.slack
        .wait_for("a confirmation with buttons", WAIT, |s| {
            s.thread(CHANNEL, thread)
                .into_iter()
                .find(|m| m.has_buttons())
        })
        .await
}

/// The current state of the message `ts`.
fn message(bot: &SlackBot, ts: &str) -> Message {
    bot.slack
        .messages()
        .into_iter()
        .find(|m| m.ts == ts)
        .expect("message exists")
}

/// Waits for a message in `thread` whose sections contain `needle`.
async fn reply_containing(bot: &SlackBot, thread: &str, needle: &str) -> Message {
    bot.slack
        .wait_for(&format!("a reply containing {needle:?}"), WAIT, |s| {
            s.thread(CHANNEL, thread)
                .into_iter()
                .find(|m| m.section_text().contains(needle))
        })
        .await
}

async fn propose_task(bot: &SlackBot, poster: &SignedPoster, ts: &str, title: &str) -> Message {
    bot.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": title}),
    )]));
    let a = poster
        .event(
            &app_mention(
                TEAM,
                CHANNEL,
                ALICE,
                ts,
                &format!("add a task: {title}"),
                &format!("Ev{ts}"),
            ),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    confirmation(bot, ts).await
}

fn confirm_id(m: &Message) -> String {
    m.buttons()[0]["action_id"]
        .as_str()
        .expect("confirm id")
        .to_string()
}

fn cancel_id(m: &Message) -> String {
    m.buttons()[1]["action_id"]
        .as_str()
        .expect("cancel id")
        .to_string()
}

#[tokio::test]
async fn a_mention_gets_a_thread_reply_streamed_within_the_rate_bound() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let answer = "Use **8 AWG** copper per [Table 310.16](https://example.com/310-16) when I < 50 A & 75 °C terminals. "
        .repeat(6);
    bot.llm.push(Reply::Text(answer.clone()));
    let ts = "1700000001.000100";
    let a = poster
        .event(
            &app_mention(
                TEAM,
                CHANNEL,
                ALICE,
                ts,
                "what wire for 45 A?",
                "EvMention1",
            ),
            None,
        )
        .await;
    assert_eq!(a.status, 200);
    assert!(a.took < Duration::from_secs(1), "ack took {:?}", a.took);

    let m = reply_containing(&bot, ts, "Table 310.16").await;
    // Wait for the final edit (the whole answer).
    let m = bot
        .slack
        .wait_for("the whole answer", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|x| x.ts == m.ts && x.section_text().matches("8 AWG").count() == 6)
        })
        .await;
    let text = m.section_text();
    assert!(text.contains("*8 AWG*"), "{text}");
    assert!(
        text.contains("<https://example.com/310-16|Table 310.16>"),
        "{text}"
    );
    assert!(text.contains("I &lt; 50 A &amp; 75"), "{text}");
    for pair in m.versions.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(gap >= Duration::from_millis(950), "edits {gap:?} apart");
    }
    // The asker's message showed the working reaction, removed at the end.
    let reactions = bot
        .slack
        .wait_for("the reaction removed", WAIT, |s| {
            let r = s.reactions();
            (r.len() == 2).then_some(r)
        })
        .await;
    assert!(reactions[0].0 && !reactions[1].0);
    assert_eq!(reactions[0].2, ts);
    // The model saw the text without the mention.
    let req = bot.llm.requests()[0].to_string();
    assert!(
        req.contains("what wire for 45 A?") && !req.contains("<@"),
        "{req}"
    );
}

#[tokio::test]
async fn confirm_by_the_requester_executes_once_despite_double_clicks_and_retries() {
    confirm_flow(Db::Sqlite).await;
}

#[tokio::test]
async fn confirm_flow_on_postgres() {
    confirm_flow(Db::Postgres).await;
}

async fn confirm_flow(db: Db) {
    let bot = SlackBot::start(db, "http").await;
    let poster = bot.serve_http().await;
    let ts = "1700000002.000100";
    let card = propose_task(&bot, &poster, ts, "Label panel A").await;
    // Block Kit: header, one section per item with details, who may confirm, two buttons.
    let kinds: Vec<&str> = card
        .blocks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(kinds, ["header", "section", "context", "actions"]);
    assert!(
        card.section_text().contains("Label panel A"),
        "{}",
        card.section_text()
    );
    let buttons = card.buttons();
    assert_eq!(buttons[0]["style"], "primary");
    assert_eq!(buttons[1]["style"], "danger");
    let action_id = buttons[0]["value"].as_str().unwrap().to_string();
    assert_eq!(confirm_id(&card), format!("sparky:confirm:{action_id}"));
    assert!(
        bot.tasks().await.is_empty(),
        "nothing runs before the click"
    );

    // Slack redelivers the mention (X-Slack-Retry-Num): the model is not asked again.
    let again = poster
        .event(
            &app_mention(
                TEAM,
                CHANNEL,
                ALICE,
                ts,
                "add a task: Label panel A",
                &format!("Ev{ts}"),
            ),
            Some(1),
        )
        .await;
    assert_eq!(again.status, 200);

    // Double click: two clicks at once.
    bot.llm
        .push(Reply::Text("Task added to the punch list.".into()));
    let click1 = block_action(TEAM, ALICE, &card, &confirm_id(&card), "trig.1");
    let click2 = block_action(TEAM, ALICE, &card, &confirm_id(&card), "trig.2");
    let (a1, a2) = tokio::join!(poster.interaction(&click1), poster.interaction(&click2));
    assert_eq!((a1.status, a2.status), (200, 200));
    assert!(a1.took < Duration::from_secs(1) && a2.took < Duration::from_secs(1));

    reply_containing(&bot, ts, "Task added to the punch list.").await;
    let closed = bot
        .slack
        .wait_for("the card closed", WAIT, |s| {
            let m = s.messages().into_iter().find(|m| m.ts == card.ts)?;
            (!m.has_buttons()).then_some(m)
        })
        .await;
    bot.settled().await;
    // The second click does not overwrite the outcome written by the first.
    let closed = message(&bot, &closed.ts);
    let text = closed.section_text();
    assert!(
        text.contains("Confirmed by <@U0ALICE> and applied"),
        "{text}"
    );
    assert!(text.contains("Label panel A"), "{text}");
    assert_eq!(bot.tasks().await.len(), 1, "executed exactly once");
    assert_eq!(
        bot.llm.requests().len(),
        2,
        "one proposal turn, one turn after the confirm"
    );
    assert_eq!(bot.llm.remaining(), 0);
}

#[tokio::test]
async fn another_user_is_refused_privately_and_cancel_closes_the_card() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let ts = "1700000003.000100";
    let card = propose_task(&bot, &poster, ts, "Torque lugs").await;

    let a = poster
        .interaction(&block_action(
            TEAM,
            BOB,
            &card,
            &confirm_id(&card),
            "trig.bob",
        ))
        .await;
    assert_eq!(a.status, 200);
    let note = bot
        .slack
        .wait_for("an ephemeral refusal", WAIT, |s| {
            s.ephemerals().into_iter().next()
        })
        .await;
    assert_eq!(note["user"], BOB);
    assert_eq!(note["thread_ts"], ts);
    assert!(
        note["text"]
            .as_str()
            .unwrap()
            .contains("Only <@U0ALICE> can confirm"),
        "{note}"
    );
    assert!(message(&bot, &card.ts).has_buttons(), "the card stays open");
    assert!(bot.tasks().await.is_empty());

    bot.llm
        .push(Reply::Text("Cancelled; nothing changed.".into()));
    poster
        .interaction(&block_action(
            TEAM,
            ALICE,
            &card,
            &cancel_id(&card),
            "trig.cancel",
        ))
        .await;
    let closed = bot
        .slack
        .wait_for("the card closed", WAIT, |s| {
            let m = s.messages().into_iter().find(|m| m.ts == card.ts)?;
            (!m.has_buttons()).then_some(m)
        })
        .await;
    assert!(
        closed.section_text().contains("Cancelled"),
        "{}",
        closed.section_text()
    );
    reply_containing(&bot, ts, "Cancelled; nothing changed.").await;
    assert!(bot.tasks().await.is_empty());
}

#[tokio::test]
async fn a_click_after_a_restart_still_executes() {
    let mut bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let ts = "1700000004.000100";
    let card = propose_task(&bot, &poster, ts, "Check bonding").await;
    // A new process: new agent, new store connection, new endpoint; same database.
    bot.restart().await;
    let poster2 = bot.serve_http().await;
    drop(poster);
    bot.llm.push(Reply::Text("Done after the restart.".into()));
    poster2
        .interaction(&block_action(
            TEAM,
            ALICE,
            &card,
            &confirm_id(&card),
            "trig.r",
        ))
        .await;
    reply_containing(&bot, ts, "Done after the restart.").await;
    let m = message(&bot, &card.ts);
    assert!(!m.has_buttons());
    assert!(
        m.section_text().contains("Confirmed"),
        "{}",
        m.section_text()
    );
    assert_eq!(bot.tasks().await.len(), 1);
}

#[tokio::test]
async fn typing_while_a_change_is_pending_corrects_it() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let ts = "1700000005.000100";
    let card = propose_task(&bot, &poster, ts, "Label panel A").await;
    bot.llm.push(Reply::Text(
        "Understood: panel B instead. Shall I propose that?".into(),
    ));
    let a = poster
        .event(
            &thread_message(
                TEAM,
                CHANNEL,
                ALICE,
                ts,
                "1700000005.000900",
                "no, panel B",
                "EvCorr",
            ),
            None,
        )
        .await;
    assert_eq!(a.status, 200);
    reply_containing(&bot, ts, "panel B instead").await;
    let m = message(&bot, &card.ts);
    assert!(!m.has_buttons());
    assert!(
        m.section_text().contains("Superseded"),
        "{}",
        m.section_text()
    );
    let last = bot.llm.requests().last().unwrap().to_string();
    assert!(
        last.contains("not_confirmed") && last.contains("no, panel B"),
        "{last}"
    );
    assert!(bot.tasks().await.is_empty());

    // A reply in a thread Sparky is not part of is ignored.
    let before = bot.llm.requests().len();
    poster
        .event(
            &thread_message(
                TEAM,
                CHANNEL,
                BOB,
                "1600000000.000001",
                "1600000000.000900",
                "lunch?",
                "EvOther",
            ),
            None,
        )
        .await;
    bot.settled().await;
    assert_eq!(bot.llm.requests().len(), before);
}

#[tokio::test]
async fn a_15000_character_answer_is_split_into_sections_and_messages() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let para = |i: usize| {
        format!(
            "Paragraph {i}: {}",
            "conductor ampacity derating ".repeat(9)
        )
    };
    let answer: String = (0..60).map(para).collect::<Vec<_>>().join("\n\n");
    assert!(answer.chars().count() >= 15_000, "{}", answer.len());
    bot.llm.push(Reply::Text(answer.clone()));
    let ts = "1700000006.000100";
    poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, ts, "long one", "EvLong"),
            None,
        )
        .await;
    let msgs = bot
        .slack
        .wait_for("two complete messages", WAIT, |s| {
            let t = s.thread(CHANNEL, ts);
            (t.len() == 2 && t[1].section_text().contains("Paragraph 59:")).then_some(t)
        })
        .await;
    for m in &msgs {
        let sections = m.sections();
        assert!(sections.iter().all(|s| s.chars().count() <= 3000));
        let total: usize = sections.iter().map(|s| s.chars().count()).sum();
        assert!(total <= 12_000, "message of {total} characters");
        assert!(sections.len() >= 2);
    }
    let joined: String = msgs
        .iter()
        .map(Message::section_text)
        .collect::<Vec<_>>()
        .join("\n");
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(squash(&joined), squash(&answer));
}

#[tokio::test]
async fn a_429_on_chat_update_waits_retry_after_and_loses_nothing() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    bot.slack.rate_limit("chat.update", 2, 1);
    let answer = "The final answer has every word in it. ".repeat(10);
    bot.llm.push(Reply::Text(answer.clone()));
    let ts = "1700000007.000100";
    poster
        .event(&app_mention(TEAM, CHANNEL, ALICE, ts, "q", "Ev429"), None)
        .await;
    bot.slack
        .wait_for("the whole answer", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.section_text().matches("every word").count() == 10)
        })
        .await;
    let updates = bot.slack.calls_of("chat.update");
    assert!(updates.len() >= 2, "{updates:?}");
    assert!(updates[0].limited);
    let waited = updates[1].at.duration_since(updates[0].at);
    assert!(
        waited >= Duration::from_millis(1950),
        "retried after {waited:?}"
    );
}

#[tokio::test]
async fn bad_signatures_stale_timestamps_and_replays_are_refused() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let event = app_mention(TEAM, CHANNEL, ALICE, "1700000008.000100", "hello", "EvSig");
    let body = event.to_string();
    let now = chrono::Utc::now().timestamp();

    let bad = poster
        .raw(
            "/slack/events",
            "application/json",
            &body,
            now,
            "v0=deadbeef",
            None,
        )
        .await;
    assert_eq!(bad.status, 401);
    let wrong_secret = signature("not-the-secret", now, body.as_bytes());
    assert_eq!(
        poster
            .raw(
                "/slack/events",
                "application/json",
                &body,
                now,
                &wrong_secret,
                None
            )
            .await
            .status,
        401
    );
    let old = now - 6 * 60;
    let stale = signature(SIGNING_SECRET, old, body.as_bytes());
    let r = poster
        .raw(
            "/slack/events",
            "application/json",
            &body,
            old,
            &stale,
            None,
        )
        .await;
    assert_eq!(r.status, 401);
    assert!(r.body.contains("five minutes"), "{}", r.body);
    // The documented signed slash command (correct signature for its secret, 2018 timestamp).
    let doc = support::fake_slack::fixture("slash_command.docs-signing-example.form.txt");
    let r = poster
        .raw(
            "/slack/commands",
            "application/x-www-form-urlencoded",
            &doc,
            1531420618,
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
            None,
        )
        .await;
    assert_eq!(r.status, 401);

    // A good request is accepted once; the same signed request again is a replay.
    bot.llm.push(Reply::Text("Hello!".into()));
    let sig = signature(SIGNING_SECRET, now, body.as_bytes());
    assert_eq!(
        poster
            .raw("/slack/events", "application/json", &body, now, &sig, None)
            .await
            .status,
        200
    );
    let replay = poster
        .raw("/slack/events", "application/json", &body, now, &sig, None)
        .await;
    assert_eq!(replay.status, 401);
    assert!(replay.body.contains("replay"), "{}", replay.body);
    // An unsigned retry header does not excuse the copy, nor does spelling the signature's
    // hex in capitals, nor sending it to another replica of the endpoint.
    let with_retry_header = poster
        .raw(
            "/slack/events",
            "application/json",
            &body,
            now,
            &sig,
            Some(1),
        )
        .await;
    assert_eq!(with_retry_header.status, 401, "{}", with_retry_header.body);
    let upper = format!("v0={}", sig.trim_start_matches("v0=").to_uppercase());
    let recased = poster
        .raw(
            "/slack/events",
            "application/json",
            &body,
            now,
            &upper,
            None,
        )
        .await;
    assert_eq!(recased.status, 401, "{}", recased.body);
    let replica = bot.serve_http().await;
    let elsewhere = replica
        .raw(
            "/slack/events",
            "application/json",
            &body,
            now,
            &sig,
            Some(2),
        )
        .await;
    assert_eq!(elsewhere.status, 401, "{}", elsewhere.body);
    reply_containing(&bot, "1700000008.000100", "Hello!").await;
    bot.settled().await;
    assert_eq!(
        bot.llm.requests().len(),
        1,
        "only the good request reached the model"
    );

    // url_verification is answered with the challenge.
    let challenge = support::fake_slack::fixture_json("url_verification.json");
    let r = poster.event(&challenge, None).await;
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["challenge"], "valid_challenge_token");
}

#[tokio::test]
async fn slash_commands_are_acknowledged_and_answered_in_a_thread() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let r = poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "project show",
            "cmd.1",
        ))
        .await;
    assert_eq!(r.status, 200);
    assert!(r.took < Duration::from_secs(1), "ack took {:?}", r.took);
    let ack: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(ack["response_type"], "ephemeral");
    let header = bot
        .slack
        .wait_for("the command's header message", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("project show"))
        })
        .await;
    assert!(header.section_text().contains("<@U0ALICE>"));
    reply_containing(&bot, &header.ts, "Shop").await;

    // A signed request for another command is answered and not run.
    let other = slash_command_form(TEAM, CHANNEL, ALICE, "project show", "cmd.other")
        .replace("command=%2Fsparky", "command=%2Fdeploy");
    assert!(other.contains("command=%2Fdeploy"), "{other}");
    let r = poster.command(&other).await;
    assert_eq!(r.status, 200);
    let ack: Value = serde_json::from_str(&r.body).unwrap();
    assert!(
        ack["text"]
            .as_str()
            .is_some_and(|t| t.contains("/deploy is not a command of Sparky")),
        "{ack}"
    );

    // `ask` starts a conversation in a new thread under its header.
    bot.llm.push(Reply::Text(
        "A 60 A circuit needs a 10 AWG copper EGC.".into(),
    ));
    poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "ask EGC for 60 A?",
            "cmd.2",
        ))
        .await;
    let header = bot
        .slack
        .wait_for("the ask header", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("ask EGC"))
        })
        .await;
    reply_containing(&bot, &header.ts, "10 AWG copper EGC").await;
    let req = bot.llm.requests()[0].to_string();
    assert!(req.contains("EGC for 60 A?"), "{req}");
    let shown = bot
        .slack
        .messages()
        .into_iter()
        .filter(|m| m.thread_ts.is_none() && m.section_text().contains("project show"))
        .count();
    assert_eq!(shown, 1, "the /deploy request ran nothing");

    // A command in a channel outside the allow-list... is allowed here (empty list); a usage
    // error is answered in the thread.
    poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "spec nonsense",
            "cmd.3",
        ))
        .await;
    let header = bot
        .slack
        .wait_for("the usage header", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("spec nonsense"))
        })
        .await;
    reply_containing(&bot, &header.ts, "usage: /sparky spec").await;
}

#[tokio::test]
async fn allow_lists_keep_other_channels_out_and_direct_messages_work() {
    let mut bot = SlackBot::start(Db::Sqlite, "http").await;
    bot.config.slack.allowed_channels = vec!["C0OTHER".into()];
    let poster = bot.serve_http().await;

    // The project channel is not on the list: a mention is acknowledged and ignored.
    let r = poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, "1700000009.000100", "hi", "EvGate"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    let r = poster
        .command(&slash_command_form(
            TEAM, CHANNEL, ALICE, "help", "cmd.gate",
        ))
        .await;
    assert!(r.body.contains("not enabled"), "{}", r.body);

    // Direct messages are allowed separately; each top-level DM starts a thread session.
    bot.llm.push(Reply::Text(
        "Hi Alice, ask me anything about the NEC.".into(),
    ));
    let dm = "D0ALICE";
    let ts = "1700000010.000100";
    let r = poster
        .event(
            &support::fake_slack::direct_message(TEAM, dm, ALICE, ts, "hello", "EvDm"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    bot.slack
        .wait_for("the DM reply", WAIT, |s| {
            s.thread(dm, ts)
                .into_iter()
                .find(|m| m.section_text().contains("Hi Alice"))
        })
        .await;
    bot.settled().await;
    assert_eq!(bot.llm.requests().len(), 1, "only the DM reached the model");
    assert!(bot.slack.messages().iter().all(|m| m.channel == dm));
}

#[tokio::test]
async fn chat_streaming_api_when_enabled_and_its_fallback() {
    let mut bot = SlackBot::start(Db::Sqlite, "http").await;
    bot.config.slack.streaming = true;
    let poster = bot.serve_http().await;
    let answer = "Streaming **answer** with several words in it. ".repeat(8);
    bot.llm.push(Reply::Text(answer.clone()));
    let ts = "1700000011.000100";
    poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, ts, "stream please", "EvStream1"),
            None,
        )
        .await;
    let m = bot
        .slack
        .wait_for("a stopped stream", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.streaming == Some(false))
        })
        .await;
    assert_eq!(
        m.text.trim_end(),
        answer.trim_end(),
        "the streamed Markdown is the answer"
    );
    for pair in m.versions.windows(2) {
        assert!(pair[1].duration_since(pair[0]) >= Duration::from_millis(950));
    }
    let start = &bot.slack.calls_of("chat.startStream")[0];
    assert_eq!(start.args["recipient_user_id"], ALICE);
    assert_eq!(start.args["recipient_team_id"], TEAM);
    assert!(bot.slack.calls_of("chat.update").is_empty());

    // A workspace without streaming: the reply falls back to chat.postMessage/update, and
    // later replies do not try streaming again.
    bot.slack.refuse_streaming();
    for (i, text) in ["Fallback reply one.", "Fallback reply two."]
        .iter()
        .enumerate()
    {
        bot.llm.push(Reply::Text(text.to_string()));
        let ts = format!("170000001{}.000100", i + 2);
        poster
            .event(
                &app_mention(
                    TEAM,
                    CHANNEL,
                    ALICE,
                    &ts,
                    "again",
                    &format!("EvStream{}", i + 2),
                ),
                None,
            )
            .await;
        reply_containing(&bot, &ts, text).await;
    }
    assert_eq!(
        bot.slack.calls_of("chat.startStream").len(),
        2,
        "one refused attempt only"
    );
}

/// The tool runs of the session `thread` as (actor, tool, audit kind), in order.
async fn audited(bot: &SlackBot, thread: &str) -> Vec<(String, Option<String>, String)> {
    let key = sparky::core::session::SessionKey::new("slack", TEAM, CHANNEL, thread);
    let session = bot
        .store
        .open_session(&key, Default::default(), None)
        .await
        .unwrap();
    bot.store
        .audit_for_session(session.id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| {
            (
                a.entry.actor,
                a.entry.tool,
                a.entry.kind.as_str().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tool_commands_run_through_the_core_and_are_audited() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            r#"tool calculator {"expression": "6*7"}"#,
            "cmd.tool.1",
        ))
        .await;
    let header = bot
        .slack
        .wait_for("the tool header", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("calculator"))
        })
        .await;
    reply_containing(&bot, &header.ts, "42").await;
    assert!(audited(&bot, &header.ts).await.contains(&(
        ALICE.to_string(),
        Some("calculator".into()),
        "execution".into()
    )));

    // A write from a command is proposed with buttons like the model's, and applied on Confirm.
    poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            r#"tool create_task {"title": "Label the panels"}"#,
            "cmd.tool.2",
        ))
        .await;
    let header = bot
        .slack
        .wait_for("the write header", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("create_task"))
        })
        .await;
    let card = confirmation(&bot, &header.ts).await;
    assert!(card.section_text().contains("Label the panels"));
    let project = bot
        .store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .unwrap()
        .unwrap();
    assert!(bot
        .store
        .load_project(project)
        .await
        .unwrap()
        .tasks
        .is_empty());
    poster
        .interaction(&block_action(
            TEAM,
            ALICE,
            &card,
            &confirm_id(&card),
            "trig.tool",
        ))
        .await;
    bot.slack
        .wait_for("the applied outcome", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.ts == card.ts && m.section_text().contains("applied"))
        })
        .await;
    assert_eq!(
        bot.store.load_project(project).await.unwrap().tasks.len(),
        1
    );
    let rows = audited(&bot, &header.ts).await;
    for kind in ["proposed", "confirmed", "execution"] {
        assert!(
            rows.iter().any(|(actor, _, k)| actor == ALICE && k == kind),
            "{kind} missing: {rows:?}"
        );
    }
}

#[tokio::test]
async fn project_members_are_named_as_mentions() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let project = bot
        .store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .unwrap()
        .expect("bound");
    bot.store
        .set_member_role(project, "slack", ALICE, sparky::project::MemberRole::Owner)
        .await
        .unwrap();
    let poster = bot.serve_http().await;
    let r = poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "project members",
            "cmd.members",
        ))
        .await;
    assert_eq!(r.status, 200);
    let header = bot
        .slack
        .wait_for("the command's header message", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.thread_ts.is_none() && m.section_text().contains("project members"))
        })
        .await;
    let reply = reply_containing(&bot, &header.ts, "owner").await;
    let text = reply.section_text();
    assert!(text.contains(&format!("<@{ALICE}>: owner")), "{text}");
    assert!(!text.contains('\u{FFF9}'), "{text}");
}

#[tokio::test]
async fn audit_is_shown_only_to_the_caller() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let project = bot
        .store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .unwrap()
        .expect("bound");
    bot.store
        .set_member_role(project, "slack", ALICE, sparky::project::MemberRole::Owner)
        .await
        .unwrap();
    let poster = bot.serve_http().await;
    let r = poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "audit 5",
            "cmd.audit",
        ))
        .await;
    assert_eq!(r.status, 200);
    let ack: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(ack["response_type"], "ephemeral");
    assert!(
        ack["text"].as_str().is_some_and(|t| t.contains("only you")),
        "{ack}"
    );
    let note = bot
        .slack
        .wait_for("the private answer", WAIT, |s| {
            s.ephemerals()
                .into_iter()
                .find(|e| e["text"].as_str().is_some_and(|t| t.contains("No change")))
        })
        .await;
    assert_eq!(note["user"], ALICE, "{note}");
    assert_eq!(note["channel"], CHANNEL, "{note}");
    bot.settled().await;
    assert!(
        bot.slack.messages().is_empty(),
        "no header and no thread in the channel: {:?}",
        bot.slack.messages()
    );
}

/// A `view_submission` of the Edit form that `open` (the `views.open` call) showed: Slack's
/// recorded submission payload with our form's ids and `values` typed in.
fn edit_submission(open: &support::fake_slack::Call, values: &[(&str, &str)]) -> Value {
    let mut p = support::fake_slack::fixture_json("vercel-chat-replay-slack-slash-commands.json")
        ["viewSubmission"]
        .clone();
    p["team"]["id"] = json!(TEAM);
    p["user"]["id"] = json!(ALICE);
    let view = &open.args["view"];
    p["view"]["callback_id"] = view["callback_id"].clone();
    p["view"]["private_metadata"] = view["private_metadata"].clone();
    p["view"]["id"] = json!("V0EDITFORM1");
    p["view"]["hash"] = json!(format!("h-{}", values.len()));
    let mut state = serde_json::Map::new();
    for (k, v) in values {
        state.insert(
            k.to_string(),
            json!({"value": {"type": "plain_text_input", "value": v}}),
        );
    }
    p["view"]["state"] = json!({"values": state});
    p
}

#[tokio::test]
async fn the_edit_form_shows_errors_on_its_fields_and_supersedes_the_card() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let ts = "1700000009.000100";
    let card = propose_task(&bot, &poster, ts, "Label panel A").await;
    let edit = card.buttons()[2]["action_id"]
        .as_str()
        .expect("an Edit button")
        .to_string();
    assert!(edit.starts_with("sparky:edit:"), "{edit}");
    let click = block_action(TEAM, ALICE, &card, &edit, "trig.edit");
    assert_eq!(poster.interaction(&click).await.status, 200);
    let open = bot
        .slack
        .wait_for("views.open", WAIT, |s| {
            s.calls_of("views.open").into_iter().next()
        })
        .await;
    assert_eq!(open.args["trigger_id"], "trig.edit");
    let view = &open.args["view"];
    assert_eq!(view["type"], "modal");
    assert_eq!(view["blocks"][0]["block_id"], "title");
    assert_eq!(
        view["blocks"][0]["element"]["initial_value"],
        "Label panel A"
    );

    // An emptied required field: the error comes back on it, and the card stays.
    let r = poster
        .interaction(&edit_submission(&open, &[("title", " ")]))
        .await;
    assert_eq!(r.status, 200);
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["response_action"], "errors", "{body}");
    assert_eq!(body["errors"]["title"], "This field is required.");
    bot.settled().await;
    assert!(message(&bot, &card.ts).has_buttons(), "the card stays");

    // A submission is a request like any other: unsigned, it is refused and runs nothing.
    let forged = serde_urlencoded::to_string([(
        "payload",
        edit_submission(&open, &[("title", "Forged")]).to_string(),
    )])
    .unwrap();
    let r = poster
        .raw(
            "/slack/interactivity",
            "application/x-www-form-urlencoded",
            &forged,
            chrono::Utc::now().timestamp(),
            "v0=0000",
            None,
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.body);

    // A valid one closes the form; the card is superseded by a corrected one, not confirmed.
    let r = poster
        .interaction(&edit_submission(&open, &[("title", "Label panel B")]))
        .await;
    assert_eq!((r.status, r.body.trim()), (200, ""));
    let corrected = bot
        .slack
        .wait_for("the corrected card", WAIT, |s| {
            s.thread(CHANNEL, ts)
                .into_iter()
                .find(|m| m.has_buttons() && m.section_text().contains("Label panel B"))
        })
        .await;
    assert_ne!(corrected.ts, card.ts);
    bot.slack
        .wait_for("the first card closed", WAIT, |s| {
            let m = s.messages().into_iter().find(|m| m.ts == card.ts)?;
            (!m.has_buttons()).then_some(m)
        })
        .await;
    assert!(bot.tasks().await.is_empty(), "nothing applied by an edit");
    assert_eq!(bot.llm.requests().len(), 1, "no model call for the edit");
    assert!(
        !bot.slack
            .messages()
            .iter()
            .any(|m| m.section_text().contains("Forged")),
        "the forged submission ran nothing"
    );
}
