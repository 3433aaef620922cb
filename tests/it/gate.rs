//! The confirmation gate applies exactly the plan a person saw: a plan made stale by a change
//! that touches it is refused (nothing applied, the model is told and proposes again);
//! unrelated changes do not block; several calls apply all or nothing; failed calls of a
//! turn are named on the card. Real SQLite and Postgres, the fake model over HTTP.

use crate::support;
use crate::tools_fixture;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use sparky::config::Config;
use sparky::core::session::SessionKey;
use sparky::core::{Agent, CollectSink, Effect, Input, InputAction, Outcome};
use sparky::project::{ProjectData, Workspace};
use sparky::store::{AuditKind, PendingState, Store};
use support::bot::{fresh_postgres_url, Db};
use support::fake_llm::{Dialect, FakeLlm, Reply};

struct Harness {
    agent: Agent,
    store: Arc<dyn Store>,
    project: i64,
    _dir: tempfile::TempDir,
}

async fn harness(fake: &FakeLlm, db: Db) -> Harness {
    sparky::llm::tls::install_default_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = fake.env().into_iter().collect();
    env.insert("SPARKY_LLM__MAX_RETRIES".into(), "0".into());
    match db {
        Db::Sqlite => {
            env.insert(
                "SPARKY_DATABASE__SQLITE_PATH".into(),
                dir.path().join("t.db").display().to_string(),
            );
        }
        Db::Postgres => {
            env.insert("DATABASE_URL".into(), fresh_postgres_url().await);
        }
    }
    let config = Config::load(None, &env).unwrap();
    let store = sparky::app::connect_store(&config).await.unwrap();
    let agent = Agent::new(
        store.clone(),
        sparky::llm::resilient::build_provider(&config),
        Arc::new(sparky::tools::default_registry(1000)),
        config.agent.clone(),
        &config.limits,
    );
    let project = tools_fixture::seed_in(&store, &Workspace::new("test", "w"), "Shop").await;
    store.bind_channel("test", "w", "c", project).await.unwrap();
    Harness {
        agent,
        store,
        project,
        _dir: dir,
    }
}

fn key(thread: &str) -> SessionKey {
    SessionKey::new("test", "w", "c", thread)
}

fn say(thread: &str, text: &str) -> Input {
    Input {
        key: key(thread),
        user: "alice".into(),
        event_id: None,
        action: InputAction::Message {
            text: text.into(),
            mode: None,
        },
    }
}

fn confirm(thread: &str, action_id: &str) -> Input {
    Input {
        key: key(thread),
        user: "alice".into(),
        event_id: None,
        action: InputAction::Confirm {
            action_id: Some(action_id.into()),
        },
    }
}

async fn run(h: &Harness, input: Input) -> Vec<Effect> {
    let sink = CollectSink::default();
    h.agent.handle(input, &sink).await.unwrap();
    sink.take()
}

/// The card of `effects`: action id, item summaries, and the calls it names as failed.
fn card(effects: &[Effect]) -> (String, Vec<String>, Vec<String>) {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation {
                action_id,
                items,
                rejected,
                ..
            } => Some((
                action_id.clone(),
                items.iter().map(|i| i.summary.clone()).collect(),
                rejected.clone(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no confirmation in {effects:#?}"))
}

fn resolved(effects: &[Effect]) -> (Outcome, Vec<String>) {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Resolved {
                outcome, details, ..
            } if *outcome != Outcome::AlreadyResolved => Some((*outcome, details.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("nothing resolved in {effects:#?}"))
}

fn circuits_named(p: &ProjectData, words: &str) -> Vec<(String, i32)> {
    p.circuits
        .iter()
        .filter(|c| c.spec.description.contains(words))
        .map(|c| (c.spec.description.clone(), c.spec.number))
        .collect()
}

/// "Add circuit LP-1 #11 (...)" -> 11.
fn number_in(summary: &str) -> i32 {
    let after = summary
        .split('#')
        .nth(1)
        .unwrap_or_else(|| panic!("{summary}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"))
}

async fn two_threads_confirm_the_same_defaulted_circuit(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    let add = json!({"panel": "LP-1", "description": "Freezer", "load_va": 800});
    fake.push(Reply::ToolCalls(vec![("add_circuit".into(), add.clone())]));
    fake.push(Reply::ToolCalls(vec![("add_circuit".into(), add.clone())]));
    let (first, first_items, _) = card(&run(&h, say("t1", "add a freezer circuit to LP-1")).await);
    let (second, second_items, _) =
        card(&run(&h, say("t2", "add a freezer circuit to LP-1")).await);
    // Both threads planned against the same project: both show the same number.
    assert_eq!(first_items, second_items);
    let n = number_in(&first_items[0]);
    let version = h.store.project_version(h.project).await.unwrap();

    fake.push(Reply::Text("Added the freezer circuit.".into()));
    let effects = run(&h, confirm("t1", &first)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed, "{effects:#?}");
    let after = h.store.load_project(h.project).await.unwrap();
    assert_eq!(
        circuits_named(&after, "Freezer"),
        [("Freezer".to_string(), n)]
    );
    assert_eq!(
        h.store.project_version(h.project).await.unwrap(),
        version + 1
    );

    // The second card said #n, which is taken now: refused, nothing applied, and the model
    // (told what changed) proposes again against the project as it is.
    fake.push(Reply::ToolCalls(vec![("add_circuit".into(), add.clone())]));
    let effects = run(&h, confirm("t2", &second)).await;
    let (outcome, details) = resolved(&effects);
    assert_eq!(outcome, Outcome::Outdated, "{effects:#?}");
    assert!(
        details
            .iter()
            .any(|d| d.contains(&format!("slot {n} of LP-1 is taken"))),
        "{details:?}"
    );
    let now = h.store.load_project(h.project).await.unwrap();
    assert_eq!(now, after, "an outdated plan changes nothing");
    assert_eq!(
        h.store.project_version(h.project).await.unwrap(),
        version + 1
    );
    let last = fake.requests().last().unwrap().to_string();
    assert!(
        last.contains("not_applied") && last.contains("is taken"),
        "the model is told: {last}"
    );
    let (again, again_items, _) = card(&effects);
    assert_ne!(again, second);
    assert_ne!(
        number_in(&again_items[0]),
        n,
        "the re-proposal shows the new number"
    );
    let stale = h.store.pending(&second).await.unwrap().unwrap();
    assert_eq!(stale.state, PendingState::Outdated);
    assert_eq!(stale.resolved_by.as_deref(), Some("alice"));

    // The audit of the refused confirmation says nothing was applied.
    let session = h
        .store
        .open_session(&key("t2"), Default::default(), None)
        .await
        .unwrap();
    let audit = h.store.audit_for_session(session.id).await.unwrap();
    let of_second: Vec<_> = audit
        .iter()
        .filter(|a| a.entry.action_id.as_deref() == Some(second.as_str()))
        .collect();
    assert!(of_second
        .iter()
        .any(|a| a.entry.kind == AuditKind::Confirmed && a.entry.result["applied"] == false));
    assert!(of_second
        .iter()
        .filter(|a| a.entry.kind == AuditKind::Execution)
        .all(|a| a.entry.is_error));

    // A second click on the first card finds it resolved and applies nothing more.
    let effects = run(&h, confirm("t1", &first)).await;
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::Resolved {
            outcome: Outcome::AlreadyResolved,
            ..
        }
    )));
    assert_eq!(h.store.load_project(h.project).await.unwrap(), after);
}

#[tokio::test]
async fn two_threads_confirm_the_same_defaulted_circuit_sqlite() {
    two_threads_confirm_the_same_defaulted_circuit(Db::Sqlite).await;
}

#[tokio::test]
async fn two_threads_confirm_the_same_defaulted_circuit_postgres() {
    two_threads_confirm_the_same_defaulted_circuit(Db::Postgres).await;
}

async fn remove_by_description_is_refused_once_the_circuit_changed(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    let remove = json!({"find": "EV charger"});
    fake.push(Reply::ToolCalls(vec![(
        "remove_circuit".into(),
        remove.clone(),
    )]));
    let (action, items, _) = card(&run(&h, say("t1", "remove the EV charger circuit")).await);
    assert!(items[0].contains("EV charger"), "{items:?}");

    // Someone edits that circuit before the click.
    let p = h.store.load_project(h.project).await.unwrap();
    let ev = p
        .circuits
        .iter()
        .find(|c| c.spec.description.contains("EV charger"))
        .unwrap()
        .clone();
    let mut edited = ev.spec.clone();
    edited.load_va = sparky::nec::units::VoltAmperes(9600.0);
    h.store.update_circuit(ev.id, &edited).await.unwrap();
    let before = h.store.load_project(h.project).await.unwrap();

    fake.push(Reply::Text(
        "The circuit changed; I did not remove it.".into(),
    ));
    let effects = run(&h, confirm("t1", &action)).await;
    let (outcome, details) = resolved(&effects);
    assert_eq!(outcome, Outcome::Outdated);
    assert!(
        details
            .iter()
            .any(|d| d.contains("was changed since this was proposed") && d.contains("load")),
        "{details:?}"
    );
    assert_eq!(
        h.store.load_project(h.project).await.unwrap(),
        before,
        "nothing removed"
    );

    // Proposed again; a change elsewhere in the project (another panel) does not block it.
    fake.push(Reply::ToolCalls(vec![("remove_circuit".into(), remove)]));
    let (action, _, _) = card(&run(&h, say("t1", "remove it anyway")).await);
    let lp2 = before.panel_by_name("LP-2").unwrap().id;
    h.store
        .add_circuit(
            lp2,
            &tools_fixture::circuit(5, 1, "Gate opener", 300.0, 15.0, Some("14"), None),
        )
        .await
        .unwrap();
    fake.push(Reply::Text("Removed.".into()));
    let effects = run(&h, confirm("t1", &action)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed, "{effects:#?}");
    let after = h.store.load_project(h.project).await.unwrap();
    assert!(circuits_named(&after, "EV charger").is_empty());
    assert_eq!(circuits_named(&after, "Gate opener").len(), 1);
}

#[tokio::test]
async fn remove_by_description_is_refused_once_the_circuit_changed_sqlite() {
    remove_by_description_is_refused_once_the_circuit_changed(Db::Sqlite).await;
}

#[tokio::test]
async fn remove_by_description_is_refused_once_the_circuit_changed_postgres() {
    remove_by_description_is_refused_once_the_circuit_changed(Db::Postgres).await;
}

async fn several_calls_plan_against_each_other_and_apply_all_or_nothing(db: Db) {
    let fake = FakeLlm::start(Dialect::Gemini).await;
    let h = harness(&fake, db).await;
    let a = json!({"panel": "LP-1", "description": "Sump pump", "load_va": 900});
    let b = json!({"panel": "LP-1", "description": "Attic fan", "load_va": 400});
    fake.push(Reply::ToolCalls(vec![
        ("add_circuit".into(), a.clone()),
        ("add_circuit".into(), b.clone()),
    ]));
    let (action, items, _) = card(&run(&h, say("t1", "add a sump pump and an attic fan")).await);
    let (na, nb) = (number_in(&items[0]), number_in(&items[1]));
    assert_ne!(
        na, nb,
        "the second call is planned with the first in place: {items:?}"
    );

    // The second number is taken meanwhile: neither is applied.
    let before = h.store.load_project(h.project).await.unwrap();
    let lp1 = before.panel_by_name("LP-1").unwrap().id;
    h.store
        .add_circuit(
            lp1,
            &tools_fixture::circuit(nb, 1, "Doorbell", 50.0, 15.0, Some("14"), None),
        )
        .await
        .unwrap();
    fake.push(Reply::Text("Nothing was added.".into()));
    let effects = run(&h, confirm("t1", &action)).await;
    assert_eq!(resolved(&effects).0, Outcome::Outdated);
    let after = h.store.load_project(h.project).await.unwrap();
    assert!(circuits_named(&after, "Sump pump").is_empty());
    assert!(circuits_named(&after, "Attic fan").is_empty());
}

#[tokio::test]
async fn several_calls_plan_against_each_other_and_apply_all_or_nothing_sqlite() {
    several_calls_plan_against_each_other_and_apply_all_or_nothing(Db::Sqlite).await;
}

#[tokio::test]
async fn several_calls_plan_against_each_other_and_apply_all_or_nothing_postgres() {
    several_calls_plan_against_each_other_and_apply_all_or_nothing(Db::Postgres).await;
}

async fn a_failed_write_call_is_shown_to_the_person_and_the_model(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![
        (
            "add_circuit".into(),
            json!({"panel": "LP-1", "description": "Freezer", "load_va": 800}),
        ),
        (
            "add_circuit".into(),
            json!({"panel": "LP-9", "description": "Welder", "load_va": 7000}),
        ),
    ]));
    let (action, items, rejected) = card(&run(&h, say("t1", "add a freezer and a welder")).await);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(
        rejected[0].contains("add_circuit") && rejected[0].contains("LP-9"),
        "{rejected:?}"
    );
    fake.push(Reply::Text(
        "The freezer is in; LP-9 does not exist.".into(),
    ));
    let effects = run(&h, confirm("t1", &action)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed);
    // The model got that call's own error as its result.
    let last: Value = fake.requests().last().unwrap().clone();
    let tool_messages: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 2, "{last}");
    assert!(tool_messages.iter().any(|m| m["content"]
        .as_str()
        .unwrap()
        .contains("no panel named 'LP-9'")));

    // A turn whose only write call fails shows the failure to the person too.
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        json!({"panel": "LP-9", "description": "Welder", "load_va": 7000}),
    )]));
    fake.push(Reply::Text("LP-9 does not exist.".into()));
    let effects = run(&h, say("t1", "then add the welder")).await;
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Error { message }
            if message.contains("could not be prepared") && message.contains("LP-9"))),
        "{effects:#?}"
    );
    assert!(!effects
        .iter()
        .any(|e| matches!(e, Effect::Confirmation { .. })));
}

#[tokio::test]
async fn a_failed_write_call_is_shown_to_the_person_and_the_model_sqlite() {
    a_failed_write_call_is_shown_to_the_person_and_the_model(Db::Sqlite).await;
}

#[tokio::test]
async fn a_failed_write_call_is_shown_to_the_person_and_the_model_postgres() {
    a_failed_write_call_is_shown_to_the_person_and_the_model(Db::Postgres).await;
}

fn as_user(mut input: Input, user: &str) -> Input {
    input.user = user.into();
    input
}

/// What a Confirmation effect says about who may confirm.
fn confirmers(effects: &[Effect]) -> String {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation { confirmers, .. } => Some(confirmers.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no confirmation in {effects:#?}"))
}

fn refused(effects: &[Effect]) -> bool {
    effects.iter().any(|e| {
        matches!(
            e,
            Effect::Refusal {
                action_id: Some(_),
                ..
            }
        )
    })
}

/// In a project people hold roles in, a write needs an editor or owner: a viewer's (or an
/// outsider's) request gets a card only an editor can confirm, and cannot confirm it
/// themselves; an editor confirms their own.
async fn roles_govern_writes(db: Db) {
    use sparky::project::MemberRole;
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    for (user, role) in [
        ("alice", MemberRole::Owner),
        ("erin", MemberRole::Editor),
        ("vic", MemberRole::Viewer),
    ] {
        h.store
            .set_member_role(h.project, "test", user, role)
            .await
            .unwrap();
    }
    let add = |d: &str| json!({"panel": "LP-1", "description": d, "load_va": 800});
    for (thread, requester) in [("v1", "vic"), ("o1", "oscar")] {
        fake.push(Reply::ToolCalls(vec![(
            "add_circuit".into(),
            add(&format!("Freezer {requester}")),
        )]));
        let effects = run(
            &h,
            as_user(say(thread, "add a freezer circuit to LP-1"), requester),
        )
        .await;
        assert_eq!(confirmers(&effects), "project editors", "{requester}");
        let (action, _, _) = card(&effects);
        let effects = run(&h, as_user(confirm(thread, &action), requester)).await;
        assert!(
            refused(&effects),
            "{requester} cannot confirm: {effects:#?}"
        );
        let pending = h.store.pending(&action).await.unwrap().unwrap();
        assert_eq!(pending.state, PendingState::Pending, "{requester}");
        fake.push(Reply::Text("Added.".into()));
        let effects = run(&h, as_user(confirm(thread, &action), "erin")).await;
        assert_eq!(resolved(&effects).0, Outcome::Executed, "{effects:#?}");
    }
    let project = h.store.load_project(h.project).await.unwrap();
    assert_eq!(circuits_named(&project, "Freezer vic").len(), 1);
    assert_eq!(circuits_named(&project, "Freezer oscar").len(), 1);

    // An editor's own request: only they confirm it, as before.
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        add("Freezer erin"),
    )]));
    let effects = run(
        &h,
        as_user(say("e1", "add a freezer circuit to LP-1"), "erin"),
    )
    .await;
    assert!(confirmers(&effects).contains("erin"), "{effects:#?}");
    let (action, _, _) = card(&effects);
    let effects = run(&h, as_user(confirm("e1", &action), "alice")).await;
    assert!(refused(&effects), "{effects:#?}");
    // Her role is taken away before she clicks: the card no longer applies for her.
    h.store
        .set_member_role(h.project, "test", "erin", MemberRole::Viewer)
        .await
        .unwrap();
    let effects = run(&h, as_user(confirm("e1", &action), "erin")).await;
    assert!(refused(&effects), "{effects:#?}");
    let project = h.store.load_project(h.project).await.unwrap();
    assert!(circuits_named(&project, "Freezer erin").is_empty());
}

#[tokio::test]
async fn roles_govern_writes_sqlite() {
    roles_govern_writes(Db::Sqlite).await;
}

#[tokio::test]
async fn roles_govern_writes_postgres() {
    roles_govern_writes(Db::Postgres).await;
}

/// A click naming a card from another thread (or another workspace) resolves nothing.
async fn a_click_from_another_thread_is_refused(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        json!({"panel": "LP-1", "description": "Kiln", "load_va": 800}),
    )]));
    let (action, _, _) = card(&run(&h, say("k1", "add a kiln circuit to LP-1")).await);
    let mut elsewhere = confirm("k2", &action);
    let effects = run(&h, elsewhere.clone()).await;
    assert!(refused(&effects), "{effects:#?}");
    elsewhere.key = SessionKey::new("test", "other-workspace", "c", "k1");
    let effects = run(&h, elsewhere).await;
    assert!(refused(&effects), "{effects:#?}");
    let pending = h.store.pending(&action).await.unwrap().unwrap();
    assert_eq!(pending.state, PendingState::Pending);
    // From its own thread it applies.
    fake.push(Reply::Text("Added.".into()));
    let effects = run(&h, confirm("k1", &action)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed, "{effects:#?}");
}

#[tokio::test]
async fn a_click_from_another_thread_is_refused_sqlite() {
    a_click_from_another_thread_is_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn a_click_from_another_thread_is_refused_postgres() {
    a_click_from_another_thread_is_refused(Db::Postgres).await;
}

/// A turn with more write calls than a turn may make: the card holds what fits and names the
/// rest as left out, with their count.
async fn calls_over_the_turn_limit_are_named_on_the_card(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    let calls: Vec<(String, Value)> = (0..30)
        .map(|i| {
            (
                "add_circuit".to_string(),
                json!({"panel": "LP-1", "description": format!("Heater {i}"), "load_va": 500}),
            )
        })
        .collect();
    fake.push(Reply::ToolCalls(calls));
    let effects = run(&h, say("many", "add thirty heater circuits to LP-1")).await;
    let (_, items, rejected) = card(&effects);
    assert_eq!(items.len(), 24, "{items:?}");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(
        rejected[0].contains("left out: the limit of 24 tool calls per turn")
            && rejected[0].ends_with("(6 calls)"),
        "{rejected:?}"
    );
}

#[tokio::test]
async fn calls_over_the_turn_limit_are_named_on_the_card_sqlite() {
    calls_over_the_turn_limit_are_named_on_the_card(Db::Sqlite).await;
}

#[tokio::test]
async fn calls_over_the_turn_limit_are_named_on_the_card_postgres() {
    calls_over_the_turn_limit_are_named_on_the_card(Db::Postgres).await;
}

/// A card's consequence lines (spare spaces after, the panel's load) were worked out from its
/// panel's circuits: once another circuit lands on the same panel, Confirm finds the card
/// outdated even though its slot is still free, applies nothing, and the change is proposed
/// again with numbers that hold.
async fn a_card_whose_panel_changed_since_is_outdated(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        json!({"panel": "LP-1", "description": "Kiln", "load_va": 800}),
    )]));
    let effects = run(&h, say("k1", "add a kiln circuit to LP-1")).await;
    let (action, items, _) = card(&effects);
    let n = number_in(&items[0]);
    let shown = effects
        .iter()
        .find_map(|e| match e {
            Effect::Confirmation { items, .. } => Some(items[0].details.join("\n")),
            _ => None,
        })
        .unwrap();
    assert!(shown.contains("Spare spaces after"), "{shown}");

    // Someone adds another circuit to LP-1, in a slot the card does not use.
    let p = h.store.load_project(h.project).await.unwrap();
    let lp1 = p.panel_by_name("LP-1").unwrap();
    // The first free number once the card's own circuit is counted in.
    let planned = tools_fixture::circuit(n, 1, "Kiln", 800.0, 15.0, None, None);
    let kiln = sparky::project::Circuit {
        id: -1,
        panel_id: lp1.id,
        spec: planned,
    };
    let mut with_card = p.circuits_of(lp1.id);
    with_card.push(&kiln);
    let free = sparky::project::analysis::next_free_number(&lp1.spec, &with_card, 1).unwrap();
    h.store
        .add_circuit(
            lp1.id,
            &tools_fixture::circuit(free, 1, "Gate opener", 300.0, 15.0, Some("14"), None),
        )
        .await
        .unwrap();
    let before = h.store.load_project(h.project).await.unwrap();

    fake.push(Reply::Text("LP-1 changed; I did not add it.".into()));
    let effects = run(&h, confirm("k1", &action)).await;
    let (outcome, details) = resolved(&effects);
    assert_eq!(outcome, Outcome::Outdated, "{effects:#?}");
    assert!(
        details.iter().any(
            |d| d.contains("panel LP-1's circuits changed since this was proposed")
                && d.contains("spare spaces")
        ),
        "{details:?}"
    );
    assert_eq!(
        h.store.load_project(h.project).await.unwrap(),
        before,
        "nothing added"
    );
    // A change to another panel leaves a card alone: proposed again, it applies.
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        json!({"panel": "LP-1", "description": "Kiln", "load_va": 800}),
    )]));
    let (again, _, _) = card(&run(&h, say("k1", "add it again")).await);
    let lp2 = before.panel_by_name("LP-2").unwrap();
    let on_lp2 = before.circuits_of(lp2.id);
    let free = sparky::project::analysis::next_free_number(&lp2.spec, &on_lp2, 1).unwrap();
    h.store
        .add_circuit(
            lp2.id,
            &tools_fixture::circuit(free, 1, "Sign", 300.0, 15.0, Some("14"), None),
        )
        .await
        .unwrap();
    fake.push(Reply::Text("Added.".into()));
    let effects = run(&h, confirm("k1", &again)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed, "{effects:#?}");
}

#[tokio::test]
async fn a_card_whose_panel_changed_since_is_outdated_sqlite() {
    a_card_whose_panel_changed_since_is_outdated(Db::Sqlite).await;
}

#[tokio::test]
async fn a_card_whose_panel_changed_since_is_outdated_postgres() {
    a_card_whose_panel_changed_since_is_outdated(Db::Postgres).await;
}

/// The Edit form of a card: invalid values are refused field by field and leave the proposal
/// as it was; valid ones supersede it with a corrected card (never a confirmation), planned
/// without the model under the same call id, so the model later reads one result for it.
async fn an_edit_supersedes_the_card_and_confirm_applies_the_edited_values(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let h = harness(&fake, db).await;
    fake.push(Reply::ToolCalls(vec![(
        "add_circuit".into(),
        json!({"panel": "LP-1", "number": 11, "poles": 1, "description": "Freezer", "load_va": 800, "breaker": 15, "conductor_size": "14", "length": 40}),
    )]));
    let (first, _, _) = card(&run(&h, say("t1", "add a freezer circuit on lp-1")).await);
    let form = h.agent.edit_form(&first).await.unwrap().expect("a form");
    let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert!(names.len() <= 5 && names.contains(&"breaker"), "{names:?}");
    let breaker = form.fields.iter().find(|f| f.name == "breaker").unwrap();
    assert_eq!(breaker.value, "15");

    let edit = |values: &[(&str, &str)]| Input {
        key: key("t1"),
        user: "alice".into(),
        event_id: None,
        action: InputAction::Edit {
            action_id: first.clone(),
            values: values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
    };
    // A bad value: named on its field; the card stays.
    let bad: BTreeMap<String, String> = [("breaker".to_string(), "twenty".to_string())].into();
    let errors = h.agent.check_edit(&first, &bad).await.unwrap().unwrap_err();
    assert_eq!(errors[0].field, "breaker");
    let effects = run(&h, edit(&[("breaker", "twenty")])).await;
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Error { message } if message.contains("Breaker"))),
        "{effects:#?}"
    );
    assert_eq!(
        h.store.pending(&first).await.unwrap().unwrap().state,
        PendingState::Pending
    );

    // Valid values: the card is superseded and a corrected one proposed; nothing applied yet.
    let requests_before = fake.requests().len();
    let effects = run(&h, edit(&[("breaker", "20"), ("conductor_size", "12")])).await;
    assert_eq!(resolved(&effects).0, Outcome::Superseded);
    let (second, items, _) = card(&effects);
    assert_ne!(second, first);
    assert!(items[0].contains("20"), "{items:?}");
    assert_eq!(fake.requests().len(), requests_before, "no model call");
    let stored = h.store.pending(&second).await.unwrap().unwrap();
    assert_eq!(stored.items[0].args["breaker"], 20);
    assert_eq!(stored.items[0].args["conductor_size"], "12");
    let old = h.store.pending(&first).await.unwrap().unwrap();
    assert_eq!(old.calls[0].id, stored.calls[0].id, "the same call");
    let p = h.store.load_project(h.project).await.unwrap();
    assert!(!p.circuits.iter().any(|c| c.spec.description == "Freezer"));

    // Confirmed: the edited values are applied, and the model reads one result for its call.
    fake.push(Reply::Text("Added the freezer circuit.".into()));
    let effects = run(&h, confirm("t1", &second)).await;
    assert_eq!(resolved(&effects).0, Outcome::Executed);
    let p = h.store.load_project(h.project).await.unwrap();
    let freezer = p
        .circuits
        .iter()
        .find(|c| c.spec.description == "Freezer")
        .expect("added");
    assert_eq!(freezer.spec.breaker.0, 20.0);
    let last = fake.requests().last().cloned().unwrap();
    let results = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && m["tool_call_id"] == json!(stored.calls[0].id))
        .count();
    assert_eq!(results, 1, "{last}");
    let audit: Vec<AuditKind> = h
        .store
        .audit_for_session(stored.session_id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.entry.kind)
        .collect();
    assert!(audit.contains(&AuditKind::Corrected), "{audit:?}");
}

#[tokio::test]
async fn an_edit_supersedes_the_card_and_confirm_applies_the_edited_values_sqlite() {
    an_edit_supersedes_the_card_and_confirm_applies_the_edited_values(Db::Sqlite).await;
}

#[tokio::test]
async fn an_edit_supersedes_the_card_and_confirm_applies_the_edited_values_postgres() {
    an_edit_supersedes_the_card_and_confirm_applies_the_edited_values(Db::Postgres).await;
}
