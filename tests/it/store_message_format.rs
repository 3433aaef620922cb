//! Store: the stored message format (docs/message-format.md). Rows written before the format
//! had a version (v1) read through today's path; new rows are written as v2; both read
//! together, on SQLite and Postgres.

use crate::support::db;

use db::{key, new_pending, TestDb};
use serde_json::{json, Value};
use sparky::core::session::Mode;
use sparky::domain::message::{MessageRecord, ToolCallRecord, ToolResultRecord};
use sparky::llm::{ChatMessage, ToolCall, ToolResult};

/// History rows exactly as versions before the format had a number wrote them (the serde
/// shape of the model's message type then): role, content (JSON text), author, tokens.
fn v1_rows() -> Vec<(&'static str, &'static str, Option<&'static str>, i64)> {
    vec![
        (
            "user",
            r#"{"role":"user","text":"what breaker for this panel?\n[photo: panel.jpg, 1.2 MB]"}"#,
            Some("U1"),
            1017,
        ),
        (
            "assistant",
            r#"{"role":"assistant","text":"Checking the panel.","thought_signature":"text-sig==","tool_calls":[{"arguments":"{\"panel\":\"LP-1\"}","id":"call_1","name":"describe_panel","thought_signature":"sig1=="},{"arguments":"{\"panel\":\"LP-1\",\"number\":12","id":"call_2","name":"add_circuit"}]}"#,
            None,
            40,
        ),
        (
            "tool",
            r#"{"role":"tool","results":[{"call_id":"call_1","content":{"panel":"LP-1","load_va":12345.5,"circuits":[1,2,3]},"is_error":false,"name":"describe_panel"},{"call_id":"call_2","content":{"error":"arguments are not valid JSON"},"is_error":true,"name":"add_circuit"}]}"#,
            None,
            30,
        ),
        (
            "assistant",
            r#"{"role":"assistant","text":"LP-1 carries 12.3 kVA. ✅ «ünïcode»"}"#,
            None,
            12,
        ),
    ]
}

/// What the v1 rows mean.
fn v1_messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::user("what breaker for this panel?\n[photo: panel.jpg, 1.2 MB]"),
        ChatMessage::Assistant {
            text: "Checking the panel.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "describe_panel".into(),
                    arguments: r#"{"panel":"LP-1"}"#.into(),
                    thought_signature: Some("sig1==".into()),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "add_circuit".into(),
                    arguments: r#"{"panel":"LP-1","number":12"#.into(),
                    thought_signature: None,
                },
            ],
            thought_signature: Some("text-sig==".into()),
        },
        ChatMessage::Tool {
            results: vec![
                ToolResult {
                    call_id: "call_1".into(),
                    name: "describe_panel".into(),
                    content: json!({"panel": "LP-1", "load_va": 12345.5, "circuits": [1, 2, 3]})
                        .into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "call_2".into(),
                    name: "add_circuit".into(),
                    content: json!({"error": "arguments are not valid JSON"}).into(),
                    is_error: true,
                },
            ],
        },
        ChatMessage::assistant("LP-1 carries 12.3 kVA. ✅ «ünïcode»"),
    ]
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Inserts a history row with raw SQL, as an older version wrote it.
async fn insert_raw(
    db: &TestDb,
    session_id: i64,
    role: &str,
    content: &str,
    author: Option<&str>,
    tokens: i64,
) {
    let json_type = match db.backend() {
        sparky::store::Backend::Postgres => "::jsonb",
        sparky::store::Backend::Sqlite => "",
    };
    db.execute(&format!(
        "INSERT INTO messages (session_id, role, content, author, event_id, tokens, created_at) \
         SELECT id, {}, {}{json_type}, {}, NULL, {tokens}, created_at FROM sessions WHERE id = {session_id}",
        quote(role),
        quote(content),
        author.map(quote).unwrap_or_else(|| "NULL".into()),
    ))
    .await;
}

async fn v1_rows_read_through_the_store_and_the_window(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("v1"), Mode::General, None)
        .await
        .expect("open");
    for (role, content, author, tokens) in v1_rows() {
        insert_raw(&db, s.id, role, content, author, tokens).await;
    }

    let stored = store.recent_messages(s.id, 0, 10).await.expect("read");
    let want = v1_messages();
    let records: Vec<MessageRecord> = stored.iter().map(|m| m.message.clone()).collect();
    let want_records: Vec<MessageRecord> = want.iter().map(MessageRecord::from).collect();
    assert_eq!(records, want_records);
    assert_eq!(stored[0].author.as_deref(), Some("U1"));
    assert_eq!(
        stored.iter().map(|m| m.tokens).collect::<Vec<_>>(),
        vec![1017, 40, 30, 12]
    );

    // The path every turn reads: the model's window.
    let session = store.session(s.id).await.expect("session").expect("exists");
    let window = sparky::core::window::build(store.as_ref(), &session, 100_000)
        .await
        .expect("window");
    assert_eq!(window.messages, want);
}

async fn new_rows_are_v2_and_read_with_v1_rows(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("mixed"), Mode::General, None)
        .await
        .expect("open");
    let rows = v1_rows();
    let want = v1_messages();
    // v1, v2, v1, v2: old and new rows interleave in one thread after an upgrade.
    for (i, ((role, content, author, tokens), message)) in rows.iter().zip(&want).enumerate() {
        if i % 2 == 0 {
            insert_raw(&db, s.id, role, content, *author, *tokens).await;
        } else {
            store
                .append_message(
                    s.id,
                    &sparky::core::history::new_message(message, author.map(str::to_string), None),
                )
                .await
                .expect("append");
        }
    }
    let contents = db
        .fetch_text(&format!(
            "SELECT CAST(content AS TEXT) FROM messages WHERE session_id = {} ORDER BY id",
            s.id
        ))
        .await;
    let versions: Vec<Option<u64>> = contents
        .iter()
        .map(|c| {
            let v: Value = serde_json::from_str(c).expect("stored JSON");
            v.get("v").and_then(Value::as_u64)
        })
        .collect();
    assert_eq!(versions, vec![None, Some(2), None, Some(2)]);
    // v2 is v1's fields plus the version.
    for (c, (_, v1, _, _)) in contents.iter().zip(&rows) {
        let mut got: Value = serde_json::from_str(c).expect("stored JSON");
        got.as_object_mut().expect("object").remove("v");
        let v1: Value = serde_json::from_str(v1).expect("v1 JSON");
        assert_eq!(got, v1);
    }

    let session = store.session(s.id).await.expect("session").expect("exists");
    let window = sparky::core::window::build(store.as_ref(), &session, 100_000)
        .await
        .expect("window");
    assert_eq!(window.messages, want);

    // The same through the one-statement turn step.
    let step: Vec<_> = want
        .iter()
        .map(|m| sparky::core::history::new_message(m, None, None))
        .collect();
    store
        .append_turn_step(s.id, &step, &[])
        .await
        .expect("step");
    let all = store.recent_messages(s.id, 0, 20).await.expect("read");
    let back: Vec<ChatMessage> = all[4..].iter().map(|m| m.message.clone().into()).collect();
    assert_eq!(back, want);
}

async fn a_newer_format_is_refused_not_misread(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("v3"), Mode::General, None)
        .await
        .expect("open");
    insert_raw(
        &db,
        s.id,
        "user",
        r#"{"v":3,"role":"user","body":"?"}"#,
        None,
        4,
    )
    .await;
    match store.recent_messages(s.id, 0, 10).await {
        Err(e) => assert!(e.to_string().contains("message format v3"), "{e}"),
        Ok(got) => panic!("read a v3 row as {got:?}"),
    }
}

/// A pending action's tool calls and results are stored records too, in the shape v1 wrote.
async fn pending_calls_and_results_keep_their_stored_shape(db: TestDb) {
    let store = db.store();
    let s = store
        .open_session(&key("pending"), Mode::General, None)
        .await
        .expect("open");
    let new = new_pending("a1", s.id);
    store.create_pending(&new).await.expect("create");
    let calls = db
        .fetch_text("SELECT CAST(calls AS TEXT) FROM pending_actions WHERE id = 'a1'")
        .await;
    let results = db
        .fetch_text("SELECT CAST(prior_results AS TEXT) FROM pending_actions WHERE id = 'a1'")
        .await;
    let calls: Value = serde_json::from_str(&calls[0]).expect("calls JSON");
    let results: Value = serde_json::from_str(&results[0]).expect("results JSON");
    assert_eq!(
        calls,
        json!([{"id": "call_1", "name": "add_circuit", "arguments": "{\"panel\":\"LP-1\",\"number\":12}"}])
    );
    assert_eq!(
        results,
        json!([{"call_id": "call_0", "name": "describe_panel", "content": {"panel": "LP-1"}, "is_error": false}])
    );

    // A row written by an older version (thought signature, error result) reads back.
    db.execute(
        "UPDATE pending_actions SET \
         calls = '[{\"id\":\"c9\",\"name\":\"add_panel\",\"arguments\":\"{}\",\"thought_signature\":\"s==\"}]', \
         prior_results = '[{\"call_id\":\"c8\",\"name\":\"describe_panel\",\"content\":{\"error\":\"no panel\"},\"is_error\":true}]' \
         WHERE id = 'a1'",
    )
    .await;
    let p = store.pending("a1").await.expect("read").expect("exists");
    assert_eq!(
        p.calls,
        vec![ToolCallRecord {
            id: "c9".into(),
            name: "add_panel".into(),
            arguments: "{}".into(),
            thought_signature: Some("s==".into()),
        }]
    );
    assert_eq!(
        p.prior_results,
        vec![ToolResultRecord {
            call_id: "c8".into(),
            name: "describe_panel".into(),
            content: json!({"error": "no panel"}).into(),
            is_error: true,
        }]
    );
}

db::both_backends!(
    v1_rows_read_through_the_store_and_the_window,
    new_rows_are_v2_and_read_with_v1_rows,
    a_newer_format_is_refused_not_misread,
    pending_calls_and_results_keep_their_stored_shape,
);
