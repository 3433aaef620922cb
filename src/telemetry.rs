//! Logs (tracing) and Prometheus metrics.

use std::sync::OnceLock;

use prometheus::{IntCounterVec, Opts, Registry};

use crate::config::{LogConfig, LogFormat};

/// Installs the tracing subscriber: human lines on a terminal, JSON otherwise. Logs go to stderr.
pub fn init_logging(cfg: &LogConfig, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if quiet { "warn" } else { cfg.filter.as_str() };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let json = match cfg.format {
        LogFormat::Json => true,
        LogFormat::Human => false,
        LogFormat::Auto => !is_terminal::is_terminal(std::io::stderr()),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) is harmless.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// The process's metrics.
pub struct Metrics {
    /// Prometheus registry served at /metrics.
    pub registry: Registry,
    /// Inputs handled, by kind.
    pub inputs: IntCounterVec,
    /// Tool executions, by tool and result.
    pub tool_calls: IntCounterVec,
    /// Model tokens, by direction.
    pub tokens: IntCounterVec,
}

/// The global metrics.
pub fn metrics() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| panic!("metric {name} is malformed: {e}"));
            if let Err(e) = registry.register(Box::new(c.clone())) {
                panic!("metric {name} registered twice: {e}");
            }
            c
        };
        Metrics {
            inputs: counter("sparky_inputs_total", "Inputs handled by kind", &["kind"]),
            tool_calls: counter(
                "sparky_tool_calls_total",
                "Tool executions by tool and result",
                &["tool", "result"],
            ),
            tokens: counter(
                "sparky_model_tokens_total",
                "Model tokens by direction",
                &["direction"],
            ),
            registry,
        }
    })
}

/// Renders the metrics in Prometheus text format.
pub fn render_metrics() -> String {
    let encoder = prometheus::TextEncoder::new();
    encoder
        .encode_to_string(&metrics().registry.gather())
        .unwrap_or_else(|e| format!("# metrics unavailable: {e}\n"))
}
