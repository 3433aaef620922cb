//! `sparky serve` in process: the library's `Service` binds an ephemeral port, a signed Slack
//! request starts a turn, shutdown is asked for mid-turn, and `run` returns only once that
//! turn has answered; meanwhile `/readyz` says the replica is shutting down.

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sparky::nec::units::Edition;
use sparky::service::Service;
use support::fake_llm::{Dialect, FakeLlm, Reply};
use support::fake_slack::{
    app_mention, FakeSlack, SignedPoster, ALICE, APP_TOKEN, BOT_TOKEN, CHANNEL, SIGNING_SECRET,
    TEAM,
};

/// The configuration of a Slack-over-HTTP `serve` on an ephemeral port, against `llm` and
/// `slack`, with its SQLite file in `dir`, plus `extra` settings.
/// The project "Shop" of the Slack team, bound to its channel.
async fn bound_shop(store: &dyn sparky::store::Store) -> sparky::project::Project {
    let project = store
        .create_project(
            &sparky::project::Workspace::new("slack", TEAM),
            "Shop",
            Edition::Nec2023,
        )
        .await
        .expect("project");
    store
        .bind_channel("slack", TEAM, CHANNEL, project.id)
        .await
        .expect("bind");
    project
}

fn serve_config(
    llm: &FakeLlm,
    slack: &FakeSlack,
    dir: &tempfile::TempDir,
    extra: &[(&str, &str)],
) -> sparky::config::Config {
    let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
    for (k, v) in [
        ("SPARKY_LLM__MAX_RETRIES", "0"),
        ("SPARKY_RAG__EMBEDDER", "none"),
        ("SPARKY_SLACK__ENABLED", "true"),
        ("SPARKY_SLACK__TRANSPORT", "http"),
        ("SPARKY_SERVER__BIND", "127.0.0.1:0"),
        ("SLACK_BOT_TOKEN", BOT_TOKEN),
        ("SLACK_APP_TOKEN", APP_TOKEN),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
    ]
    .iter()
    .chain(extra)
    {
        env.insert(k.to_string(), v.to_string());
    }
    env.insert("SPARKY_SLACK__API_BASE_URL".into(), slack.api_url());
    env.insert(
        "SPARKY_DATABASE__SQLITE_PATH".into(),
        dir.path().join("serve.db").display().to_string(),
    );
    sparky::config::Config::load(None, &env).expect("config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_the_turn_in_flight_before_serve_returns() {
    sparky::llm::tls::install_default_crypto_provider();
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    llm.push(Reply::PacedText {
        pieces: vec!["Working".into(), " - all done".into()],
        gap: Duration::from_millis(1500),
    });
    let slack = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = serve_config(
        &llm,
        &slack,
        &dir,
        &[("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "20")],
    );
    let server = Service::bind(config).await.expect("bind");
    let addr = server.local_addr().expect("address");
    assert_ne!(addr.port(), 0);
    let store = server.app().store.clone();
    bound_shop(&*store).await;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let readyz = |http: reqwest::Client| async move {
        http.get(format!("http://{addr}/readyz"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while readyz(http.clone()).await != 200 {
        assert!(Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let poster = SignedPoster::new(&format!("http://{addr}"));
    let ts = "1700000001.000100";
    let a = poster
        .event(
            &app_mention(TEAM, CHANNEL, ALICE, ts, "what size breaker?", "EvServe1"),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let deadline = Instant::now() + Duration::from_secs(10);
    while llm.requests().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the turn never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answered = |slack: &FakeSlack| {
        slack
            .thread(CHANNEL, ts)
            .iter()
            .any(|m| m.section_text().contains("all done"))
    };
    assert!(!answered(&slack), "the turn is still in flight");

    let asked = Instant::now();
    stop.send(()).expect("serve is running");
    // Draining: not ready, but still up until the turn is done.
    let deadline = Instant::now() + Duration::from_secs(5);
    while readyz(http.clone()).await != 503 {
        assert!(
            Instant::now() < deadline,
            "/readyz never said shutting down"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let result = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("serve returned within the grace period")
        .expect("serve task");
    result.expect("serve ended cleanly");
    assert!(
        answered(&slack),
        "serve returned {:?} after shutdown was asked, before the turn answered: {:?}",
        asked.elapsed(),
        slack.thread(CHANNEL, ts)
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the port is closed once serve returned"
    );
}

/// Slow clients cannot hold the server's connections: 40 connections that never finish their
/// headers are closed after `server.header_timeout_secs`, a body that trickles in is answered
/// 408 after `server.request_timeout_secs`, and `/healthz` answers all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_and_slow_bodies_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    sparky::llm::tls::install_default_crypto_provider();
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let slack = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = serve_config(
        &llm,
        &slack,
        &dir,
        &[
            ("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "1"),
            ("SPARKY_SERVER__HEADER_TIMEOUT_SECS", "1"),
            ("SPARKY_SERVER__REQUEST_TIMEOUT_SECS", "2"),
        ],
    );
    let server = Service::bind(config).await.expect("bind");
    let addr = server.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    // Forty connections that send half a request line and then nothing.
    let mut slow = Vec::new();
    for _ in 0..40 {
        let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .expect("write");
        slow.push(c);
    }
    let healthz = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .expect("healthz while slow clients wait");
    assert_eq!(healthz.status(), 200);
    let started = Instant::now();
    for mut c in slow {
        let mut buf = [0u8; 256];
        // Closed by the server (0 bytes, or a reset), well before the test's own bound.
        let read = tokio::time::timeout(Duration::from_secs(10), c.read(&mut buf))
            .await
            .expect("the server closes a connection whose headers never end");
        assert!(
            matches!(read, Ok(0) | Err(_))
                || read.is_ok_and(|n| buf[..n].starts_with(b"HTTP/1.1 408"))
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));

    // A body announced as 1,000 bytes, of which 10 arrive.
    let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
    c.write_all(
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"type\":\"",
    )
    .await
    .expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut answer))
        .await
        .expect("the server answers a trickling body");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    let _ = stop.send(());
    serving.await.expect("join").expect("serve");
}

/// A proposal nobody confirmed in time is expired by the serving process's own timer: its
/// card on Slack is edited to "expired" (the `chat.update` reaches the fake) without anyone
/// clicking, and the action is resolved as expired in the store. Both stores.
async fn an_expired_proposal_is_swept_and_its_card_edited(db: support::bot::Db) {
    use sparky::core::session::SessionKey;
    use sparky::store::PendingState;
    use support::fake_slack::slash_command_form;

    sparky::llm::tls::install_default_crypto_provider();
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let slack = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let postgres = match db {
        support::bot::Db::Sqlite => None,
        support::bot::Db::Postgres => Some(support::bot::fresh_postgres_url().await),
    };
    // The sweep runs every third of the lease: every second.
    let mut extra = vec![("SPARKY_AGENT__LEASE_SECS", "3")];
    if let Some(url) = &postgres {
        extra.push(("DATABASE_URL", url.as_str()));
    }
    let config = serve_config(&llm, &slack, &dir, &extra);
    let server = Service::bind(config).await.expect("bind");
    let addr = server.local_addr().expect("address");
    let store = server.app().store.clone();
    let project = bound_shop(&*store).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    // A write from a command: a card with buttons.
    let poster = SignedPoster::new(&format!("http://{addr}"));
    poster
        .command(&slash_command_form(
            TEAM,
            CHANNEL,
            ALICE,
            r#"tool create_task {"title": "Label the panels"}"#,
            "cmd.expire",
        ))
        .await;
    let wait = Duration::from_secs(15);
    let card = slack
        .wait_for("the card", wait, |s| {
            s.messages().into_iter().find(|m| m.has_buttons())
        })
        .await;
    let thread = card.thread_ts.clone().unwrap_or_else(|| card.ts.clone());
    let session = store
        .open_session(
            &SessionKey::new("slack", TEAM, CHANNEL, &thread),
            Default::default(),
            None,
        )
        .await
        .expect("session");
    let action = store
        .open_pending_for_session(session.id)
        .await
        .expect("pending")
        .expect("a proposal waits");
    // Its time runs out (as if its hours had passed).
    let expire = format!(
        "UPDATE pending_actions SET expires_at = '2000-01-01T00:00:00+00:00' WHERE id = '{}'",
        action.id
    );
    match &postgres {
        None => {
            use sqlx::{ConnectOptions, Executor};
            let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(dir.path().join("serve.db"))
                .connect()
                .await
                .expect("sqlite");
            conn.execute(expire.as_str()).await.expect("expire");
        }
        Some(url) => {
            use sqlx::{Connection, Executor};
            let mut conn = sqlx::PgConnection::connect(url).await.expect("postgres");
            conn.execute(expire.as_str()).await.expect("expire");
        }
    }

    // Nobody clicks: the timer edits the card.
    let edited = slack
        .wait_for("the card edited to expired", wait, |s| {
            s.calls_of("chat.update").into_iter().find(|c| {
                c.args["ts"] == card.ts.as_str() && c.args.to_string().contains("Expired")
            })
        })
        .await;
    assert_eq!(edited.args["channel"], CHANNEL);
    let now = slack
        .messages()
        .into_iter()
        .find(|m| m.ts == card.ts)
        .expect("the card");
    assert!(!now.has_buttons(), "no buttons left on an expired card");
    let resolved = store.pending(&action.id).await.expect("read").expect("row");
    assert_eq!(resolved.state, PendingState::Expired);
    assert!(store
        .load_project(project.id)
        .await
        .expect("project")
        .tasks
        .is_empty());

    stop.send(()).expect("serve is running");
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("serve returned")
        .expect("serve task")
        .expect("serve ended cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_proposal_is_swept_and_its_card_edited_sqlite() {
    an_expired_proposal_is_swept_and_its_card_edited(support::bot::Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_proposal_is_swept_and_its_card_edited_postgres() {
    an_expired_proposal_is_swept_and_its_card_edited(support::bot::Db::Postgres).await;
}

/// `/readyz` of a server at `addr`: its status and body.
async fn readyz(addr: std::net::SocketAddr) -> (u16, String) {
    match reqwest::get(format!("http://{addr}/readyz")).await {
        Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

/// Polls `/readyz` until `want(status)` holds, for at most `limit`; returns the last body.
async fn readyz_until(
    addr: std::net::SocketAddr,
    limit: Duration,
    what: &str,
    want: impl Fn(u16) -> bool,
) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let (status, body) = readyz(addr).await;
        if want(status) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: /readyz said {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/readyz` never says 200 during `span`.
async fn never_ready_for(addr: std::net::SocketAddr, span: Duration, what: &str) {
    let deadline = Instant::now() + span;
    while Instant::now() < deadline {
        let (status, body) = readyz(addr).await;
        assert_ne!(status, 200, "{what}: {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Refused, connected, cut, reconnected: `/readyz` follows a gateway through all four. `cut`
/// cuts the live connections while new ones are refused; `allow` accepts them again.
async fn readiness_follows_the_connection(
    config: sparky::config::Config,
    refuse: impl Fn(bool),
    cut: impl Fn(),
    name: &str,
    reconnect: Duration,
) {
    refuse(true);
    let server = Service::bind(config).await.expect("bind");
    let addr = server.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    // A gateway whose server refuses is not connected, however long it keeps trying.
    never_ready_for(addr, Duration::from_secs(3), "refused gateway").await;
    let (_, body) = readyz(addr).await;
    assert!(body.contains(&format!("{name}: ")), "{body}");
    assert!(!body.contains(&format!("{name}: running")), "{body}");

    refuse(false);
    let body = readyz_until(addr, reconnect, "first connection", |s| s == 200).await;
    assert!(body.contains(&format!("{name}: running")), "{body}");

    // Dropped with no way back: not ready until a connection is greeted again.
    refuse(true);
    cut();
    let body = readyz_until(addr, Duration::from_secs(10), "after the cut", |s| s == 503).await;
    assert!(body.contains(&format!("{name}: starting")), "{body}");
    never_ready_for(addr, Duration::from_secs(2), "cut and refused").await;
    refuse(false);
    readyz_until(addr, reconnect, "reconnection", |s| s == 200).await;

    let _ = stop.send(());
    serving.await.expect("join").expect("serve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_the_discord_gateway_is_connected_only_while_it_is() {
    sparky::llm::tls::install_default_crypto_provider();
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let discord = support::fake_discord::FakeDiscord::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut env: BTreeMap<String, String> = llm.env().into_iter().collect();
    env.extend(discord.env());
    for (k, v) in [
        ("SPARKY_RAG__EMBEDDER", "none"),
        ("SPARKY_SERVER__BIND", "127.0.0.1:0"),
        ("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "1"),
    ] {
        env.insert(k.into(), v.into());
    }
    env.insert(
        "SPARKY_DATABASE__SQLITE_PATH".into(),
        dir.path().join("serve.db").display().to_string(),
    );
    let config = sparky::config::Config::load(None, &env).expect("config");
    readiness_follows_the_connection(
        config,
        |r| discord.refuse_gateway(r),
        || discord.cut_gateway(),
        "discord-gateway",
        Duration::from_secs(90),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_slack_socket_mode_is_connected_only_while_it_is() {
    sparky::llm::tls::install_default_crypto_provider();
    let llm = FakeLlm::start(Dialect::OpenAi).await;
    let slack = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = serve_config(
        &llm,
        &slack,
        &dir,
        &[
            ("SPARKY_SLACK__TRANSPORT", "socket"),
            ("SPARKY_SERVER__SHUTDOWN_GRACE_SECS", "1"),
        ],
    );
    // slack-morphism waits 30 s between failed connection attempts.
    readiness_follows_the_connection(
        config,
        |r| slack.refuse_sockets(r),
        || slack.cut_sockets(),
        "slack",
        Duration::from_secs(75),
    )
    .await;
}
