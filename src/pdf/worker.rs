//! The reader process: a PDF is read by a child process of the bot (the same binary, started
//! with [`WORKER_ARG`]) that limits its own memory and CPU time before it reads a byte, and is
//! killed when the wall-clock limit passes. What the readers allocate and how long they spin
//! can then never reach the bot's memory or its async worker threads; a reader that hits a
//! limit ends, and the person is told which.
//!
//! The protocol: the request (job and budget) as one JSON argument, the PDF on stdin, the
//! [`Response`] as JSON on stdout. The child's environment is emptied (but for one allocator
//! setting), so a process parsing untrusted files holds none of the bot's secrets.

use std::ffi::{OsStr, OsString};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

use super::budget::{Breach, PdfBudget};
use super::reader::{self, Job, Reply};

/// The first argument that makes the binary a reader process.
pub const WORKER_ARG: &str = "__sparky-read-pdf";

/// Readers running at once: with the memory limit, what PDFs can cost the host together.
pub const MAX_READERS: usize = 2;

/// Names the binary to start as the reader when the running program is not `sparky` itself.
pub const READER_ENV: &str = "SPARKY_PDF_READER";

static READERS: Semaphore = Semaphore::const_new(MAX_READERS);

#[derive(Serialize, Deserialize)]
struct Request {
    job: Job,
    budget: PdfBudget,
}

/// What a reader process answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The result.
    pub reply: Reply,
    /// The reader's peak resident memory, kB (Linux), for logs and tests.
    pub peak_rss_kb: Option<u64>,
}

/// Runs the reader when this process was started as one; `main` calls this first, before any
/// runtime, configuration or logging exists.
pub fn main_if_worker() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(WORKER_ARG)) {
        return None;
    }
    Some(serve(args.next()))
}

fn serve(request: Option<OsString>) -> ExitCode {
    let request = request
        .as_deref()
        .and_then(OsStr::to_str)
        .and_then(|r| serde_json::from_str::<Request>(r).ok());
    let Some(request) = request else {
        return ExitCode::FAILURE;
    };
    limit_self(&request.budget);
    let mut bytes = Vec::new();
    if std::io::stdin().read_to_end(&mut bytes).is_err() {
        return ExitCode::FAILURE;
    }
    let reply = reader::run(request.job, &bytes, &request.budget);
    drop(bytes);
    let response = Response {
        reply,
        peak_rss_kb: peak_rss_kb(),
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &response).map(|()| out.flush()) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Data size (the heap: every allocation, whether from brk or private writable mappings;
/// unlike the address space it does not count the binary's mapped code, which in a debug
/// build alone passes a gigabyte), CPU seconds, and no core file (a killed reader would otherwise write up to
/// its memory limit to disk). A limit already lower is kept.
#[cfg(unix)]
fn limit_self(budget: &PdfBudget) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let cpu = budget.cpu.as_secs().max(1);
    for (resource, soft, hard) in [
        (Resource::Core, 0, 0),
        (Resource::Data, budget.memory, budget.memory),
        // Past the soft limit SIGXCPU ends the process; the hard limit is the backstop.
        (Resource::Cpu, cpu, cpu + 1),
    ] {
        let ceiling = getrlimit(resource).maximum.unwrap_or(u64::MAX);
        let _ = setrlimit(
            resource,
            Rlimit {
                current: Some(soft.min(ceiling)),
                maximum: Some(hard.min(ceiling)),
            },
        );
    }
}

#[cfg(not(unix))]
fn limit_self(_: &PdfBudget) {}

/// VmHWM of /proc/self/status.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The binary to start as the reader: `SPARKY_PDF_READER`, else the running program when it
/// is `sparky`, else the `sparky` built next to the test or bench binary running this
/// (`target/<profile>/deps/..`).
fn reader_exe() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(READER_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    if exe.file_stem() == Some(OsStr::new("sparky")) {
        return Ok(exe);
    }
    exe.parent()
        .and_then(Path::parent)
        .map(|dir| dir.join(format!("sparky{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file())
        .ok_or_else(|| format!("set {READER_ENV} to the sparky binary"))
}

/// Has a reader process do `job` on `bytes` within `budget`. A limit the process hit comes back
/// as `Err` with the limit; the async caller only waits.
pub async fn read(job: Job, bytes: Vec<u8>, budget: &PdfBudget) -> Result<Response, Breach> {
    let exe = reader_exe().map_err(Breach::Unavailable)?;
    let request = serde_json::to_string(&Request {
        job,
        budget: *budget,
    })
    .map_err(|e| Breach::Unavailable(e.to_string()))?;
    let time = Breach::Time {
        secs: budget.wall.as_secs(),
    };
    // On timeout the future is dropped, and with it the child, which is then killed.
    let output = tokio::time::timeout(budget.wall, run_child(&exe, &request, bytes, budget))
        .await
        .map_err(|_| time)?
        .map_err(|e| Breach::Unavailable(e.to_string()))?;
    let budget = *budget;
    // Decoding the answer (pages are megabytes of base64) is CPU work: off the async workers.
    tokio::task::spawn_blocking(move || interpret(&output, &budget))
        .await
        .map_err(|e| Breach::Unavailable(e.to_string()))?
}

/// What a reader process printed and how it ended.
struct Ended {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: std::process::ExitStatus,
}

/// Most of the reader's error output kept: a panic message may quote a whole object.
const STDERR_KEPT: u64 = 64 * 1024;

async fn run_child(
    exe: &Path,
    request: &str,
    bytes: Vec<u8>,
    budget: &PdfBudget,
) -> std::io::Result<Ended> {
    let _permit = READERS
        .acquire()
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut child = tokio::process::Command::new(exe)
        .arg(WORKER_ARG)
        .arg(request)
        .env_clear()
        // mimalloc (the binary's allocator) otherwise maps a 1 GiB arena at its first
        // allocation, before the limit is set: counted in the data size yet usable past it.
        .env("MIMALLOC_ARENA_RESERVE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child.stdin.take();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A reader that stops early closes its end; that is its answer, not an error here.
            let _ = stdin.write_all(&bytes).await;
        }
    };
    // The answer can be no larger than the reader's memory; more is not kept.
    let stdout = capped(child.stdout.take(), budget.memory);
    let stderr = capped(child.stderr.take(), STDERR_KEPT);
    let (_, stdout, stderr, status) = tokio::join!(feed, stdout, stderr, child.wait());
    Ok(Ended {
        stdout,
        stderr,
        status: status?,
    })
}

/// Up to `max` bytes of `from`, the rest read and dropped so the writer never blocks.
async fn capped(from: Option<impl tokio::io::AsyncRead + Unpin>, max: u64) -> Vec<u8> {
    let mut kept = Vec::new();
    if let Some(mut from) = from {
        let _ = (&mut from).take(max).read_to_end(&mut kept).await;
        let _ = tokio::io::copy(&mut from, &mut tokio::io::sink()).await;
    }
    kept
}

/// The reader's answer, or the limit that ended it: an allocation refused past the memory
/// limit aborts with Rust's "memory allocation of N bytes failed"; the CPU limit ends it with
/// SIGXCPU (or SIGKILL at the hard limit). Any other end is a file the readers choke on.
fn interpret(output: &Ended, budget: &PdfBudget) -> Result<Response, Breach> {
    if let Ok(response) = serde_json::from_slice::<Response>(&output.stdout) {
        return Ok(response);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("memory allocation of") {
        return Err(Breach::Memory { max: budget.memory });
    }
    if cpu_limited(&output.status) {
        return Err(Breach::Time {
            secs: budget.cpu.as_secs(),
        });
    }
    tracing::debug!(status = %output.status, stderr = %stderr.chars().take(500).collect::<String>(), "the PDF reader ended without an answer");
    Ok(Response {
        reply: Reply::Unreadable,
        peak_rss_kb: None,
    })
}

#[cfg(unix)]
fn cpu_limited(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    // SIGXCPU is 24 on Linux and the BSDs, SIGKILL 9.
    matches!(status.signal(), Some(24 | 9))
}

#[cfg(not(unix))]
fn cpu_limited(_: &std::process::ExitStatus) -> bool {
    false
}
