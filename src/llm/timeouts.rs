//! How long a model call may take, stage by stage, and which stage ran out.
//!
//! One number for a whole call fits a hosted API, not a model on a CPU: such a server may
//! think for minutes before its first token (it reads the whole prompt first), then streams
//! steadily. So connecting, the wait for the first byte, each silence of a running stream and
//! the whole call are bounded apart, and a timeout says which bound it was and which setting
//! raises it.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::LlmConfig;

/// A stage of a model call that can run out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutStage {
    /// Opening the connection to the model server.
    Connect,
    /// From sending the request to the first byte of the answer (headers and first chunk):
    /// the time the server spends reading the prompt.
    FirstByte,
    /// A silence between two chunks of a stream that had started.
    Idle,
    /// The whole call, retries included.
    Overall,
    /// The model server itself gave up on the request (HTTP 408).
    Server,
}

impl TimeoutStage {
    /// The `[llm]` setting that bounds this stage, when one does.
    pub fn setting(self) -> Option<&'static str> {
        match self {
            Self::Connect => Some("llm.connect_timeout_secs"),
            Self::FirstByte => Some("llm.first_byte_timeout_secs"),
            Self::Idle => Some("llm.idle_timeout_secs"),
            Self::Overall => Some("llm.overall_timeout_secs"),
            Self::Server => None,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Connect => "could not connect to the model server",
            Self::FirstByte => "the model server sent nothing back",
            Self::Idle => "the model's answer stopped",
            Self::Overall => "the model's answer took too long",
            Self::Server => "the model server gave up on the request",
        }
    }
}

/// Which bound a model call ran out of, and after how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut {
    /// The stage.
    pub stage: TimeoutStage,
    /// The bound that was reached (zero for [`TimeoutStage::Server`]).
    pub after: Duration,
}

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = self.stage.what();
        match self.stage.setting() {
            Some(setting) => write!(
                f,
                "{what} within {} s ({setting})",
                self.after.as_secs_f64().ceil() as u64
            ),
            None => write!(f, "{what} (HTTP 408)"),
        }
    }
}

/// The bounds of one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTimeouts {
    /// Opening a connection.
    pub connect: Duration,
    /// From sending the request to the first byte of the answer.
    pub first_byte: Duration,
    /// Longest silence between two chunks once the answer streams.
    pub idle: Duration,
    /// The whole call, from the first attempt to the end of its stream.
    pub overall: Duration,
}

impl StreamTimeouts {
    /// A cap that never ends a call: a century.
    pub const NO_CAP: Duration = Duration::from_secs(100 * 365 * 86_400);

    /// `bound` for connecting, the first byte and every gap, and no cap on the whole call
    /// (a long answer that keeps streaming is never cut): what one number always meant here.
    pub fn uniform(bound: Duration) -> Self {
        Self {
            connect: bound,
            first_byte: bound,
            idle: bound,
            overall: Self::NO_CAP,
        }
    }

    /// The bounds of the `[llm]` section. No stage waits longer than the whole call may, so
    /// a small overall cap (or the deprecated `request_timeout_secs` that sets it) tightens
    /// the others too.
    pub fn from_config(llm: &LlmConfig) -> Self {
        let secs = |s: u64| Duration::from_secs(s.max(1));
        let overall = secs(llm.overall_timeout());
        Self {
            connect: secs(llm.connect_timeout_secs).min(overall),
            first_byte: secs(llm.first_byte_timeout_secs).min(overall),
            idle: secs(llm.idle_timeout_secs).min(overall),
            overall,
        }
    }

    /// The error for running out of `stage`'s bound.
    pub fn error(&self, stage: TimeoutStage) -> super::LlmError {
        let after = match stage {
            TimeoutStage::Connect => self.connect,
            TimeoutStage::FirstByte => self.first_byte,
            TimeoutStage::Idle => self.idle,
            TimeoutStage::Overall => self.overall,
            TimeoutStage::Server => Duration::ZERO,
        };
        super::LlmError::Timeout(TimedOut { stage, after })
    }
}

impl From<Duration> for StreamTimeouts {
    fn from(bound: Duration) -> Self {
        Self::uniform(bound)
    }
}

/// The deadlines of one model call as it goes: the first byte of the current attempt, then
/// each gap once something arrived, never past the whole call's cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallClock {
    timeouts: StreamTimeouts,
    overall_at: Instant,
    /// Until the first piece of the current attempt arrives.
    first_at: Option<Instant>,
}

impl CallClock {
    /// A call starting now.
    pub(crate) fn start(timeouts: StreamTimeouts) -> Self {
        let now = Instant::now();
        Self {
            timeouts,
            overall_at: now + timeouts.overall,
            first_at: Some(now + timeouts.first_byte),
        }
    }

    /// A new attempt of the same call: its own first-byte bound, the call's cap.
    pub(crate) fn attempt(&self) -> Self {
        Self {
            first_at: Some(Instant::now() + self.timeouts.first_byte),
            ..*self
        }
    }

    /// Something arrived: from now on each gap is bounded.
    pub(crate) fn seen(&mut self) {
        self.first_at = None;
    }

    /// When the next piece is due, and which bound that is.
    fn deadline(&self) -> (Instant, TimeoutStage) {
        let gap = match self.first_at {
            Some(at) => (at, TimeoutStage::FirstByte),
            None => (Instant::now() + self.timeouts.idle, TimeoutStage::Idle),
        };
        if self.overall_at <= gap.0 {
            (self.overall_at, TimeoutStage::Overall)
        } else {
            gap
        }
    }

    /// Waits for `work` until the next deadline; past it, the timeout of that bound.
    pub(crate) async fn within<F: Future>(&self, work: F) -> Result<F::Output, super::LlmError> {
        let (at, stage) = self.deadline();
        tokio::time::timeout_at(at, work)
            .await
            .map_err(|_| self.timeouts.error(stage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stage bounds default to what a model on a CPU needs, and the deprecated
    /// `request_timeout_secs`, from a file or the environment, still caps the whole call.
    #[test]
    fn model_timeouts_default_for_a_slow_server_and_the_old_name_still_caps() {
        use crate::config::Config;
        let env = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let c = Config::load(None, &env(&[])).unwrap();
        let t = StreamTimeouts::from_config(&c.llm);
        assert_eq!(t.connect, Duration::from_secs(10));
        assert_eq!(t.first_byte, Duration::from_secs(300));
        assert_eq!(t.idle, Duration::from_secs(120));
        assert_eq!(t.overall, Duration::from_secs(900));
        let c = Config::load(None, &env(&[("SPARKY_LLM__REQUEST_TIMEOUT_SECS", "30")])).unwrap();
        let t = StreamTimeouts::from_config(&c.llm);
        assert_eq!(t.overall, Duration::from_secs(30));
        assert_eq!(t.first_byte, Duration::from_secs(30));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.toml");
        std::fs::write(&path, "[llm]\nrequest_timeout_secs = 90\n").unwrap();
        let c = Config::load(Some(&path), &env(&[])).unwrap();
        assert_eq!(c.llm.overall_timeout(), 90);
        let e = Config::load(None, &env(&[("SPARKY_LLM__FIRST_BYTE_TIMEOUT_SECS", "0")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("llm.first_byte_timeout_secs must be at least 1"),
            "{e}"
        );
    }

    #[test]
    fn a_timeout_names_its_stage_and_setting() {
        let t = StreamTimeouts::uniform(Duration::from_millis(300_500));
        let text = t.error(TimeoutStage::FirstByte).to_string();
        assert!(text.contains("301 s"), "{text}");
        assert!(text.contains("llm.first_byte_timeout_secs"), "{text}");
        let text = t.error(TimeoutStage::Server).to_string();
        assert!(text.contains("408"), "{text}");
    }
}
