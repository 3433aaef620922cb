//! Logs (tracing) and Prometheus metrics.
//!
//! Layer: foundation. Logs and metrics every layer may emit; it imports only `config`, and what
//! it counts is named by the layer that owns the value (see [`ConfirmationOutcome`]).

use std::sync::OnceLock;

use prometheus::{
    HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

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
    /// Inputs received, by platform and kind (message, confirm, cancel).
    pub inputs: IntCounterVec,
    /// Turns ended, by outcome (ok, error, interrupted).
    pub turns: IntCounterVec,
    /// Model calls, by provider and result (ok, error).
    pub model_calls: IntCounterVec,
    /// Model tokens, by provider and direction (input, cached_input, output).
    pub tokens: IntCounterVec,
    /// Tool executions, by tool and outcome (ok, error).
    pub tool_calls: IntCounterVec,
    /// Confirmations resolved, by outcome (executed, failed, cancelled, superseded, expired,
    /// refused, already_resolved).
    pub confirmations: IntCounterVec,
    /// Seconds from an input's admission to the end of its turn, by platform.
    pub turn_seconds: HistogramVec,
    /// Seconds of one streamed model call, by provider.
    pub model_seconds: HistogramVec,
    /// Inputs waiting for a turn slot of this process.
    pub turns_queued: IntGauge,
    /// Turns running in this process.
    pub turns_in_flight: IntGauge,
    /// Platform API calls that failed, by platform and kind (error, rate_limited).
    pub platform_errors: IntCounterVec,
    /// Platforms by state (1 for the current state of each: starting, running, retrying,
    /// failed, disabled).
    pub platform_up: IntGaugeVec,
    /// 429 answers of a platform waited out (by a call's retries or by the outbox), by
    /// platform.
    pub rate_limit_waits: IntCounterVec,
    /// Messages through the outbox, by platform and outcome (queued, delivered, expired,
    /// failed).
    pub outbound_messages: IntCounterVec,
}

/// Latency buckets from 5 ms to 2 min.
const SECONDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// The global metrics.
pub fn metrics() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| {
        let registry = Registry::new();
        let register = |c: Box<dyn prometheus::core::Collector>, name: &str| {
            if let Err(e) = registry.register(c) {
                panic!("metric {name} registered twice: {e}");
            }
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| panic!("metric {name} is malformed: {e}"));
            register(Box::new(c.clone()), name);
            c
        };
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(SECONDS.to_vec()),
                labels,
            )
            .unwrap_or_else(|e| panic!("metric {name} is malformed: {e}"));
            register(Box::new(h.clone()), name);
            h
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help)
                .unwrap_or_else(|e| panic!("metric {name} is malformed: {e}"));
            register(Box::new(g.clone()), name);
            g
        };
        let platform_up = IntGaugeVec::new(
            Opts::new(
                "sparky_platform_state",
                "1 for each platform's current state",
            ),
            &["platform", "state"],
        )
        .unwrap_or_else(|e| panic!("metric sparky_platform_state is malformed: {e}"));
        register(Box::new(platform_up.clone()), "sparky_platform_state");
        Metrics {
            inputs: counter(
                "sparky_inputs_total",
                "Inputs received by platform and kind",
                &["platform", "kind"],
            ),
            turns: counter("sparky_turns_total", "Turns ended by outcome", &["outcome"]),
            model_calls: counter(
                "sparky_model_calls_total",
                "Model calls by provider and result",
                &["provider", "result"],
            ),
            tokens: counter(
                "sparky_model_tokens_total",
                "Model tokens by provider and direction",
                &["provider", "direction"],
            ),
            tool_calls: counter(
                "sparky_tool_calls_total",
                "Tool executions by tool and outcome",
                &["tool", "outcome"],
            ),
            confirmations: counter(
                "sparky_confirmations_total",
                "Proposed changes resolved, by outcome",
                &["outcome"],
            ),
            turn_seconds: histogram(
                "sparky_turn_seconds",
                "Seconds from admission to the end of a turn",
                &["platform"],
            ),
            model_seconds: histogram(
                "sparky_model_call_seconds",
                "Seconds of one streamed model call",
                &["provider"],
            ),
            turns_queued: gauge(
                "sparky_turns_queued",
                "Inputs waiting for a turn slot of this process",
            ),
            turns_in_flight: gauge("sparky_turns_in_flight", "Turns running in this process"),
            platform_errors: counter(
                "sparky_platform_api_errors_total",
                "Platform API calls that failed, by platform and kind",
                &["platform", "kind"],
            ),
            platform_up,
            rate_limit_waits: counter(
                "sparky_platform_rate_limit_waits_total",
                "Platform 429 answers waited out before sending again, by platform",
                &["platform"],
            ),
            outbound_messages: counter(
                "sparky_outbound_messages_total",
                "Messages a platform refused for now, kept and delivered later, by platform and outcome",
                &["platform", "outcome"],
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

/// Something that may report how a proposed change was resolved (the core's effects do).
/// Telemetry only counts; the layer that owns the value names the outcome.
pub trait ConfirmationOutcome {
    /// The outcome's metric label ("executed", "refused", ...), or `None` when this is not
    /// the resolution of a proposed change.
    fn confirmation_outcome(&self) -> Option<&'static str>;
}

/// Counts what an effect reports: how proposed changes were resolved.
pub fn observe_effect(effect: &impl ConfirmationOutcome) {
    if let Some(outcome) = effect.confirmation_outcome() {
        metrics().confirmations.with_label_values(&[outcome]).inc();
    }
}
