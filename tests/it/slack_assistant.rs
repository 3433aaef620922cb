//! Slack's assistant surface (Agents & AI Apps) and the App Home tab, end to end: signed
//! Events API requests (and Socket Mode envelopes) built from the documented payloads in
//! `tests/fixtures/platforms/slack/`, Sparky's Web API calls recorded by the fake Slack and
//! checked against the documented request shapes, the fake model, a real database.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::bot::Db;
use support::fake_llm::Reply;
use support::fake_slack::{
    app_home_opened, app_mention, assistant_event, assistant_message, block_action,
    events_envelope, fixture_json, home_click, signature, Call, SignedPoster, SlackBot, ALICE, BOB,
    CHANNEL, SIGNING_SECRET, TEAM,
};

const WAIT: Duration = Duration::from_secs(15);

/// The app's direct-message channel with Alice, where her assistant threads live.
const DM: &str = "D0ALICEDM";

/// A second channel of the workspace, bound to another project.
const YARD: &str = "C0YARD";

/// The Web API calls that make up what the person sees of an assistant thread, in order:
/// `prompts`, `status` (consecutive ones counted once), `answer` (a post; its edits are
/// left out), `clear`, `title`.
fn assistant_sequence(calls: &[Call]) -> Vec<&'static str> {
    let mut seq: Vec<&'static str> = Vec::new();
    for c in calls {
        let step = match c.method.as_str() {
            "assistant.threads.setSuggestedPrompts" => "prompts",
            "assistant.threads.setStatus" if c.args["status"] == "" => "clear",
            "assistant.threads.setStatus" => "status",
            "assistant.threads.setTitle" => "title",
            "chat.postMessage" if c.args["channel"] == DM => "answer",
            _ => continue,
        };
        if seq.last() == Some(&step) && step == "status" {
            continue;
        }
        seq.push(step);
    }
    seq
}

/// Whether `sent` has the shape of the documented `example`: every documented key, with a
/// value of the same JSON type (array items compared with the first documented item), and
/// nothing else but the `optional` keys.
fn same_shape(sent: &Value, example: &Value, optional: &[&str]) -> Result<(), String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match (sent, example) {
        (Value::Object(s), Value::Object(e)) => {
            for (k, ev) in e {
                let sv = s.get(k).ok_or_else(|| format!("missing {k}"))?;
                same_shape(sv, ev, optional).map_err(|m| format!("{k}: {m}"))?;
            }
            match s
                .keys()
                .find(|k| !e.contains_key(*k) && !optional.contains(&k.as_str()))
            {
                Some(extra) => Err(format!("undocumented {extra}")),
                None => Ok(()),
            }
        }
        (Value::Array(s), Value::Array(e)) => match e.first() {
            Some(first) => s
                .iter()
                .try_for_each(|item| same_shape(item, first, optional)),
            None => Ok(()),
        },
        (s, e) if kind(s) == kind(e) => Ok(()),
        (s, e) => Err(format!("{} where the docs have {}", kind(s), kind(e))),
    }
}

/// Gives the bot's project (Shop, bound to `CHANNEL`) a panel and circuits, one of them long,
/// and makes Alice its owner.
async fn furnish_shop(bot: &SlackBot) -> i64 {
    let store = &bot.store;
    let shop = store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .expect("binding")
        .expect("bound");
    let panel = store
        .add_panel(shop, &support::db::panel("LP-1"))
        .await
        .expect("panel");
    store
        .add_circuit(panel.id, &support::db::circuit(3))
        .await
        .expect("circuit");
    let mut long = support::db::circuit(7);
    long.description = "Parking lot lights".into();
    long.length = Some(sparky::nec::units::Feet(240.0));
    store.add_circuit(panel.id, &long).await.expect("circuit");
    store
        .set_member_role(shop, "slack", ALICE, sparky::project::MemberRole::Owner)
        .await
        .expect("role");
    shop
}

/// A second project of the workspace ("Yard 9"), bound to `YARD`.
async fn yard_project(bot: &SlackBot) -> i64 {
    let p = bot
        .store
        .create_project(
            &sparky::project::Workspace::new("slack", TEAM),
            "Yard 9",
            sparky::nec::units::Edition::Nec2020,
        )
        .await
        .expect("project");
    bot.store
        .bind_channel("slack", TEAM, YARD, p.id)
        .await
        .expect("bind");
    p.id
}

async fn posted(poster: &SignedPoster, payload: &Value) {
    let a = poster.event(payload, None).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

/// The `n`th call of `method`, waited for.
async fn nth_call(bot: &SlackBot, method: &str, n: usize) -> Call {
    bot.slack
        .wait_for(&format!("call {n} of {method}"), WAIT, |s| {
            s.calls_of(method).get(n).cloned()
        })
        .await
}

#[tokio::test]
async fn assistant_thread_offers_prompts_shows_status_answers_and_titles_sqlite() {
    assistant_thread_flow(Db::Sqlite).await;
}

#[tokio::test]
async fn assistant_thread_offers_prompts_shows_status_answers_and_titles_postgres() {
    assistant_thread_flow(Db::Postgres).await;
}

async fn assistant_thread_flow(db: Db) {
    let bot = SlackBot::start(db, "http").await;
    furnish_shop(&bot).await;
    let poster = bot.serve_http().await;
    let thread = (DM, "1729999327.187299");

    // The person opens the assistant while viewing the project's channel.
    posted(
        &poster,
        &assistant_event(true, TEAM, ALICE, thread, Some(CHANNEL), "EvAs1"),
    )
    .await;
    let prompts = nth_call(&bot, "assistant.threads.setSuggestedPrompts", 0).await;
    same_shape(
        &prompts.args,
        &fixture_json("assistant.threads.setSuggestedPrompts.request.docs.json"),
        &[],
    )
    .unwrap_or_else(|e| panic!("setSuggestedPrompts body: {e}: {}", prompts.args));
    assert_eq!(prompts.args["channel_id"], DM);
    assert_eq!(prompts.args["thread_ts"], thread.1);
    let heading = prompts.args["title"].as_str().unwrap_or_default();
    assert!(
        heading.contains("Shop") && heading.contains("NEC 2023"),
        "{heading}"
    );
    let titles: Vec<&str> = prompts.args["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .filter_map(|p| p["title"].as_str())
        .collect();
    assert_eq!(
        &titles[..3],
        [
            "Check panel LP-1",
            "Voltage drop on the longest circuit",
            "What edition applies here?"
        ],
        "{titles:?}"
    );
    let drop = prompts.args["prompts"][1]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        drop.contains("circuit 7")
            && drop.contains("Parking lot lights")
            && drop.contains("240 ft"),
        "{drop}"
    );

    // A question: the model looks up a table, then answers.
    bot.llm.push(Reply::ToolCalls(vec![(
        "lookup_table".into(),
        json!({"table": "310.16", "row": "3/0", "column": "75", "material": "copper"}),
    )]));
    bot.llm.push(Reply::Text(
        "Per Table 310.16, 3/0 copper at 75 °C carries **200 A**.".into(),
    ));
    let question = "What is the ampacity of 3/0 copper at 75C?";
    posted(
        &poster,
        &assistant_message(TEAM, ALICE, thread, "1729999400.000100", question, "EvAs2"),
    )
    .await;
    let title = nth_call(&bot, "assistant.threads.setTitle", 0).await;
    assert_eq!(title.args["title"], question);
    same_shape(
        &title.args,
        &fixture_json("assistant.threads.setTitle.request.docs.json"),
        &[],
    )
    .unwrap_or_else(|e| panic!("setTitle body: {e}"));

    // Exactly: prompts, the status while working, the answer, the status cleared, the title.
    let calls = bot.slack.calls();
    assert_eq!(
        assistant_sequence(&calls),
        ["prompts", "status", "answer", "clear", "title"],
        "{:#?}",
        calls
            .iter()
            .map(|c| (&c.method, &c.args))
            .collect::<Vec<_>>()
    );
    let statuses: Vec<&Call> = calls
        .iter()
        .filter(|c| c.method == "assistant.threads.setStatus")
        .collect();
    for s in &statuses {
        same_shape(
            &s.args,
            &fixture_json("assistant.threads.setStatus.request.docs.json"),
            &["loading_messages"],
        )
        .unwrap_or_else(|e| panic!("setStatus body: {e}: {}", s.args));
        assert_eq!(
            (s.args["channel_id"].as_str(), s.args["thread_ts"].as_str()),
            (Some(DM), Some(thread.1))
        );
    }
    let checking = statuses
        .iter()
        .find(|s| s.args["status"] == "is checking Table 310.16…")
        .unwrap_or_else(|| panic!("no status for the table: {statuses:#?}"));
    let loading = checking.args["loading_messages"]
        .as_array()
        .expect("rotated lines");
    assert_eq!(loading[0], "Checking Table 310.16…");
    assert!(loading.len() > 1 && loading.len() <= 10);
    // An assistant thread shows the status line, not the working reaction.
    assert!(
        bot.slack.reactions().is_empty(),
        "{:?}",
        bot.slack.reactions()
    );

    // The answer is in the thread, and the model saw the project of the context channel.
    let answer = bot.slack.thread(DM, thread.1);
    assert!(
        answer.iter().any(|m| m.section_text().contains("*200 A*")),
        "{answer:#?}"
    );
    let first = bot.llm.requests()[0].to_string();
    assert!(
        first.contains("LP-1") && first.contains("Parking lot lights"),
        "{first}"
    );

    // A second question is answered but the thread keeps its title.
    bot.llm.push(Reply::Text("Yes, within 3 %.".into()));
    posted(
        &poster,
        &assistant_message(
            TEAM,
            ALICE,
            thread,
            "1729999500.000100",
            "and the drop?",
            "EvAs3",
        ),
    )
    .await;
    bot.slack
        .wait_for("the second answer and its cleared status", WAIT, |s| {
            let clears = s
                .calls_of("assistant.threads.setStatus")
                .iter()
                .filter(|c| c.args["status"] == "")
                .count();
            (clears == 2).then_some(())
        })
        .await;
    assert_eq!(bot.slack.calls_of("assistant.threads.setTitle").len(), 1);
}

#[tokio::test]
async fn context_changes_rebind_the_thread_survive_a_restart_and_keep_the_gate_sqlite() {
    context_and_gate(Db::Sqlite).await;
}

#[tokio::test]
async fn context_changes_rebind_the_thread_survive_a_restart_and_keep_the_gate_postgres() {
    context_and_gate(Db::Postgres).await;
}

async fn context_and_gate(db: Db) {
    let mut bot = SlackBot::start(db, "http").await;
    furnish_shop(&bot).await;
    let yard = yard_project(&bot).await;
    let poster = bot.serve_http().await;
    let thread = (DM, "1729999600.000100");

    posted(
        &poster,
        &assistant_event(true, TEAM, ALICE, thread, Some(CHANNEL), "EvCx1"),
    )
    .await;
    nth_call(&bot, "assistant.threads.setSuggestedPrompts", 0).await;
    // She moves to the yard's channel before asking: the thread follows, with new prompts.
    posted(
        &poster,
        &assistant_event(false, TEAM, ALICE, thread, Some(YARD), "EvCx2"),
    )
    .await;
    let again = nth_call(&bot, "assistant.threads.setSuggestedPrompts", 1).await;
    let heading = again.args["title"].as_str().unwrap_or_default();
    assert!(
        heading.contains("Yard 9") && heading.contains("NEC 2020"),
        "{heading}"
    );
    // A context with no channel (she looks at something else) changes nothing.
    posted(
        &poster,
        &assistant_event(false, TEAM, ALICE, thread, None, "EvCx3"),
    )
    .await;

    // A restart: a new process on the same database knows the thread and its context.
    bot.restart().await;
    let poster = bot.serve_http().await;
    bot.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Trench for the yard lights"}),
    )]));
    posted(
        &poster,
        &assistant_message(
            TEAM,
            ALICE,
            thread,
            "1729999700.000100",
            "add a task: trench",
            "EvCx4",
        ),
    )
    .await;
    let card = bot
        .slack
        .wait_for("the card in the assistant thread", WAIT, |s| {
            s.thread(DM, thread.1).into_iter().find(|m| m.has_buttons())
        })
        .await;
    nth_call(&bot, "assistant.threads.setTitle", 0).await;
    assert!(
        bot.llm.requests()[0].to_string().contains("Yard 9"),
        "the model was not told of the context's project"
    );
    // Same gate as a channel thread: Bob may not confirm Alice's change.
    let confirm = card.buttons()[0]["action_id"]
        .as_str()
        .expect("confirm id")
        .to_string();
    let a = poster
        .interaction(&block_action(TEAM, BOB, &card, &confirm, "trig-bob"))
        .await;
    assert_eq!(a.status, 200);
    bot.slack
        .wait_for("Bob told privately", WAIT, |s| {
            s.ephemerals().into_iter().find(|e| e["user"] == BOB)
        })
        .await;
    let a = poster
        .interaction(&block_action(TEAM, ALICE, &card, &confirm, "trig-alice"))
        .await;
    assert_eq!(a.status, 200);
    let tasks = tasks_when(&bot, yard, |t| !t.is_empty()).await;
    assert_eq!(tasks[0].spec.title, "Trench for the yard lights");
    let shop = bot
        .store
        .channel_project("slack", TEAM, CHANNEL)
        .await
        .expect("binding")
        .expect("bound");
    assert!(bot
        .store
        .load_project(shop)
        .await
        .expect("shop")
        .tasks
        .is_empty());
}

/// The tasks of `project` once `done` holds for them.
async fn tasks_when(
    bot: &SlackBot,
    project: i64,
    done: impl Fn(&[sparky::project::Task]) -> bool,
) -> Vec<sparky::project::Task> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let tasks = bot
            .store
            .load_project(project)
            .await
            .expect("project")
            .tasks;
        if done(&tasks) {
            return tasks;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tasks stayed {tasks:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn app_home_shows_only_the_workspace_projects_cards_and_changes_of_the_user_sqlite() {
    app_home(Db::Sqlite).await;
}

#[tokio::test]
async fn app_home_shows_only_the_workspace_projects_cards_and_changes_of_the_user_postgres() {
    app_home(Db::Postgres).await;
}

async fn app_home(db: Db) {
    let bot = SlackBot::start(db, "http").await;
    let shop = furnish_shop(&bot).await;
    let store = &bot.store;
    // Barn: the same workspace, but Alice holds no role in it (Bob owns it).
    let barn = store
        .create_project(
            &sparky::project::Workspace::new("slack", TEAM),
            "Barn",
            sparky::nec::units::Edition::Nec2023,
        )
        .await
        .expect("barn");
    store
        .set_member_role(barn.id, "slack", BOB, sparky::project::MemberRole::Owner)
        .await
        .expect("role");
    // Elsewhere: another workspace where the same user id owns a project and waits on a card.
    let other_team = "T222";
    let elsewhere = store
        .create_project(
            &sparky::project::Workspace::new("slack", other_team),
            "Elsewhere",
            sparky::nec::units::Edition::Nec2023,
        )
        .await
        .expect("elsewhere");
    store
        .set_member_role(
            elsewhere.id,
            "slack",
            ALICE,
            sparky::project::MemberRole::Owner,
        )
        .await
        .expect("role");
    let there = store
        .open_session(
            &sparky::core::session::SessionKey::new("slack", other_team, "C999", "1.1"),
            sparky::core::session::Mode::General,
            Some(elsewhere.id),
        )
        .await
        .expect("session");
    let mut card = support::db::new_pending("card-elsewhere", there.id);
    card.rule.requester = ALICE.into();
    card.project_id = Some(elsewhere.id);
    card.items[0].summary = "Add circuit 12 in the other workspace".into();
    store.create_pending(&card).await.expect("pending");

    let poster = bot.serve_http().await;
    // One change applied in Shop, one waiting.
    bot.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Label panel LP-1"}),
    )]));
    // What the model says once the change is applied.
    bot.llm.push(Reply::Text("Done.".into()));
    posted(
        &poster,
        &app_mention(
            TEAM,
            CHANNEL,
            ALICE,
            "1700000301.000100",
            "add a task",
            "EvH1",
        ),
    )
    .await;
    let applied = bot
        .slack
        .wait_for("the first card", WAIT, |s| {
            s.thread(CHANNEL, "1700000301.000100")
                .into_iter()
                .find(|m| m.has_buttons())
        })
        .await;
    let confirm = applied.buttons()[0]["action_id"]
        .as_str()
        .expect("id")
        .to_string();
    poster
        .interaction(&block_action(TEAM, ALICE, &applied, &confirm, "trig-h1"))
        .await;
    tasks_when(&bot, shop, |t| t.len() == 1).await;
    bot.llm.push(Reply::ToolCalls(vec![(
        "create_task".into(),
        json!({"title": "Replace breaker 7"}),
    )]));
    posted(
        &poster,
        &app_mention(
            TEAM,
            CHANNEL,
            ALICE,
            "1700000302.000100",
            "another task",
            "EvH2",
        ),
    )
    .await;
    let waiting = bot
        .slack
        .wait_for("the second card", WAIT, |s| {
            s.thread(CHANNEL, "1700000302.000100")
                .into_iter()
                .find(|m| m.has_buttons())
        })
        .await;

    posted(&poster, &app_home_opened(TEAM, ALICE, "EvH3")).await;
    let publish = nth_call(&bot, "views.publish", 0).await;
    let mut documented = fixture_json("views.publish.request.json");
    documented["view"]["blocks"] = json!([]);
    same_shape(
        &publish.args,
        &documented,
        &["private_metadata", "callback_id", "external_id"],
    )
    .unwrap_or_else(|e| panic!("views.publish body: {e}: {}", publish.args));
    assert_eq!(publish.args["user_id"], ALICE);
    let view = &publish.args["view"];
    let text = view.to_string();
    assert!(text.contains("*Shop* · owner"), "{text}");
    for absent in ["Barn", "Elsewhere", "other workspace"] {
        assert!(!text.contains(absent), "{absent} shown: {text}");
    }
    assert!(
        text.contains("Replace breaker 7") && text.contains("Label panel LP-1"),
        "{text}"
    );
    assert!(text.contains(&format!("Confirmed by <@{ALICE}>")), "{text}");
    let blocks = view["blocks"].as_array().expect("blocks");
    let card_link = blocks
        .iter()
        .find(|b| {
            b["text"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Replace breaker 7"))
        })
        .map(|b| b["accessory"]["url"].clone())
        .expect("the waiting card's block");
    assert_eq!(
        card_link,
        json!(format!(
            "https://fake.slack.test/archives/{CHANNEL}/p{}",
            waiting.ts.replace('.', "")
        ))
    );
    let ids: Vec<&str> = blocks
        .iter()
        .flat_map(|b| {
            let mut v = vec![b["accessory"]["action_id"].as_str()];
            for e in b["elements"].as_array().into_iter().flatten() {
                v.push(e["action_id"].as_str());
            }
            v
        })
        .flatten()
        .collect();
    assert!(
        ids.contains(&"sparky_home_project_new") && ids.contains(&"sparky_home_project_edit"),
        "{ids:?}"
    );

    // Bob sees his own project and nothing of Alice's.
    posted(&poster, &app_home_opened(TEAM, BOB, "EvH4")).await;
    let bobs = bot
        .slack
        .wait_for("Bob's Home tab", WAIT, |s| s.home_views(BOB).pop())
        .await
        .to_string();
    assert!(
        bobs.contains("*Barn* · owner") && !bobs.contains("Shop"),
        "{bobs}"
    );
    assert!(
        bobs.contains("Nothing is waiting for you.") && !bobs.contains("Replace breaker 7"),
        "{bobs}"
    );

    // The Messages tab publishes nothing.
    let mut messages_tab = app_home_opened(TEAM, "U0CAROL", "EvH5");
    messages_tab["event"]["tab"] = json!("messages");
    posted(&poster, &messages_tab).await;

    // A Home button opens the project form (its own test follows it through).
    let a = poster
        .interaction(&home_click(
            TEAM,
            ALICE,
            "sparky_home_project_new",
            "",
            "trig-home",
        ))
        .await;
    assert_eq!(a.status, 200);
    let open = nth_call(&bot, "views.open", 0).await;
    assert_eq!(open.args["trigger_id"], "trig-home");
    assert_eq!(open.args["view"]["callback_id"], "sparky_project");
    assert!(bot.slack.home_views("U0CAROL").is_empty());
}

/// The signature and replay checks every request gets apply to these events too.
#[tokio::test]
async fn assistant_and_home_events_are_signed_like_every_request() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let body = app_home_opened(TEAM, ALICE, "EvSig1").to_string();
    let ts = chrono::Utc::now().timestamp();
    let forged = signature("not-the-secret", ts, body.as_bytes());
    let a = poster
        .raw(
            "/slack/events",
            "application/json",
            &body,
            ts,
            &forged,
            None,
        )
        .await;
    assert_eq!(a.status, 401, "{}", a.body);
    let good = signature(SIGNING_SECRET, ts, body.as_bytes());
    let a = poster
        .raw("/slack/events", "application/json", &body, ts, &good, None)
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let replay = poster
        .raw("/slack/events", "application/json", &body, ts, &good, None)
        .await;
    assert_ne!(replay.status, 200, "a replay was taken: {}", replay.body);
    let started =
        assistant_event(true, TEAM, ALICE, (DM, "1.2"), Some(CHANNEL), "EvSig2").to_string();
    let stale = ts - 3600;
    let sig = signature(SIGNING_SECRET, stale, started.as_bytes());
    let a = poster
        .raw(
            "/slack/events",
            "application/json",
            &started,
            stale,
            &sig,
            None,
        )
        .await;
    assert_eq!(a.status, 401, "{}", a.body);
    // Only the one good request was acted on.
    bot.slack
        .wait_for("the one Home tab", WAIT, |s| {
            (s.home_views(ALICE).len() == 1).then_some(())
        })
        .await;
    bot.settled().await;
    assert_eq!(bot.slack.home_views(ALICE).len(), 1);
    assert!(bot
        .slack
        .calls_of("assistant.threads.setSuggestedPrompts")
        .is_empty());
}

/// Socket Mode carries the same events to the same handlers.
#[tokio::test]
async fn socket_mode_carries_the_assistant_and_the_home_tab() {
    let bot = SlackBot::start(Db::Sqlite, "socket").await;
    furnish_shop(&bot).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (agent, config) = (bot.agent.clone(), bot.config.clone());
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
    let thread = (DM, "1729999800.000100");
    bot.slack.send_envelope(&events_envelope(
        &assistant_event(true, TEAM, ALICE, thread, Some(CHANNEL), "EvSk1"),
        "env-a1",
        0,
    ));
    bot.slack.wait_ack("env-a1", Duration::from_secs(3)).await;
    nth_call(&bot, "assistant.threads.setSuggestedPrompts", 0).await;
    // Slack redelivers it (retry_attempt 1): acknowledged, not handled again.
    bot.slack.send_envelope(&events_envelope(
        &assistant_event(true, TEAM, ALICE, thread, Some(CHANNEL), "EvSk1"),
        "env-a1b",
        1,
    ));
    bot.slack.wait_ack("env-a1b", Duration::from_secs(3)).await;
    bot.llm.push(Reply::Text("Hello.".into()));
    bot.slack.send_envelope(&events_envelope(
        &assistant_message(
            TEAM,
            ALICE,
            thread,
            "1729999801.000100",
            "hi there",
            "EvSk2",
        ),
        "env-a2",
        0,
    ));
    nth_call(&bot, "assistant.threads.setTitle", 0).await;
    // Once: the redelivered start offered nothing twice.
    assert_eq!(
        assistant_sequence(&bot.slack.calls()),
        ["prompts", "status", "answer", "clear", "title"]
    );
    bot.slack.send_envelope(&events_envelope(
        &app_home_opened(TEAM, ALICE, "EvSk3"),
        "env-a3",
        0,
    ));
    let home = bot
        .slack
        .wait_for("the Home tab", WAIT, |s| s.home_views(ALICE).pop())
        .await;
    assert!(home.to_string().contains("*Shop* · owner"));
    bot.slack
        .send_envelope(&support::fake_slack::interactive_envelope(
            &home_click(TEAM, ALICE, "sparky_home_project_edit", "1", "trig-sk"),
            "env-a4",
        ));
    let open = nth_call(&bot, "views.open", 0).await;
    // The Edit button of Alice's project: its form, pre-filled with the project's name.
    assert_eq!(open.args["view"]["callback_id"], "sparky_project");
    assert!(open.args["view"].to_string().contains("*Shop*"));
    let _ = stop.send(());
    runner.await.expect("joined").expect("clean stop");
}

/// A status line is cosmetic: Slack limiting `setStatus` is not waited out, so the answer
/// comes at once and each status is tried once.
#[tokio::test]
async fn a_rate_limited_status_never_holds_up_the_answer() {
    let bot = SlackBot::start(Db::Sqlite, "http").await;
    let poster = bot.serve_http().await;
    let thread = (DM, "1729999900.000100");
    posted(
        &poster,
        &assistant_event(true, TEAM, ALICE, thread, Some(CHANNEL), "EvRl1"),
    )
    .await;
    nth_call(&bot, "assistant.threads.setSuggestedPrompts", 0).await;
    bot.slack.rate_limit("assistant.threads.setStatus", 30, 100);
    bot.llm.push(Reply::Text("Quick answer.".into()));
    let started = std::time::Instant::now();
    posted(
        &poster,
        &assistant_message(TEAM, ALICE, thread, "1729999901.000100", "quick?", "EvRl2"),
    )
    .await;
    nth_call(&bot, "assistant.threads.setTitle", 0).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the answer waited {:?}",
        started.elapsed()
    );
    let statuses = bot.slack.calls_of("assistant.threads.setStatus");
    assert!(!statuses.is_empty() && statuses.iter().all(|c| c.limited));
    let mut said: Vec<&str> = statuses
        .iter()
        .filter_map(|c| c.args["status"].as_str())
        .collect();
    let tried = said.len();
    said.dedup();
    assert_eq!(said.len(), tried, "a status was retried: {said:?}");
}

/// A `view_submission` of the project form that `open` (the `views.open` call) showed:
/// Slack's recorded submission payload with our view's ids and `state` (block id → the
/// element's state: `value`, `selected_option`, `selected_date`, `selected_conversation`, as
/// Slack's view state documents them).
fn project_submission(open: &Call, hash: &str, state: &[(&str, Value)]) -> Value {
    let mut p =
        fixture_json("vercel-chat-replay-slack-slash-commands.json")["viewSubmission"].clone();
    p["team"]["id"] = json!(TEAM);
    p["user"]["id"] = json!(ALICE);
    let view = &open.args["view"];
    p["view"]["callback_id"] = view["callback_id"].clone();
    p["view"]["private_metadata"] = view["private_metadata"].clone();
    p["view"]["blocks"] = view["blocks"].clone();
    p["view"]["id"] = json!("V0PROJECT01");
    p["view"]["hash"] = json!(hash);
    let values: serde_json::Map<String, Value> = state
        .iter()
        .map(|(block, element)| (block.to_string(), json!({"value": element})))
        .collect();
    p["view"]["state"] = json!({"values": values});
    // Every element's state has the shape of the SDK's type for it.
    serde_json::from_value::<slack_morphism::prelude::SlackViewState>(p["view"]["state"].clone())
        .expect("a view state as slack-morphism reads it");
    p
}

fn text_state(v: &str) -> Value {
    json!({"type": "plain_text_input", "value": v})
}

fn block<'a>(view: &'a Value, id: &str) -> &'a Value {
    view["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["block_id"] == id))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn the_project_form_creates_and_sets_a_project_sqlite() {
    project_form(Db::Sqlite).await;
}

#[tokio::test]
async fn the_project_form_creates_and_sets_a_project_postgres() {
    project_form(Db::Postgres).await;
}

async fn project_form(db: Db) {
    use sparky::project::{MemberRole, Workspace};
    let bot = SlackBot::start(db, "http").await;
    let poster = bot.serve_http().await;
    let ours = Workspace::new("slack", TEAM);

    // The Home tab's New project button opens the form; it asks which channel, the one the
    // person is looking at picked by default.
    let a = poster
        .interaction(&home_click(
            TEAM,
            ALICE,
            "sparky_home_project_new",
            "",
            "trig-new",
        ))
        .await;
    assert_eq!(a.status, 200);
    let open = nth_call(&bot, "views.open", 0).await;
    assert_eq!(open.args["trigger_id"], "trig-new");
    let view = &open.args["view"];
    assert_eq!(view["callback_id"], "sparky_project");
    assert_eq!(block(view, "name")["element"]["type"], "plain_text_input");
    assert_eq!(
        block(view, "edition")["element"]["initial_option"]["value"],
        "2023"
    );
    assert_eq!(block(view, "permit_date")["element"]["type"], "datepicker");
    let channel = &block(view, "channel")["element"];
    assert_eq!(channel["type"], "conversations_select");
    assert_eq!(channel["default_to_current_conversation"], true);

    // Invalid fields: the errors come back on them, and nothing is created.
    let bad = project_submission(
        &open,
        "h-bad",
        &[
            ("name", text_state("shop")),
            (
                "edition",
                json!({"type": "static_select", "selected_option": {"text": {"type": "plain_text", "text": "NEC 2020"}, "value": "2020"}}),
            ),
            ("location", text_state("Atlantis")),
            (
                "permit_date",
                json!({"type": "datepicker", "selected_date": null}),
            ),
            (
                "channel",
                json!({"type": "conversations_select", "selected_conversation": null}),
            ),
        ],
    );
    let r = poster.interaction(&bad).await;
    assert_eq!(r.status, 200);
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["response_action"], "errors", "{body}");
    assert!(
        body["errors"]["name"]
            .as_str()
            .unwrap()
            .contains("already exists"),
        "{body}"
    );
    assert!(body["errors"]["location"]
        .as_str()
        .unwrap()
        .contains("'Atlantis' is not a US state"));
    assert_eq!(
        body["errors"]["channel"],
        "Pick the channel the project is for."
    );
    assert!(body["errors"].get("edition").is_none());
    assert_eq!(bot.store.list_projects(&ours).await.unwrap().len(), 1);

    let good_state = [
        ("name", text_state("Garage")),
        (
            "edition",
            json!({"type": "static_select", "selected_option": {"text": {"type": "plain_text", "text": "NEC 2020"}, "value": "2020"}}),
        ),
        ("location", text_state("WA, King County, Seattle")),
        (
            "permit_date",
            json!({"type": "datepicker", "selected_date": "2024-03-01"}),
        ),
        (
            "channel",
            json!({"type": "conversations_select", "selected_conversation": YARD}),
        ),
    ];
    // A submission is a request like any other: unsigned, it is refused and creates nothing.
    let forged = serde_urlencoded::to_string([(
        "payload",
        project_submission(&open, "h-good", &good_state).to_string(),
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
    assert!(bot
        .store
        .project_by_name(&ours, "Garage")
        .await
        .unwrap()
        .is_none());

    // A valid one closes the form; the project is created with its site, Alice its owner,
    // the picked channel bound to it; she is told in that channel and her Home tab lists it.
    let r = poster
        .interaction(&project_submission(&open, "h-good", &good_state))
        .await;
    assert_eq!((r.status, r.body.trim()), (200, ""));
    let told = bot
        .slack
        .wait_for("the note in the channel", WAIT, |s| {
            s.ephemerals().into_iter().find(|e| e["channel"] == YARD)
        })
        .await;
    assert_eq!(told["user"], ALICE);
    assert!(
        told["text"].as_str().unwrap().contains("Created project"),
        "{told}"
    );
    let garage = bot
        .store
        .project_by_name(&ours, "Garage")
        .await
        .unwrap()
        .expect("created");
    assert_eq!(garage.edition, sparky::nec::units::Edition::Nec2020);
    assert_eq!(
        garage.site.location.as_ref().map(|l| l.state.as_str()),
        Some("WA")
    );
    assert_eq!(
        garage.site.permit_date.map(|d| d.to_string()).as_deref(),
        Some("2024-03-01")
    );
    assert_eq!(
        bot.store
            .member_role(garage.id, "slack", ALICE)
            .await
            .unwrap(),
        Some(MemberRole::Owner)
    );
    assert_eq!(
        bot.store
            .channel_project("slack", TEAM, YARD)
            .await
            .unwrap(),
        Some(garage.id)
    );
    bot.slack
        .wait_for("the Home tab again", WAIT, |s| {
            s.home_views(ALICE)
                .into_iter()
                .find(|v| v.to_string().contains("*Garage* · owner"))
        })
        .await;

    // `project show` in that channel shows it.
    let a = poster
        .command(&support::fake_slack::slash_command_form(
            TEAM,
            YARD,
            ALICE,
            "project show",
            "trig-show",
        ))
        .await;
    assert_eq!(a.status, 200);
    bot.slack
        .wait_for("project show", WAIT, |s| {
            s.messages()
                .into_iter()
                .find(|m| m.section_text().contains("Project \"Garage\" (NEC 2020"))
        })
        .await;

    // `/sparky project set` without arguments: the channel project's form, pre-filled.
    let a = poster
        .command(&support::fake_slack::slash_command_form(
            TEAM,
            YARD,
            ALICE,
            "project set",
            "trig-set",
        ))
        .await;
    assert_eq!(a.status, 200);
    assert!(a.body.contains("Opening the project form"), "{}", a.body);
    let open = nth_call(&bot, "views.open", 1).await;
    assert_eq!(open.args["trigger_id"], "trig-set");
    let view = &open.args["view"];
    assert!(block(view, "name").is_null(), "a project keeps its name");
    assert!(view.to_string().contains("*Garage*"));
    assert_eq!(
        block(view, "edition")["element"]["initial_option"]["value"],
        "auto"
    );
    assert_eq!(
        block(view, "location")["element"]["initial_value"],
        "WA, King County, Seattle"
    );
    assert_eq!(
        block(view, "permit_date")["element"]["initial_date"],
        "2024-03-01"
    );
    let r = poster
        .interaction(&project_submission(
            &open,
            "h-set",
            &[
                ("edition", json!({"type": "static_select", "selected_option": {"text": {"type": "plain_text", "text": "NEC 2017"}, "value": "2017"}})),
                ("location", text_state("OR")),
                ("permit_date", json!({"type": "datepicker", "selected_date": null})),
            ],
        ))
        .await;
    assert_eq!((r.status, r.body.trim()), (200, ""));
    bot.slack
        .wait_for("the change told", WAIT, |s| {
            s.ephemerals().into_iter().find(|e| {
                e["channel"] == YARD
                    && e["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("Garage: NEC 2017"))
            })
        })
        .await;
    let site = bot.store.project(garage.id).await.unwrap().unwrap().site;
    assert_eq!(site.edition_override.map(|y| y.year()), Some(2017));
    assert_eq!(site.location.map(|l| l.state).as_deref(), Some("OR"));
    assert_eq!(site.permit_date, None);

    // In a channel whose project Alice does not own, the form is refused privately.
    let a = poster
        .command(&support::fake_slack::slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "project set",
            "trig-set2",
        ))
        .await;
    assert_eq!(a.status, 200);
    bot.slack
        .wait_for("the refusal", WAIT, |s| {
            s.ephemerals().into_iter().find(|e| {
                e["channel"] == CHANNEL
                    && e["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("Only an owner"))
            })
        })
        .await;

    // `/sparky project create` in a channel: the form binds that channel, no channel to pick.
    let a = poster
        .command(&support::fake_slack::slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            "project create",
            "trig-create",
        ))
        .await;
    assert_eq!(a.status, 200);
    let open = nth_call(&bot, "views.open", 2).await;
    let view = &open.args["view"];
    assert!(block(view, "channel").is_null());
    assert!(view.to_string().contains("bound to <#C111>"), "{view}");
    assert_eq!(bot.slack.calls_of("views.open").len(), 3);
}
