//! The Slack parsers, the signature check and the fake Slack, checked against payloads Slack
//! (and others' real traffic) recorded: `tests/fixtures/platforms/slack/`.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use slack_morphism::prelude::*;
use sparky::core::InputAction;
use sparky::platforms::slack::events::{
    job_from_command, job_from_interaction, job_from_push, Gate, Job,
};
use sparky::platforms::slack::signature::{sign, verify, VerifyError};
use sparky::platforms::slack::{SlackApi, ThreadTarget};
use sparky::platforms::surface::SurfaceError;
use support::fake_slack::{fixture, fixture_json, FakeSlack, BOT_TOKEN, BOT_USER};

fn open_gate() -> Gate {
    Gate {
        direct_messages: true,
        ..Gate::default()
    }
}

/// The known-answer vector of Slack's "Verifying requests" page, on the recorded body.
#[test]
fn the_documented_signed_slash_command_verifies() {
    let body = fixture("slash_command.docs-signing-example.form.txt");
    let secret = "8f742231b10e8888abcd99yyyzzz85a5";
    let documented = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    assert_eq!(sign(secret, "1531420618", body.as_bytes()), documented);
    assert_eq!(
        verify(
            secret,
            Some("1531420618"),
            Some(documented),
            body.as_bytes(),
            1531420618 + 60
        ),
        Ok(1531420618)
    );
    // The same request today is stale, a changed body or secret does not verify.
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        verify(
            secret,
            Some("1531420618"),
            Some(documented),
            body.as_bytes(),
            now
        ),
        Err(VerifyError::Stale)
    );
    let tampered = body.replace("text=", "text=rm");
    assert_eq!(
        verify(
            secret,
            Some("1531420618"),
            Some(documented),
            tampered.as_bytes(),
            1531420618
        ),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        verify(
            "other",
            Some("1531420618"),
            Some(documented),
            body.as_bytes(),
            1531420618
        ),
        Err(VerifyError::BadSignature)
    );
    // The form decodes into slack-morphism's command event, as the HTTP endpoint decodes it.
    let cmd: SlackCommandEvent = serde_urlencoded::from_str(&body).expect("slash command form");
    assert_eq!(cmd.team_id.0, "T1DC2JH3J");
    assert_eq!(cmd.command.0, "/webhook-collect");
    let Some(Job::Command(c)) = job_from_command(&cmd, &open_gate()) else {
        panic!("no command job");
    };
    assert_eq!(
        (c.channel.as_str(), c.user.as_str(), c.text.as_str()),
        ("G8PSS9T3V", "U2CERLKJA", "")
    );
}

#[test]
fn socket_mode_envelopes_parse_into_jobs() {
    // app_mention: its authorizations name U222 as the bot, and U222 wrote it: the bot's own.
    let mention: SlackPushEvent = serde_json::from_value(
        fixture_json("socket_mode_events_api_app_mention.json")["payload"].clone(),
    )
    .expect("app_mention");
    let SlackPushEvent::EventCallback(cb) = mention else {
        panic!("not an event callback")
    };
    let bot = sparky::platforms::slack::events::bot_user_from(&cb);
    assert_eq!(bot.as_deref(), Some("U222"));
    assert_eq!(job_from_push(&cb, bot.as_deref(), &open_gate()), None);
    // Seen by another installation (bot U999), it starts a thread on the message itself.
    let Some(Job::Turn {
        input,
        target,
        only_if_session,
    }) = job_from_push(&cb, Some("U999"), &open_gate())
    else {
        panic!("mention ignored")
    };
    assert_eq!(input.key.to_string(), "slack/T111/C111/1610241741.000200");
    assert_eq!(input.user, "U222");
    assert_eq!(input.event_id.as_deref(), Some("Ev111"));
    assert_eq!(target.thread_ts, "1610241741.000200");
    assert_eq!(target.react_to.as_deref(), Some("1610241741.000200"));
    assert!(!only_if_session);

    // A top-level channel message (and its retry) is not for the bot: mentions come as app_mention.
    for name in [
        "socket_mode_events_api_message.json",
        "socket_mode_events_api_message_retry.json",
    ] {
        let ev: SlackPushEvent =
            serde_json::from_value(fixture_json(name)["payload"].clone()).expect(name);
        let SlackPushEvent::EventCallback(cb) = ev else {
            panic!()
        };
        assert_eq!(
            job_from_push(&cb, Some("U999"), &open_gate()),
            None,
            "{name}"
        );
    }
    assert_eq!(
        fixture_json("socket_mode_events_api_message_retry.json")["retry_attempt"],
        1
    );

    // Allow-lists.
    let closed = Gate {
        workspaces: vec!["T999".into()],
        ..open_gate()
    };
    assert_eq!(job_from_push(&cb, Some("U999"), &closed), None);

    // The slash command envelope's payload.
    let cmd: SlackCommandEvent =
        serde_json::from_value(fixture_json("socket_mode_slash_commands.json")["payload"].clone())
            .expect("cmd");
    assert!(
        matches!(job_from_command(&cmd, &open_gate()), Some(Job::Command(c)) if c.trigger_id == "111.222.xxx")
    );
}

#[test]
fn recorded_thread_traffic_and_clicks_parse() {
    let replay = fixture_json("vercel-chat-replay-slack-streaming.json");
    let bot = replay["botUserId"].as_str().map(str::to_string);
    let parse = |v: &Value| -> SlackPushEventCallback {
        match serde_json::from_value::<SlackPushEvent>(v.clone()).expect("push event") {
            SlackPushEvent::EventCallback(cb) => cb,
            other => panic!("{other:?}"),
        }
    };
    // A channel `message` copy of a mention is skipped (the app_mention carries it).
    assert_eq!(
        job_from_push(&parse(&replay["aiMention"]), bot.as_deref(), &open_gate()),
        None
    );
    // The bot's own prompt (bot_id) is ignored.
    assert_eq!(
        job_from_push(
            &parse(&replay["promptMessage"]),
            bot.as_deref(),
            &open_gate()
        ),
        None
    );
    // A reply in a thread continues the thread's session, if there is one.
    let follow = parse(&replay["threadFollowUp"]);
    let Some(Job::Turn {
        input,
        only_if_session,
        ..
    }) = job_from_push(&follow, None, &open_gate())
    else {
        panic!("follow-up ignored")
    };
    assert!(only_if_session);
    assert_eq!(
        input.key.to_string(),
        "slack/T08REALTEAM1/C08REALCHAN1/1775407823.782829"
    );
    assert_eq!(
        input.action,
        InputAction::Message {
            text: "ping?".into(),
            mode: None
        }
    );

    // A click on someone else's button is not ours; on ours it becomes Confirm with the action id.
    let click: SlackInteractionEvent =
        serde_json::from_value(replay["buttonAction"].clone()).expect("block_actions");
    assert_eq!(job_from_interaction(&click, &open_gate()), None);
    let mut ours = replay["buttonAction"].clone();
    ours["actions"][0]["action_id"] = json!("sparky:confirm:act-42");
    let click: SlackInteractionEvent = serde_json::from_value(ours).expect("block_actions");
    let Some(Job::Turn { input, target, .. }) = job_from_interaction(&click, &open_gate()) else {
        panic!("click ignored")
    };
    assert_eq!(
        input.action,
        InputAction::Confirm {
            action_id: Some("act-42".into())
        }
    );
    assert_eq!(input.user, "U08REALUSER1");
    assert_eq!(
        target,
        ThreadTarget {
            channel: "C08REALCHAN1".into(),
            thread_ts: "1775407823.782829".into(),
            react_to: None
        }
    );
    assert!(input
        .event_id
        .as_deref()
        .is_some_and(|e| e.contains("10847034803718.8832297784567.sanitized")));

    // The other recorded click (with response_url) parses the same way.
    let mut other =
        fixture_json("vercel-chat-replay-slack-actions-reactions.json")["action"].clone();
    other["actions"][0]["action_id"] = json!("sparky:cancel:act-7");
    let click: SlackInteractionEvent = serde_json::from_value(other).expect("block_actions");
    assert!(matches!(
        job_from_interaction(&click, &open_gate()),
        Some(Job::Turn { input, .. }) if input.action == InputAction::Cancel { action_id: Some("act-7".into()) }
    ));
}

#[test]
fn url_verification_and_legacy_envelopes() {
    let v: SlackPushEvent =
        serde_json::from_str(&fixture("url_verification.json")).expect("url_verification");
    assert!(
        matches!(v, SlackPushEvent::UrlVerification(u) if u.challenge == "valid_challenge_token")
    );
    // The 2016 envelope lacks event_id: slack-morphism refuses it (the endpoint acknowledges and ignores it).
    assert!(
        serde_json::from_str::<SlackPushEvent>(&fixture("event_callback_reaction_added.json"))
            .is_err()
    );
}

/// slack-morphism's real client against the fake Web API: every call Sparky makes decodes,
/// and a 429 surfaces as RateLimited with Slack's Retry-After.
#[tokio::test]
async fn the_real_client_talks_to_the_fake() {
    sparky::llm::tls::install_default_crypto_provider();
    let slack = FakeSlack::start().await;
    let api = SlackApi::new(&slack.api_url(), BOT_TOKEN);
    assert_eq!(api.bot_user_id().await.expect("auth.test"), BOT_USER);
    let blocks: Vec<SlackBlock> = serde_json::from_value(
        json!([{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]),
    )
    .unwrap();
    let ts = api
        .post("C1", Some("1.0"), "hi", blocks.clone())
        .await
        .expect("post");
    api.update("C1", &ts, "hi again", blocks)
        .await
        .expect("update");
    api.ephemeral("C1", Some("1.0"), "U1", "just you")
        .await
        .expect("ephemeral");
    api.react("C1", &ts, "eyes", true).await.expect("react");
    let m = &slack.thread("C1", "1.0")[0];
    assert_eq!(m.text, "hi again");
    assert_eq!(m.section_text(), "*hi*");
    assert_eq!(m.versions.len(), 2);
    assert_eq!(slack.ephemerals()[0]["user"], "U1");
    assert_eq!(slack.calls()[1].token.as_deref(), Some(BOT_TOKEN));

    // A short wait is sat out and the call repeated; a wait beyond the policy's cap is
    // reported without a second request.
    slack.rate_limit("chat.update", 1, 1);
    api.update("C1", &ts, "x", Vec::new())
        .await
        .expect("repeated after the wait");
    assert_eq!(slack.calls_of("chat.update").len(), 3);
    slack.rate_limit("chat.update", 120, 1);
    let err = api.update("C1", &ts, "y", Vec::new()).await.unwrap_err();
    assert_eq!(err, SurfaceError::RateLimited(Duration::from_secs(120)));
    assert_eq!(slack.calls_of("chat.update").len(), 4);
    let bad = SlackApi::new(&slack.api_url(), "xoxb-wrong");
    assert!(
        matches!(bad.post("C1", None, "x", Vec::new()).await, Err(SurfaceError::Failed(e)) if e.contains("invalid_auth"))
    );
}

fn callback(v: Value) -> SlackPushEventCallback {
    match serde_json::from_value::<SlackPushEvent>(v).expect("an Events API payload") {
        SlackPushEvent::EventCallback(cb) => cb,
        other => panic!("not an event_callback: {other:?}"),
    }
}

/// The documented assistant events parse as they are, and become jobs only where Sparky
/// answers: the thread is in a direct-message channel (the direct-message switch), its context
/// channel counts only when allowed, and never for the bot itself.
#[test]
fn the_documented_assistant_events_become_assistant_jobs() {
    for (name, started) in [
        ("assistant_thread_started.docs.json", true),
        ("assistant_thread_context_changed.docs.json", false),
    ] {
        let cb = callback(fixture_json(name));
        let Some(Job::Assistant {
            key,
            user,
            context_channel,
            started: s,
        }) = job_from_push(&cb, Some(BOT_USER), &open_gate())
        else {
            panic!("{name}: no assistant job");
        };
        assert_eq!(s, started, "{name}");
        assert_eq!(
            (
                key.workspace.as_str(),
                key.channel.as_str(),
                key.thread.as_str()
            ),
            ("T123ABC456", "D123ABC456", "1729999327.187299")
        );
        assert_eq!(user, "U123ABC456");
        assert_eq!(context_channel.as_deref(), Some("C123ABC456"));

        let only_c1 = Gate {
            channels: vec!["C1".into()],
            direct_messages: true,
            ..Gate::default()
        };
        let Some(Job::Assistant {
            context_channel, ..
        }) = job_from_push(&cb, Some(BOT_USER), &only_c1)
        else {
            panic!("{name}: the thread itself is a direct message");
        };
        assert_eq!(context_channel, None, "a channel Sparky does not answer in");
        let no_dms = Gate {
            direct_messages: false,
            ..Gate::default()
        };
        assert_eq!(job_from_push(&cb, Some(BOT_USER), &no_dms), None);
        let other_team = Gate {
            workspaces: vec!["T999".into()],
            direct_messages: true,
            ..Gate::default()
        };
        assert_eq!(job_from_push(&cb, Some(BOT_USER), &other_team), None);
        assert_eq!(job_from_push(&cb, Some("U123ABC456"), &open_gate()), None);
    }
}

/// The documented `app_home_opened` (with its view) parses into slack-morphism's event and
/// asks for the Home tab only when the Home tab was opened.
#[test]
fn the_documented_app_home_opened_asks_for_the_home_tab() {
    let mut payload = fixture_json("assistant_thread_started.docs.json");
    payload["event"] = fixture_json("app_home_opened.docs.json");
    let cb = callback(payload.clone());
    assert!(matches!(cb.event, SlackEventCallbackBody::AppHomeOpened(_)));
    assert_eq!(
        job_from_push(&cb, Some(BOT_USER), &open_gate()),
        Some(Job::Home {
            team: "T123ABC456".into(),
            user: "U123ABC456".into()
        })
    );
    payload["event"]["tab"] = json!("messages");
    assert_eq!(
        job_from_push(&callback(payload), Some(BOT_USER), &open_gate()),
        None
    );
    let elsewhere = Gate {
        workspaces: vec!["T999".into()],
        ..open_gate()
    };
    assert_eq!(job_from_push(&cb, Some(BOT_USER), &elsewhere), None);
}

/// Slack's documented answer to `views.publish` decodes into slack-morphism's response.
#[test]
fn the_documented_views_publish_answer_decodes() {
    let r: SlackApiViewsPublishResponse =
        serde_json::from_value(fixture_json("views.publish.response.docs.json")).expect("decodes");
    assert!(matches!(r.view.view, SlackView::Home(_)));
}

/// The app manifest in the README asks for what the assistant surface and the Home tab need:
/// the scope, the events (also in the HTTP variant's list) and both features.
#[test]
fn the_readme_manifest_enables_the_assistant_and_the_home_tab() {
    let readme = include_str!("../../README.md");
    let start = readme.find("display_information:").expect("the manifest");
    let manifest = &readme[start..start + readme[start..].find("```").expect("its end")];
    let listed = |name: &str| {
        manifest.lines().any(|l| {
            l.trim()
                .strip_prefix("- ")
                .is_some_and(|i| i.split_whitespace().next() == Some(name))
        })
    };
    for item in [
        "assistant:write",
        "chat:write",
        "im:history",
        "app_home_opened",
        "assistant_thread_started",
        "assistant_thread_context_changed",
        "message.im",
    ] {
        assert!(listed(item), "the manifest misses {item}");
    }
    for line in [
        "assistant_view:",
        "home_tab_enabled: true",
        "messages_tab_enabled: true",
    ] {
        assert!(manifest.contains(line), "the manifest misses {line}");
    }
    let http = readme
        .split("bot_events: [")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .expect("the HTTP variant's events");
    for event in [
        "app_home_opened",
        "assistant_thread_started",
        "assistant_thread_context_changed",
        "message.im",
    ] {
        assert!(http.contains(event), "the HTTP variant misses {event}");
    }
}
