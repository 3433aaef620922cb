//! Platform adapters: translate platform events into core inputs and render core effects.
//! They hold no business rules.
//!
//! Layer: the top. Adapters import the core (inputs, effects, operations), `config` and `domain`;
//! the arrows point down only (platforms -> core -> tools -> domain engines and store).

pub mod console;
pub mod delivery;
pub mod discord;
pub mod link;
pub mod render;
pub mod replay;
pub mod slack;
pub mod surface;

use std::sync::Arc;

use crate::config::Config;
use crate::core::session::SessionKey;
use crate::core::{Agent, EffectSink};
use crate::platforms::surface::{ChatSurface, SurfaceSink};

/// Builds, from a session key alone, a sink that renders into that thread: how a process
/// tells a thread that a turn of a stopped process was closed. `None` for platforms that are
/// not configured here (and for the console, which has no thread to write to later).
pub type RecoverySinks = dyn Fn(&SessionKey) -> Option<Box<dyn EffectSink>> + Send + Sync;

/// Builds, from a platform, channel and thread alone, that thread's surface; `None` for a
/// platform not configured here.
pub type ThreadSurfaces = dyn Fn(&str, &str, &str) -> Option<Box<dyn ChatSurface>> + Send + Sync;

/// The [`RecoverySinks`] of the configured platforms.
pub fn recovery_sinks(agent: &Arc<Agent>, config: &Config) -> Box<RecoverySinks> {
    let (cards, outbox) = (agent.confirmation_cards(), agent.outbox());
    let surfaces = thread_surfaces(config);
    Box::new(move |key: &SessionKey| -> Option<Box<dyn EffectSink>> {
        let surface = surfaces(&key.platform, &key.channel, &key.thread)?;
        Some(Box::new(SurfaceSink::new(
            surface,
            cards.clone(),
            outbox.clone(),
        )))
    })
}

/// The [`ThreadSurfaces`] of the configured platforms.
pub fn thread_surfaces(config: &Config) -> Box<ThreadSurfaces> {
    let slack = match (&config.secrets.slack_bot_token, config.slack.enabled) {
        (Some(token), true) => Some((
            Arc::new(slack::SlackApi::new(
                &config.slack.api_base_url,
                token.expose(),
            )),
            config.slack.clone(),
        )),
        _ => None,
    };
    let discord = match (&config.secrets.discord_token, config.discord.enabled) {
        (Some(token), true) => discord::rest::Rest::new(
            &config.discord.api_base_url,
            token.expose().trim_start_matches("Bot "),
        )
        .ok(),
        _ => None,
    };
    Box::new(
        move |platform: &str, channel: &str, thread: &str| -> Option<Box<dyn ChatSurface>> {
            match platform {
                slack::PLATFORM => {
                    let (api, cfg) = slack.as_ref()?;
                    Some(Box::new(slack::SlackThread::new(
                        api.clone(),
                        slack::ThreadTarget {
                            channel: channel.to_string(),
                            thread_ts: thread.to_string(),
                            react_to: None,
                        },
                        std::time::Duration::from_millis(cfg.edit_interval_ms),
                        &cfg.working_reaction,
                    )))
                }
                discord::PLATFORM => {
                    let rest = discord.as_ref()?;
                    Some(Box::new(discord::surface::ThreadSurface::new(
                        rest.clone(),
                        thread,
                        None,
                    )))
                }
                _ => None,
            }
        },
    )
}
