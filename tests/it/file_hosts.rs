//! A file object names its own URL, and Slack's is fetched with the bot token: a link to any
//! other host, a redirect off the file host, or a file host name that resolves to the bot's
//! own network gets no request (and no token), and the person is told why. Real HTTP against
//! loopback servers that count every connection they accept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sparky::config::FileHost;
use sparky::intake::download::{self, fetch, FileRef, Source};
use sparky::intake::{IntakeError, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "xoxb-secret-bot-token";

/// A loopback server that answers every request with `reply` and keeps each request's head.
#[derive(Clone)]
struct Recorder {
    addr: std::net::SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    connections: Arc<Mutex<usize>>,
}

impl Recorder {
    async fn start(reply: impl Fn(&str) -> String + Send + Sync + 'static) -> Recorder {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let r = Recorder {
            addr: listener.local_addr().expect("addr"),
            heads: Arc::default(),
            connections: Arc::default(),
        };
        let (rec, reply) = (r.clone(), Arc::new(reply));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                *rec.connections.lock().expect("lock") += 1;
                let (rec, reply) = (rec.clone(), reply.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let answer = reply(&head);
                    rec.heads.lock().expect("lock").push(head);
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        r
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn host(&self) -> FileHost {
        FileHost::parse(&self.origin()).expect("origin")
    }

    fn connections(&self) -> usize {
        *self.connections.lock().expect("lock")
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("lock").clone()
    }
}

fn png_reply(_: &str) -> String {
    "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 4\r\nconnection: close\r\n\r\n\u{89}PNG"
        .to_string()
}

fn file(url: &str) -> FileRef {
    FileRef {
        name: "panel.png".into(),
        mime: "image/png".into(),
        size: 0,
        url: url.into(),
    }
}

fn client() -> reqwest::Client {
    download::client(Duration::from_secs(10))
}

#[tokio::test]
async fn a_link_to_any_other_host_gets_no_request_and_no_token() {
    let files = Recorder::start(png_reply).await;
    let stranger = Recorder::start(png_reply).await;
    let hosts = [files.host()];
    let source = Source {
        hosts: &hosts,
        bearer: Some(TOKEN),
    };
    let port = stranger.addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/files-pri/T1-F1/panel.png"),
        format!("http://localhost:{port}/files-pri/T1-F1/panel.png"),
        format!("http://[::1]:{port}/panel.png"),
        "https://files.slack.com.evil.example/files-pri/T1-F1/panel.png".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "file:///etc/passwd".to_string(),
        "not a url".to_string(),
    ] {
        let e = fetch(&client(), &file(&url), source, &Limits::default())
            .await
            .expect_err(&url);
        assert!(matches!(e, IntakeError::ForeignHost { .. }), "{url}: {e}");
        let told = e.to_string();
        assert!(
            told.contains("panel.png was not downloaded") && told.contains(&files.origin()),
            "{told}"
        );
    }
    assert_eq!(stranger.connections(), 0, "{:?}", stranger.heads());
    assert_eq!(files.connections(), 0);
    // The file host itself is fetched, with the token.
    let got = fetch(
        &client(),
        &file(&format!("{}/files-pri/T1-F1/panel.png", files.origin())),
        source,
        &Limits::default(),
    )
    .await
    .expect("downloaded");
    assert_eq!(got.bytes.len(), 4);
    assert!(files.heads()[0].contains(&format!("Bearer {TOKEN}")));
}

#[tokio::test]
async fn a_redirect_is_followed_only_within_the_file_hosts() {
    let stranger = Recorder::start(png_reply).await;
    let away = format!("{}/steal", stranger.origin());
    let files = Recorder::start(move |head: &str| {
        let to = if head.starts_with("GET /moved ") {
            "/files-pri/T1-F1/panel.png".to_string()
        } else if head.starts_with("GET /away ") {
            away.clone()
        } else {
            return png_reply(head);
        };
        format!("HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
    })
    .await;
    let hosts = [files.host()];
    let source = Source {
        hosts: &hosts,
        bearer: Some(TOKEN),
    };
    let url = |path: &str| format!("{}{path}", files.origin());
    let got = fetch(&client(), &file(&url("/moved")), source, &Limits::default())
        .await
        .expect("a redirect within the file host is followed");
    assert_eq!(got.bytes.len(), 4);
    let e = fetch(&client(), &file(&url("/away")), source, &Limits::default())
        .await
        .expect_err("a redirect off the file host");
    assert!(matches!(e, IntakeError::ForeignHost { .. }), "{e}");
    assert_eq!(stranger.connections(), 0, "{:?}", stranger.heads());
}

#[tokio::test]
async fn a_file_host_name_resolving_to_the_bots_own_network_is_never_connected_to() {
    let inside = Recorder::start(png_reply).await;
    let port = inside.addr.port();
    // An operator (or a poisoned record) naming a host that resolves to loopback.
    let hosts = [FileHost::parse(&format!("https://localhost:{port}")).expect("origin")];
    let source = Source {
        hosts: &hosts,
        bearer: Some(TOKEN),
    };
    let e = fetch(
        &client(),
        &file(&format!(
            "https://localhost:{port}/files-pri/T1-F1/panel.png"
        )),
        source,
        &Limits::default(),
    )
    .await
    .expect_err("refused");
    let told = e.to_string();
    assert!(told.contains("private or local addresses"), "{told}");
    assert!(
        !told.contains("://"),
        "no URL in what the person reads: {told}"
    );
    assert_eq!(inside.connections(), 0);
}

#[tokio::test]
async fn a_declared_size_over_the_limit_is_refused_before_the_body_is_read() {
    // The platform's declared size: no request at all.
    let files = Recorder::start(|_: &str| {
        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 52428800\r\nconnection: close\r\n\r\n\u{89}PNG"
            .to_string()
    })
    .await;
    let hosts = [files.host()];
    let source = Source {
        hosts: &hosts,
        bearer: Some(TOKEN),
    };
    let url = format!("{}/files-pri/T1-F1/panel.png", files.origin());
    let declared = FileRef {
        size: 30_000_000,
        ..file(&url)
    };
    let e = fetch(&client(), &declared, source, &Limits::default())
        .await
        .expect_err("too large");
    assert!(e.to_string().contains("panel.png is 30.0 MB"), "{e}");
    assert_eq!(files.connections(), 0);
    // The response's Content-Length: refused from the headers.
    let e = fetch(&client(), &file(&url), source, &Limits::default())
        .await
        .expect_err("too large");
    assert!(
        matches!(
            e,
            IntakeError::TooLarge {
                size: 52_428_800,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("52.4 MB"), "{e}");
}
