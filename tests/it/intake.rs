//! Files people send in: the recorded Slack mention with a file and a Discord message with an
//! attachment (documented shape) become download references, the bytes are fetched (Slack's
//! `url_private` with the bot token) within the size limit, sniffed, and encoded in each
//! provider's wire form; a text PDF yields its text and a scan is recognised.

use crate::support;

use base64::Engine;
use resvg::tiny_skia::{Color, Pixmap};
use serde_json::{json, Value};
use slack_morphism::prelude::{SlackEventCallbackBody, SlackPushEventCallback};
use sparky::config::FileHost;
use sparky::intake::download::{self, fetch, FileRef, Source};
use sparky::intake::{
    classify, gemini_part, openai_part, Content, InboundFile, IntakeError, Limits,
};
use sparky::platforms::{discord, slack};
use std::time::Duration;
use support::fake_slack::{fixture_json, FakeSlack, BOT_TOKEN};

/// A real 40 × 30 PNG.
fn png() -> Vec<u8> {
    let mut p = Pixmap::new(40, 30).expect("pixmap");
    p.fill(Color::from_rgba8(200, 30, 30, 255));
    p.encode_png().expect("png")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn a_slack_mention_with_a_photo_is_downloaded_with_the_bot_token_and_encoded_per_provider() {
    let slack = FakeSlack::start().await;
    let photo = png();
    // The recorded app_mention carrying a file, its url_private pointed at the fake.
    let mut payload: Value =
        fixture_json("vercel-chat-replay-slack-streaming.json")["aiMentionWithFile"].clone();
    let url = slack.host_file(
        "T00FAKE00BB-F0XY789ZKLM/image.png",
        "image/png",
        photo.clone(),
    );
    payload["event"]["files"][0]["url_private"] = json!(url);
    let cb: SlackPushEventCallback =
        serde_json::from_value(payload).expect("slack-morphism parses it");
    let files = match cb.event {
        SlackEventCallbackBody::AppMention(m) => m.content.files.unwrap_or_default(),
        other => panic!("not a mention: {other:?}"),
    };
    let refs = slack::inbound_files::file_refs(&files);
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].name, "image.png");
    assert_eq!(refs[0].mime, "image/png");
    assert_eq!(refs[0].url, url);

    let client = download::client(Duration::from_secs(10));
    let limits = Limits::default();
    let hosts = [slack.file_host()];
    let with_token = Source {
        hosts: &hosts,
        bearer: Some(BOT_TOKEN),
    };
    let file = fetch(&client, &refs[0], with_token, &limits)
        .await
        .expect("download");
    assert_eq!(file.bytes, photo);
    let content = classify(&file, &limits).await.expect("an image");
    assert!(matches!(
        content,
        Content::Image {
            mime: "image/png",
            ..
        }
    ));
    let o = openai_part(&content).expect("part");
    assert_eq!(
        o["image_url"]["url"],
        format!("data:image/png;base64,{}", b64(&photo))
    );
    let g = gemini_part(&content).expect("part");
    assert_eq!(g["inline_data"]["data"], b64(&photo));
    assert_eq!(g["inline_data"]["mime_type"], "image/png");

    // Without the token Slack sends its sign-in page: refused with the likely cause.
    let without = Source {
        hosts: &hosts,
        bearer: None,
    };
    let e = fetch(&client, &refs[0], without, &limits)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("files:read"), "{e}");
    // A photo over the limit is cut off while downloading.
    let small = Limits {
        max_bytes: 64,
        ..Limits::default()
    };
    let e = fetch(&client, &refs[0], with_token, &small)
        .await
        .unwrap_err();
    assert!(matches!(e, IntakeError::TooLarge { .. }), "{e}");
    assert!(e.to_string().contains("image.png"));
}

#[tokio::test]
async fn a_discord_attachment_is_fetched_and_an_oversize_one_is_refused_before_download() {
    let photo = png();
    let served = photo.clone();
    let app = axum::Router::new().route(
        "/attachments/{ch}/{id}/{name}",
        axum::routing::get(move || {
            let b = served.clone();
            async move { ([("content-type", "image/png")], b) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    // A message in the documented shape with one attachment object.
    let mut m = support::fake_discord::fixture("message.docs.json");
    m["attachments"] = json!([{
        "id": "1100000000000000001",
        "filename": "LP-2 directory.png",
        "size": photo.len(),
        "url": format!("http://{addr}/attachments/1/1100000000000000001/LP-2_directory.png"),
        "proxy_url": format!("http://{addr}/attachments/1/1100000000000000001/LP-2_directory.png"),
        "content_type": "image/png",
        "width": 40,
        "height": 30
    }]);
    let msg: serenity::all::Message = serde_json::from_value(m).expect("serenity parses it");
    let refs = discord::inbound_files::attachment_refs(&msg.attachments);
    assert_eq!(refs[0].name, "LP-2 directory.png");
    assert_eq!(refs[0].size, photo.len());
    let client = download::client(Duration::from_secs(10));
    let hosts = [FileHost::parse(&format!("http://{addr}")).expect("origin")];
    let cdn = Source {
        hosts: &hosts,
        bearer: None,
    };
    let file = fetch(&client, &refs[0], cdn, &Limits::default())
        .await
        .expect("download");
    assert!(matches!(
        classify(&file, &Limits::default()).await,
        Ok(Content::Image {
            mime: "image/png",
            ..
        })
    ));
    // The declared size already says too large: nothing is downloaded.
    let big = FileRef {
        url: "http://127.0.0.1:9/never".into(),
        size: 50 * 1024 * 1024,
        ..refs[0].clone()
    };
    let e = fetch(&client, &big, cdn, &Limits::default())
        .await
        .unwrap_err();
    assert!(matches!(e, IntakeError::TooLarge { .. }), "{e}");
}

#[tokio::test]
async fn a_text_pdf_gives_its_text_and_a_scan_is_recognised() {
    let (store, _dir) = crate::tools_fixture::sqlite().await;
    let id = crate::tools_fixture::seed(&store, "Shop").await;
    let p = store.load_project(id).await.expect("load");
    let schedule = sparky::report::render(
        &p,
        &sparky::report::ReportKind::Panel {
            panel: "LP-1".into(),
        },
        sparky::report::Format::Pdf,
        "alice",
        chrono::Utc::now(),
    )
    .expect("render");
    let file = InboundFile {
        name: "LP-1.pdf".into(),
        declared_mime: "application/pdf".into(),
        bytes: schedule.bytes,
    };
    match classify(&file, &Limits::default()).await.expect("a PDF") {
        Content::PdfText { text, .. } => {
            let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            assert!(squeezed.contains("Kitchenreceptacles"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    // A page with drawings but no text layer, like a scanned directory.
    let scan = sparky::report::output::to_pdf(
        &["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"612\" height=\"792\"><rect x=\"50\" y=\"50\" width=\"500\" height=\"600\" fill=\"#888\"/></svg>".to_string()],
        "scan",
    )
    .expect("pdf");
    let file = InboundFile {
        name: "scan.pdf".into(),
        declared_mime: "application/pdf".into(),
        bytes: scan,
    };
    assert!(matches!(
        classify(&file, &Limits::default()).await,
        Ok(Content::ScannedPdf { .. })
    ));
}
