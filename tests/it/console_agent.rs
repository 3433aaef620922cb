//! The agent core through the console contract (`sparky chat --json`), for both providers,
//! against the fake OpenAI and Gemini servers and a real database.

use crate::support;

use serde_json::{json, Value};
use support::bot::{of_type, one, Bot, Db};
use support::fake_llm::{Dialect, FakeLlm, Reply};

const DIALECTS: [Dialect; 2] = [Dialect::OpenAi, Dialect::Gemini];

fn fridge(watts: f64) -> Reply {
    Reply::ToolCalls(vec![(
        "add_load_item".into(),
        json!({
            "name": "Dometic CFX3 45 fridge",
            "watts": watts,
            "hours_per_day": 24,
            "duty_cycle": 0.35,
            "quantity": 1,
            "notes": "typical compressor draw"
        }),
    )])
}

async fn loads(bot: &Bot, project: &str) -> usize {
    let store = bot.store().await;
    let p = store
        .project_by_name(&sparky::project::Workspace::local(), project)
        .await
        .unwrap()
        .expect("project exists");
    store.load_project(p.id).await.unwrap().loads.len()
}

#[tokio::test]
async fn load_mode_proposes_then_confirm_writes_exactly_one_row() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(fridge(45.0));
        let args = ["--mode", "load", "--project", "van", "--thread", "t1"];
        let out = bot
            .chat("alice", &args, "I have a Dometic CFX3 45 fridge\n")
            .await;
        let c = one(&out, "confirmation");
        assert_eq!(c["items"][0]["tool"], "add_load_item", "{dialect:?}");
        assert_eq!(c["items"][0]["args"]["watts"], 45.0, "{dialect:?}");
        let summary = c["items"][0]["summary"].as_str().unwrap();
        assert!(
            summary.contains("Dometic CFX3 45 fridge")
                && summary.contains("45 W")
                && summary.contains("35%"),
            "{summary}"
        );
        assert_eq!(
            loads(&bot, "van").await,
            0,
            "nothing is written before Confirm ({dialect:?})"
        );

        fake.push(Reply::Text(
            "Added the fridge: about 378 Wh per day.".into(),
        ));
        let out = bot.chat("alice", &args, "/confirm\n").await;
        let r = one(&out, "resolved");
        assert_eq!(r["outcome"], "executed", "{dialect:?}: {out:#?}");
        assert_eq!(
            one(&out, "text")["text"],
            "Added the fridge: about 378 Wh per day."
        );
        assert_eq!(loads(&bot, "van").await, 1, "{dialect:?}");
        // The model's follow-up request carried the tool's result.
        let last = fake.requests().last().cloned().unwrap();
        assert!(
            last.to_string().contains("wh_per_day"),
            "{dialect:?}: {last}"
        );

        // A second confirm finds nothing pending and writes nothing.
        let out = bot.chat("alice", &args, "/confirm\n").await;
        assert!(!of_type(&out, "error").is_empty(), "{out:#?}");
        assert_eq!(loads(&bot, "van").await, 1);
    }
}

#[tokio::test]
async fn cancel_writes_nothing_and_tells_the_model() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(fridge(45.0));
        fake.push(Reply::Text("OK, not added.".into()));
        let args = ["--mode", "load", "--project", "van"];
        let out = bot
            .chat("alice", &args, "I have a Dometic CFX3 45 fridge\n/cancel\n")
            .await;
        assert_eq!(one(&out, "resolved")["outcome"], "cancelled", "{dialect:?}");
        assert_eq!(loads(&bot, "van").await, 0);
        let last = fake.requests().last().cloned().unwrap().to_string();
        assert!(last.contains("cancelled"), "{dialect:?}: {last}");
    }
}

#[tokio::test]
async fn typing_while_pending_supersedes_and_reaches_the_model() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(fridge(45.0));
        fake.push(fridge(100.0));
        let args = ["--mode", "load", "--project", "van"];
        let out = bot
            .chat(
                "alice",
                &args,
                "I have a Dometic CFX3 45 fridge\nActually it's 100 watts\n",
            )
            .await;
        let confirmations = of_type(&out, "confirmation");
        assert_eq!(confirmations.len(), 2, "{dialect:?}: {out:#?}");
        assert_eq!(one(&out, "resolved")["outcome"], "superseded");
        assert_eq!(confirmations[1]["items"][0]["args"]["watts"], 100.0);
        let second = fake.requests()[1].to_string();
        assert!(
            second.contains("Actually it's 100 watts"),
            "{dialect:?}: {second}"
        );
        assert_eq!(
            loads(&bot, "van").await,
            0,
            "a correction is not a confirmation"
        );
    }
}

#[tokio::test]
async fn general_mode_runs_read_only_tools_without_confirmation() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(Reply::ToolCalls(vec![(
            "calculator".into(),
            json!({"expression": "2*12.9*16*150/6530"}),
        )]));
        fake.push(Reply::Text("The drop is about 9.48 V.".into()));
        let out = bot
            .chat("bob", &[], "voltage drop for 16 A over 150 ft of 12 AWG?\n")
            .await;
        assert!(
            of_type(&out, "confirmation").is_empty(),
            "{dialect:?}: {out:#?}"
        );
        assert_eq!(one(&out, "text")["text"], "The drop is about 9.48 V.");
        let second = fake.requests()[1].to_string();
        assert!(
            second.contains("9.48"),
            "the calculator's result went back: {second}"
        );
    }
}

/// Small local models (llama.cpp with Qwen2.5-Coder) answer a tool request with the call as a
/// fenced JSON block in the text: it runs as a call, and the person never sees the JSON. When
/// that JSON is broken (what Qwen2.5-Coder 0.5B wrote for a fault-current question), the call
/// goes back to the model refused as not JSON, and the person reads only the model's next
/// answer.
#[tokio::test]
async fn a_call_written_as_a_fenced_json_block_runs_as_a_call() {
    let cases = [
        (
            "\"2*12.9*16*150/6530\"",
            "The drop is about 9.48 V.",
            "9.48",
        ),
        (
            "45000 / (208 * 1.732) VA",
            "About 124.9 A of full-load current.",
            "not valid JSON",
        ),
    ];
    for (expression, answer, in_result) in cases {
        let fake = FakeLlm::start(Dialect::OpenAi).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(Reply::Text(format!(
            "```json\n{{\n  \"name\": \"calculator\",\n  \"arguments\": {{\"expression\": {expression}}}\n}}\n```"
        )));
        fake.push(Reply::Text(answer.into()));
        let out = bot.chat("bob", &[], "vd 16a 150 ft 12 awg cu\n").await;
        assert_eq!(one(&out, "text")["text"], answer, "{out:#?}");
        let shown = serde_json::to_string(&out).unwrap();
        assert!(!shown.contains("```"), "no JSON shown: {shown}");
        let second = &fake.requests()[1];
        let messages = second["messages"].as_array().unwrap();
        let call = messages
            .iter()
            .find(|m| m["role"] == "assistant")
            .expect("the call went back as the model's turn");
        assert_eq!(call["tool_calls"][0]["function"]["name"], "calculator");
        let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(result["tool_call_id"], call["tool_calls"][0]["id"]);
        assert!(
            result["content"].to_string().contains(in_result),
            "{result}"
        );
    }
}

/// A small model that copies a tool's result out as its answer (fenced or bare JSON) never
/// shows the person JSON: the answer counts as empty and is asked for once more; when the
/// second answer is words, those are shown, and when it is the JSON again (or the JSON cut off
/// at the output limit, as Qwen2.5-Coder 0.5B wrote for light-01), the person reads the tool's
/// figures, one per line.
#[tokio::test]
async fn a_tool_result_copied_out_as_the_answer_is_never_shown_as_json() {
    let echo = "```json\n{\"expression\": \"2*3\", \"value\": 6.0}\n```";
    for (second, shown) in [
        ("It is 6.", "It is 6."),
        (
            "{\"expression\": \"2*3\", \"value\": 6.0}",
            "calculator:\n- expression: 2*3\n- value: 6.0",
        ),
    ] {
        let fake = FakeLlm::start(Dialect::OpenAi).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(Reply::ToolCalls(vec![(
            "calculator".into(),
            json!({"expression": "2*3"}),
        )]));
        fake.push(Reply::Text(echo.into()));
        fake.push(Reply::Text(second.into()));
        let out = bot.chat("bob", &[], "what is 2*3\n").await;
        let text = one(&out, "text")["text"].as_str().unwrap().to_string();
        assert!(text.ends_with(shown), "{text}");
        assert!(of_type(&out, "error").is_empty(), "{out:#?}");
        let all = serde_json::to_string(&out).unwrap();
        assert!(
            !all.contains("```") && !all.contains("\\\"value\\\""),
            "{all}"
        );
        assert_eq!(fake.requests().len(), 3, "asked once more, not again");
    }
    // Cut off at the output limit while writing the result out again: the figures at once.
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
    fake.push(Reply::ToolCalls(vec![(
        "calculator".into(),
        json!({"expression": "2*3"}),
    )]));
    fake.push(Reply::Finish {
        text: format!("{echo}\n{{\"expression\": \"2*3\", \"val"),
        reason: "length".into(),
    });
    let out = bot.chat("bob", &[], "what is 2*3\n").await;
    let text = one(&out, "text")["text"].as_str().unwrap();
    assert!(text.ends_with("- value: 6.0"), "{text}");
    assert!(of_type(&out, "error").is_empty(), "{out:#?}");
    assert_eq!(fake.requests().len(), 2);
}

/// A call refused for its arguments is asked for again with only its tool offered and a call
/// required: Gemini's `mode: ANY`, and for an OpenAI-compatible server (llama.cpp, vLLM) an
/// answer format whose schema admits only that call, which it decodes under a grammar and
/// writes as text; that text runs as the call. Every request carries the answer-length cap.
#[tokio::test]
async fn a_refused_call_is_asked_again_with_only_its_tool_required() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let mut bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        bot.set("SPARKY_LLM__SEED", "40");
        fake.push(Reply::ToolCalls(vec![(
            "calculator".into(),
            json!({"expr": "1+1"}),
        )]));
        fake.push(match dialect {
            // A compatible server asked for a `json_schema` answer writes the call as text.
            Dialect::OpenAi => {
                Reply::Text(r#"{"name": "calculator", "arguments": {"expression": "1+1"}}"#.into())
            }
            Dialect::Gemini => {
                Reply::ToolCalls(vec![("calculator".into(), json!({"expression": "1+1"}))])
            }
        });
        fake.push(Reply::ToolCalls(vec![(
            "calculator".into(),
            json!({"nope": 1}),
        )]));
        fake.push(Reply::Text("It is 2.".into()));
        let out = bot.chat("bob", &[], "what is 1+1\n").await;
        assert_eq!(
            one(&out, "text")["text"],
            "It is 2.",
            "{dialect:?}: {out:#?}"
        );
        let reqs = fake.requests();
        let tools = |r: &Value| -> Vec<String> {
            match dialect {
                Dialect::OpenAi => r["tools"].as_array().map_or(vec![], |t| {
                    t.iter()
                        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                        .collect()
                }),
                Dialect::Gemini => {
                    r["tools"][0]["functionDeclarations"]
                        .as_array()
                        .map_or(vec![], |t| {
                            t.iter()
                                .map(|t| t["name"].as_str().unwrap().to_string())
                                .collect()
                        })
                }
            }
        };
        // OpenAI-compatible servers (the fake is one) get the tool as the answer's schema.
        let constrained = |r: &Value| -> Vec<String> {
            let schema = &r["response_format"]["json_schema"]["schema"];
            schema["properties"]["name"]["const"]
                .as_str()
                .map(|n| vec![n.to_string()])
                .unwrap_or_default()
        };
        let tools = |r: &Value| -> Vec<String> {
            let offered = tools(r);
            if offered.is_empty() {
                constrained(r)
            } else {
                offered
            }
        };
        let required = |r: &Value| match dialect {
            Dialect::OpenAi => r["response_format"]["type"] == "json_schema",
            Dialect::Gemini => r["toolConfig"]["functionCallingConfig"]["mode"] == "ANY",
        };
        assert!(
            tools(&reqs[0]).len() > 1 && !required(&reqs[0]),
            "{dialect:?}: the first request is open"
        );
        assert_eq!(
            tools(&reqs[1]),
            ["calculator"],
            "{dialect:?}: only the refused tool"
        );
        assert!(
            required(&reqs[1]),
            "{dialect:?}: a call is required: {}",
            reqs[1]
        );
        let messages = |r: &Value| match dialect {
            Dialect::OpenAi => r["messages"].to_string(),
            Dialect::Gemini => r["contents"].to_string(),
        };
        assert!(
            messages(&reqs[2])
                .replace('\\', "")
                .contains(r#""value":2.0"#),
            "{dialect:?}: the constrained answer ran as the call: {}",
            messages(&reqs[2])
        );
        // Once per tool and turn: a later refusal of the same tool gets the open offer again.
        assert!(
            tools(&reqs[2]).len() > 1 && !required(&reqs[2]),
            "{dialect:?}"
        );
        assert!(
            tools(&reqs[3]).len() > 1 && !required(&reqs[3]),
            "{dialect:?}"
        );
        let cap = match dialect {
            Dialect::OpenAi => &reqs[0]["max_tokens"],
            Dialect::Gemini => &reqs[0]["generationConfig"]["maxOutputTokens"],
        };
        assert_eq!(cap, 1024, "{dialect:?}: the answer-length cap is sent");
        // A turn's model calls draw from llm.seed on: the turn repeats exactly, and a call
        // asked again is not the same draw.
        let seeds: Vec<&Value> = reqs
            .iter()
            .map(|r| match dialect {
                Dialect::OpenAi => &r["seed"],
                Dialect::Gemini => &r["generationConfig"]["seed"],
            })
            .collect();
        assert_eq!(seeds, [40, 41, 42, 43], "{dialect:?}");
    }
}

#[tokio::test]
async fn every_tool_is_offered_when_configured() {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let mut bot = Bot::new(Db::Sqlite, Some(&fake)).await;
    let names = |r: &Value| -> Vec<String> {
        r["tools"].as_array().map_or(vec![], |t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(String::from))
                .collect()
        })
    };
    fake.push(Reply::Text("Hello.".into()));
    bot.chat("bob", &[], "hi\n").await;
    let routed = names(&fake.requests()[0]);
    assert!(routed.iter().any(|n| n == "more_tools"), "{routed:?}");
    assert!(
        fake.requests()[0].get("seed").is_none(),
        "no seed unless configured"
    );

    bot.set("SPARKY_AGENT__TOOL_OFFER", "all");
    fake.push(Reply::Text("Hello.".into()));
    bot.chat("bob", &[], "hi\n").await;
    let all = names(&fake.requests()[1]);
    assert!(!all.iter().any(|n| n == "more_tools"), "{all:?}");
    for tool in [
        "add_circuit",
        "calculate_voltage_drop",
        "search_code",
        "calculate_box_fill",
    ] {
        assert!(all.iter().any(|n| n == tool), "{tool} in {all:?}");
    }
    assert!(
        all.len() > routed.len() + 10,
        "{} against {}",
        all.len(),
        routed.len()
    );
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_become_tool_errors() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(Reply::ToolCalls(vec![(
            "launch_rockets".into(),
            json!({"count": 3}),
        )]));
        fake.push(Reply::ToolCalls(vec![(
            "calculator".into(),
            json!({"expr": "1+1"}),
        )]));
        if dialect == Dialect::OpenAi {
            fake.push(Reply::RawToolCall {
                name: "calculator".into(),
                arguments: "{\"expression\": \"1+".into(),
            });
        }
        fake.push(Reply::Text("Recovered.".into()));
        let out = bot.chat("bob", &[], "do something odd\n").await;
        assert_eq!(
            one(&out, "text")["text"],
            "Recovered.",
            "{dialect:?}: {out:#?}"
        );
        let reqs: Vec<String> = fake.requests().iter().map(|r| r.to_string()).collect();
        assert!(
            reqs[1].contains("no tool named 'launch_rockets'"),
            "{}",
            reqs[1]
        );
        assert!(reqs[2].contains("invalid arguments"), "{}", reqs[2]);
        if dialect == Dialect::OpenAi {
            assert!(reqs[3].contains("not valid JSON"), "{}", reqs[3]);
        }
    }
}

#[tokio::test]
async fn provider_faults_give_clear_messages_or_recover() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        // 429 with retry-after, then success: retried transparently.
        fake.push(Reply::Status {
            code: 429,
            body: json!("slow down"),
            retry_after_secs: Some(1),
        });
        fake.push(Reply::Text("First answer.".into()));
        // 503 three times (max_retries = 2): the user gets a clear message.
        for _ in 0..3 {
            fake.push(Reply::Status {
                code: 503,
                body: json!("overloaded"),
                retry_after_secs: None,
            });
        }
        // A stream cut after its first text: never retried once it has started.
        fake.push(Reply::CutMidStream("Partial ans".into()));
        fake.push(Reply::Text("Third answer.".into()));
        let out = bot
            .chat(
                "bob",
                &[],
                "first question\nsecond question\nthird question\nfourth question\n",
            )
            .await;
        let texts: Vec<&str> = of_type(&out, "text")
            .iter()
            .map(|t| t["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            texts,
            vec!["First answer.", "Third answer."],
            "{dialect:?}: {out:#?}"
        );
        let errors = of_type(&out, "error");
        assert_eq!(errors.len(), 2, "{dialect:?}: {out:#?}");
        assert!(
            errors[0]["message"]
                .as_str()
                .unwrap()
                .contains("overloaded"),
            "{errors:?}"
        );
        assert!(
            errors[1]["message"].as_str().unwrap().contains("saved"),
            "{errors:?}"
        );
        // Nothing was lost: the last request still carries the earlier questions.
        let last = fake.requests().last().unwrap().to_string();
        assert!(
            last.contains("second question") && last.contains("third question"),
            "{last}"
        );
    }
}

#[tokio::test]
async fn only_the_requester_confirms_and_a_restart_loses_nothing() {
    for dialect in DIALECTS {
        let fake = FakeLlm::start(dialect).await;
        let bot = Bot::new(Db::Sqlite, Some(&fake)).await;
        fake.push(fridge(45.0));
        let args = ["--mode", "load", "--project", "van", "--thread", "shared"];
        // Process 1 proposes and exits.
        let out = bot
            .chat("alice", &args, "I have a Dometic CFX3 45 fridge\n")
            .await;
        let id = one(&out, "confirmation")["action_id"]
            .as_str()
            .unwrap()
            .to_string();
        // Process 2: bob may not confirm.
        let out = bot.chat("bob", &args, &format!("/confirm {id}\n")).await;
        let refusal = one(&out, "refusal");
        assert!(
            refusal["message"].as_str().unwrap().contains("alice"),
            "{refusal}"
        );
        assert_eq!(loads(&bot, "van").await, 0);
        // Process 3: alice confirms after the "restart".
        fake.push(Reply::Text("Done.".into()));
        let out = bot.chat("alice", &args, &format!("/confirm {id}\n")).await;
        assert_eq!(one(&out, "resolved")["outcome"], "executed", "{dialect:?}");
        assert_eq!(loads(&bot, "van").await, 1);
    }
}

async fn racing_confirms_execute_once(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let bot = Bot::new(db, Some(&fake)).await;
    fake.push(fridge(45.0));
    let args = ["--mode", "load", "--project", "van", "--thread", "race"];
    let out = bot
        .chat("alice", &args, "I have a Dometic CFX3 45 fridge\n")
        .await;
    let id = one(&out, "confirmation")["action_id"]
        .as_str()
        .unwrap()
        .to_string();
    fake.push(Reply::Text("Done.".into()));
    fake.push(Reply::Text("Done.".into()));
    let input = format!("/confirm {id}\n");
    let (a, b) = tokio::join!(
        bot.chat("alice", &args, &input),
        bot.chat("alice", &args, &input)
    );
    let outcomes: Vec<String> = a
        .iter()
        .chain(b.iter())
        .filter(|e| e["type"] == "resolved")
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "executed").count(),
        1,
        "{db:?}: {outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| *o == "already_resolved").count(),
        1,
        "{db:?}: {outcomes:?}"
    );
    assert_eq!(loads(&bot, "van").await, 1, "{db:?}");
}

#[tokio::test]
async fn two_processes_racing_to_confirm_execute_once_on_sqlite() {
    racing_confirms_execute_once(Db::Sqlite).await;
}

#[tokio::test]
async fn two_processes_racing_to_confirm_execute_once_on_postgres() {
    racing_confirms_execute_once(Db::Postgres).await;
}

#[tokio::test]
async fn offline_console_starts_and_says_how_to_configure() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let (lines, ok) = bot
        .run(
            &["chat", "--user", "carol"],
            "what is 240.4(D)?\n/tool calculator {\"expression\": \"3*4\"}\n",
        )
        .await;
    assert!(ok, "{lines:?}");
    let text = lines.join("\n");
    assert!(text.contains("No language model is configured"), "{text}");
    assert!(text.contains("SPARKY_LLM__PROVIDER"), "{text}");
    assert!(
        text.contains("calculator:\nexpression: 3*4\nvalue: 12"),
        "a readable result: {text}"
    );
    assert!(
        !text.contains("<<<document"),
        "no fences for people: {text}"
    );
}

#[tokio::test]
async fn a_line_that_is_not_utf8_is_reported_and_later_lines_still_run() {
    let bot = Bot::new(Db::Sqlite, None).await;
    let input: &[u8] = b"/tool calculator {\"expression\": \"3*4\"}\n\
        \xff\xfe\x80 not text\n\
        /tool calculator {\"expression\": \"5*7\"}\n";
    let (lines, stderr, ok) = bot
        .run_bytes(&["chat", "--json", "--user", "carol"], input)
        .await;
    assert!(ok, "{lines:?} {stderr}");
    let text = lines.join("\n");
    assert!(text.contains("12.0"), "{text}");
    assert!(
        text.contains("35.0"),
        "the line after the bad one ran: {text}"
    );
    assert!(
        stderr.contains("line 2") && stderr.contains("not valid UTF-8"),
        "{stderr}"
    );
}

/// `project use barn` in a thread that started on another project: the thread's next card is
/// planned against barn and Confirm writes to barn, never to the first project; likewise after
/// a restart with `--project barn`.
async fn a_thread_moved_to_another_project_writes_there(db: Db) {
    let fake = FakeLlm::start(Dialect::OpenAi).await;
    let bot = Bot::new(db, Some(&fake)).await;
    // One console session: a load on "van", then `project use barn` and another load.
    let van = ["--mode", "load", "--project", "van", "--thread", "t1"];
    fake.push(fridge(45.0));
    fake.push(Reply::Text("Added.".into()));
    fake.push(fridge(60.0));
    fake.push(Reply::Text("Added.".into()));
    let out = bot
        .chat(
            "alice",
            &van,
            "I have a Dometic CFX3 45 fridge\n/confirm\n/project create barn\n\
             /project use van\n/project use barn\nI have a second fridge\n/confirm\n",
        )
        .await;
    let outcomes: Vec<&Value> = of_type(&out, "resolved")
        .into_iter()
        .map(|r| &r["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [&json!("executed"), &json!("executed")],
        "{db:?}: {out:#?}"
    );
    assert_eq!(
        loads(&bot, "van").await,
        1,
        "{db:?}: only the first load is in van"
    );
    assert_eq!(
        loads(&bot, "barn").await,
        1,
        "{db:?}: the second card went to barn"
    );

    // A restart of the same thread with --project barn writes to barn too.
    let barn = ["--mode", "load", "--project", "barn", "--thread", "t1"];
    fake.push(fridge(70.0));
    fake.push(Reply::Text("Added.".into()));
    let out = bot
        .chat("alice", &barn, "And a third fridge\n/confirm\n")
        .await;
    assert_eq!(one(&out, "resolved")["outcome"], "executed", "{db:?}");
    assert_eq!(loads(&bot, "barn").await, 2, "{db:?}");
    assert_eq!(loads(&bot, "van").await, 1, "{db:?}");
}

#[tokio::test]
async fn a_thread_moved_to_another_project_writes_there_sqlite() {
    a_thread_moved_to_another_project_writes_there(Db::Sqlite).await;
}

#[tokio::test]
async fn a_thread_moved_to_another_project_writes_there_postgres() {
    a_thread_moved_to_another_project_writes_there(Db::Postgres).await;
}
