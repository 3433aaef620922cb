//! PDFs that would exhaust the server (issue 37, item 2): a page whose content unpacks to
//! 16 MB, pages that do so together, a 12,000 × 12,000 pixel image, 5,000 pages, and a font
//! map no check can see through. Each is refused with the limit it hit, read by a separate
//! reader process whose peak memory is reported; the bot's async threads keep running
//! meanwhile; `sparky ingest` applies the document limits.

use crate::support::pdf_bombs::{cmap_bomb, content_bomb, image_bomb, many_pages, spread_bomb};

use std::time::{Duration, Instant};

use sparky::intake::{classify, pages, Content, InboundFile, IntakeError, Limits};
use sparky::pdf::reader::{Job, Output, Reply};
use sparky::pdf::{budget, worker, Breach, PdfBudget};

fn pdf_file(name: &str, bytes: Vec<u8>) -> InboundFile {
    InboundFile {
        name: name.into(),
        declared_mime: "application/pdf".into(),
        bytes,
    }
}

/// The limit `classify` names for `bytes` under `limits`.
async fn refusal(bytes: Vec<u8>, limits: &Limits) -> (Breach, String) {
    match classify(&pdf_file("bomb.pdf", bytes), limits).await {
        Err(e @ IntakeError::Refused { .. }) => {
            let text = e.to_string();
            let IntakeError::Refused { breach, .. } = e else {
                unreachable!()
            };
            (breach, text)
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// The reader's peak resident memory, MB, for `job` on `bytes` (what the report quotes).
async fn reader_peak_mb(job: Job, bytes: Vec<u8>, budget: &PdfBudget) -> (Reply, u64) {
    let response = worker::read(job, bytes, budget).await.expect("a reply");
    let peak = response.peak_rss_kb.expect("Linux reports VmHWM") / 1000;
    (response.reply, peak)
}

const TEXT: Job = Job::Text { max_chars: 60_000 };

#[tokio::test]
async fn a_page_that_unpacks_to_16_mb_is_refused_before_it_is_parsed() {
    let bomb = content_bomb(16);
    assert!(bomb.len() < 60_000, "{} bytes on the wire", bomb.len());
    // The check alone, in this process: it unpacks at most the 4 MB it allows.
    assert_eq!(
        budget::survey(&bomb, &PdfBudget::attachment(), false),
        Err(Breach::PageContent {
            page: 1,
            max: 4_000_000
        })
    );
    let started = Instant::now();
    let (breach, text) = refusal(bomb.clone(), &Limits::default()).await;
    assert!(
        matches!(breach, Breach::PageContent { page: 1, .. }),
        "{breach:?}"
    );
    assert_eq!(
        text,
        "bomb.pdf was not read: page 1 unpacks to more than 4 MB of drawing instructions, the \
         limit. Send the pages you need as photos or as a smaller PDF"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // In-process pdf-extract peaked at 1.4 GB on this file; the reader stays near its own size.
    let (reply, peak) = reader_peak_mb(TEXT, bomb, &PdfBudget::attachment()).await;
    assert!(matches!(reply, Reply::Refused(Breach::PageContent { .. })));
    eprintln!("16 MB content bomb: reader peak {peak} MB");
    assert!(peak < 150, "{peak} MB");
}

#[tokio::test]
async fn pages_that_unpack_to_too_much_together_are_refused() {
    // Twelve pages of 3 MB each: every page within the page limit, 36 MB in all; and twelve
    // pages drawing one shared 3 MB stream, stored once but parsed twelve times.
    for bomb in [spread_bomb(12, 3, false), spread_bomb(12, 3, true)] {
        assert!(bomb.len() < 200_000, "{} bytes on the wire", bomb.len());
        let (breach, text) = refusal(bomb, &Limits::default()).await;
        assert_eq!(breach, Breach::Inflated { max: 32_000_000 });
        assert!(
            text.contains("its contents unpack to more than 32 MB, the limit"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn an_image_of_12000_by_12000_pixels_is_refused_before_it_is_decoded() {
    let bomb = image_bomb(12_000);
    assert!(bomb.len() < 200_000, "{} bytes on the wire", bomb.len());
    // Its text is read without touching the image: a scan.
    let file = pdf_file("scan.pdf", bomb.clone());
    assert!(matches!(
        classify(&file, &Limits::default()).await,
        Ok(Content::ScannedPdf { .. })
    ));
    let (reply, peak) = reader_peak_mb(TEXT, bomb.clone(), &PdfBudget::attachment()).await;
    assert!(
        matches!(reply, Reply::Done(Output::Text { .. })),
        "{reply:?}"
    );
    eprintln!("12000 x 12000 image, text: reader peak {peak} MB");
    assert!(peak < 150, "{peak} MB");
    // Drawing it for a model that reads images is refused by its declared size.
    let started = Instant::now();
    let e = pages::read("scan.pdf", bomb.clone(), &Limits::default())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scan.pdf was not read: it holds a 12000 × 12000 pixel image; the limit is 40 \
         megapixels. Send the pages you need as photos or as a smaller PDF"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let pages_job = Job::Pages { max_pages: 4 };
    let (reply, peak) = reader_peak_mb(pages_job, bomb, &PdfBudget::attachment()).await;
    assert!(matches!(reply, Reply::Refused(Breach::Pixels { .. })));
    eprintln!("12000 x 12000 image, pages: reader peak {peak} MB");
    assert!(peak < 150, "{peak} MB");
    // A 2000 × 2000 image is drawn.
    let fine = pages::read("ok.pdf", image_bomb(2000), &Limits::default())
        .await
        .expect("within the limits");
    assert_eq!(fine.map(|p| p.pngs.len()), Some(1));
}

#[tokio::test]
async fn a_pdf_of_5000_pages_is_refused_and_a_long_one_is_clipped() {
    let (breach, text) = refusal(many_pages(5000), &Limits::default()).await;
    assert_eq!(
        breach,
        Breach::Pages {
            count: 5000,
            max: 500
        }
    );
    assert!(
        text.contains("it has 5000 pages; the limit is 500"),
        "{text}"
    );
    // Within the page limit, reading stops after the page that passes the character limit.
    let limits = Limits {
        max_pdf_chars: 1000,
        ..Limits::default()
    };
    match classify(&pdf_file("long.pdf", many_pages(400)), &limits).await {
        Ok(Content::PdfText { text, clipped, .. }) => {
            assert!(clipped);
            assert_eq!(text.chars().count(), 1000);
            assert!(text.contains("Page 0: circuit 1 kitchen"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

/// A budget with the file checks out of the way, so only the process limits remain.
fn process_limits_only(memory: u64, wall: Duration) -> PdfBudget {
    PdfBudget {
        max_inflated: usize::MAX,
        max_page_content: usize::MAX,
        memory,
        wall,
        ..PdfBudget::attachment()
    }
}

#[tokio::test]
async fn a_reader_that_needs_too_much_memory_is_stopped_and_the_limit_named() {
    // Nothing here unpacks: the font's character map alone expands to 16 million entries.
    let bomb = cmap_bomb();
    assert!(bomb.len() < 1000);
    assert_eq!(
        budget::survey(&bomb, &PdfBudget::attachment(), false),
        Ok(())
    );
    let limits = Limits {
        pdf: process_limits_only(150_000_000, Duration::from_secs(60)),
        ..Limits::default()
    };
    let (breach, text) = refusal(bomb, &limits).await;
    assert_eq!(breach, Breach::Memory { max: 150_000_000 });
    assert!(
        text.contains("reading it needed more than 150 MB of memory, the limit"),
        "{text}"
    );
    // The content bomb with its checks lifted: the same end.
    let (breach, _) = refusal(content_bomb(16), &limits).await;
    assert_eq!(breach, Breach::Memory { max: 150_000_000 });
}

/// Whether a process whose command line contains `marker` is running.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(marker))
}

#[tokio::test]
async fn a_reader_past_its_time_limit_is_abandoned_and_killed() {
    // A wall limit no other test uses marks this reader's command line.
    let wall = Duration::from_millis(1_234);
    let limits = Limits {
        pdf: process_limits_only(4_000_000_000, wall),
        ..Limits::default()
    };
    let started = Instant::now();
    let (breach, text) = refusal(content_bomb(16), &limits).await;
    assert_eq!(breach, Breach::Time { secs: 1 });
    assert!(text.contains("reading it took longer than 1 s"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let marker = "\"nanos\":234000000";
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(marker) {
        assert!(Instant::now() < deadline, "the reader was not killed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_tasks_keep_running_while_bombs_are_read() {
    // A ticker on the same two worker threads: its longest gap shows whether reading blocked
    // them (in-process, each of these held a worker thread for seconds). A control ticker on a
    // plain thread of its own, over the same span, measures what the machine's load alone
    // does to a thread's wake-ups (the readers themselves keep both cores busy): the worker
    // ticker may wait that long, plus a margin far below a blocked read.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let ticker = tokio::spawn(async move {
        let mut longest = Duration::ZERO;
        let mut last = Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(5)).await;
            longest = longest.max(last.elapsed());
            last = Instant::now();
        }
        longest
    });
    let flag = stop.clone();
    let control = std::thread::spawn(move || {
        let mut longest = Duration::ZERO;
        let mut last = Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
            longest = longest.max(last.elapsed());
            last = Instant::now();
        }
        longest
    });
    let limits = Limits {
        pdf: process_limits_only(150_000_000, Duration::from_secs(60)),
        ..Limits::default()
    };
    let files = [
        content_bomb(16),
        cmap_bomb(),
        image_bomb(12_000),
        many_pages(5000),
    ];
    let reads = files
        .into_iter()
        .map(|b| async { classify(&pdf_file("bomb.pdf", b), &limits).await });
    let results = futures::future::join_all(reads).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let longest = ticker.await.expect("ticker");
    let control = control.join().expect("control ticker");
    assert!(
        results
            .iter()
            .all(|r| !matches!(r, Ok(Content::PdfText { .. }))),
        "{results:?}"
    );
    assert!(
        longest < control + Duration::from_millis(250),
        "a tick waited {longest:?}; a plain thread's longest wait meanwhile was {control:?}"
    );
}

#[tokio::test]
async fn a_broken_pdf_is_refused_not_a_crash() {
    let e = classify(
        &pdf_file("x.pdf", b"%PDF-1.7\nnot really".to_vec()),
        &Limits::default(),
    )
    .await;
    assert!(matches!(e, Err(IntakeError::Unsupported { .. })), "{e:?}");
}

#[tokio::test]
async fn ingest_refuses_a_bomb_with_the_document_limits_and_stores_nothing() {
    let (store, dir) = crate::tools_fixture::sqlite().await;
    let bomb = dir.path().join("bomb.pdf");
    std::fs::write(&bomb, content_bomb(20)).expect("write");
    let broken = dir.path().join("broken.pdf");
    std::fs::write(&broken, b"%PDF-1.4 garbage that is not a pdf").expect("write");
    let text = dir.path().join("ok.pdf");
    std::fs::write(&text, many_pages(3)).expect("write");
    for (path, needle) in [
        (
            &bomb,
            "not read: page 1 unpacks to more than 16 MB of drawing instructions, the limit",
        ),
        (&broken, "not a readable PDF"),
    ] {
        let err = sparky::rag::ingest::ingest_files(
            store.as_ref(),
            None,
            &[text.clone(), path.clone()],
            None,
            None,
            false,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains(needle), "{err}");
    }
    // Nothing was stored; the good file alone goes in, a chunk a page.
    let report =
        sparky::rag::ingest::ingest_files(store.as_ref(), None, &[text], None, None, false)
            .await
            .expect("ingest");
    assert_eq!(report.documents_changed, 1);
    assert!(report.chunks >= 1, "{report:?}");
}
