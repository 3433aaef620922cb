//! A Discord thread (or DM channel) as a [`ChatSurface`]: posts, paced edits, confirmation
//! messages with buttons, ephemeral notes through the interaction token, typing indicator.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use serde_json::json;
use serenity::all::{
    ButtonStyle, CreateActionRow, CreateAllowedMentions, CreateButton, CreateEmbed, CreateMessage,
    EditMessage,
};

use super::rest::Rest;
use crate::platforms::render::{clip, ConfirmationView};
use crate::platforms::surface::{ChatSurface, SurfaceError};

/// Discord's message length limit.
pub const MAX_MESSAGE: usize = 2000;
/// Longest embed description.
const MAX_EMBED: usize = 4000;
/// Interaction tokens last 15 minutes; stop using them a little before.
const TOKEN_LIFETIME: Duration = Duration::from_secs(14 * 60);
/// Discord shows "typing" for about 10 s after each call.
const TYPING_EVERY: Duration = Duration::from_secs(8);
/// Embed colour of a pending confirmation (amber).
const PENDING_COLOUR: u32 = 0x00F1_C40F;

/// An interaction whose token may still be used for follow-ups. Its `Debug` leaves the token
/// out: it lets anyone post as the bot for 15 minutes.
#[derive(Clone)]
pub struct InteractionHandle {
    /// Application id (from the interaction).
    pub app_id: String,
    /// Interaction token.
    pub token: String,
    /// When the interaction arrived.
    pub received: Instant,
}

impl std::fmt::Debug for InteractionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractionHandle")
            .field("app_id", &self.app_id)
            .field("token", &"[redacted]")
            .field("received", &self.received)
            .finish()
    }
}

impl InteractionHandle {
    /// Whether the token is still valid.
    pub fn is_fresh(&self) -> bool {
        self.received.elapsed() < TOKEN_LIFETIME
    }
}

/// One Discord thread or DM channel.
pub struct ThreadSurface {
    rest: Rest,
    channel: String,
    interaction: Option<InteractionHandle>,
    last_typing: Mutex<Option<Instant>>,
}

impl ThreadSurface {
    /// A surface posting into `channel`; `interaction` allows ephemeral notes.
    pub fn new(
        rest: Rest,
        channel: impl Into<String>,
        interaction: Option<InteractionHandle>,
    ) -> Self {
        Self {
            rest,
            channel: channel.into(),
            interaction,
            last_typing: Mutex::new(None),
        }
    }

    /// The channel posted into.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Message refs are `channel/message`, so another process can edit them later.
    fn split_ref<'a>(&'a self, message: &'a str) -> (&'a str, &'a str) {
        message
            .split_once('/')
            .unwrap_or((self.channel.as_str(), message))
    }
}

/// No pings from anything the bot writes (model text may contain `@everyone`).
pub fn no_pings() -> CreateAllowedMentions {
    CreateAllowedMentions::new()
        .empty_users()
        .empty_roles()
        .everyone(false)
}

/// Confirm / Cancel buttons of a confirmation.
pub fn confirmation_buttons(view: &ConfirmationView, disabled: bool) -> Vec<CreateActionRow> {
    let mut buttons = vec![
        CreateButton::new(&view.confirm_id)
            .label("Confirm")
            .style(ButtonStyle::Success)
            .disabled(disabled),
        CreateButton::new(&view.cancel_id)
            .label("Cancel")
            .style(ButtonStyle::Danger)
            .disabled(disabled),
    ];
    if let Some(edit) = &view.edit_id {
        buttons.push(
            CreateButton::new(edit)
                .label("Edit")
                .style(ButtonStyle::Secondary)
                .disabled(disabled),
        );
    }
    vec![CreateActionRow::Buttons(buttons)]
}

/// The embed listing every item of a confirmation with its details.
pub fn confirmation_embed(view: &ConfirmationView) -> CreateEmbed {
    let render = |detail_budget: usize| {
        let mut out = String::new();
        for (i, (summary, details)) in view.items.iter().enumerate() {
            out.push_str(&format!("**{}. {}**\n", i + 1, summary));
            let mut used = 0;
            for d in details {
                if used + d.len() > detail_budget {
                    out.push_str("• …\n");
                    break;
                }
                used += d.len();
                out.push_str(&format!("• {d}\n"));
            }
        }
        out.push('\n');
        out.push_str(&mentionize(&view.footer));
        out
    };
    let mut text = render(usize::MAX);
    if text.chars().count() > MAX_EMBED {
        // Keep every item's summary; shorten details evenly.
        let per_item = MAX_EMBED / view.items.len().max(1) / 2;
        text = render(per_item);
        if text.chars().count() > MAX_EMBED {
            text = text.chars().take(MAX_EMBED - 1).collect::<String>() + "…";
        }
    }
    CreateEmbed::new()
        .title(&view.title)
        .description(text)
        .colour(PENDING_COLOUR)
}

/// People the core named, as Discord mentions (shown as names; `allowed_mentions` keeps them
/// from pinging).
pub fn mentionize(text: &str) -> String {
    crate::core::mention::render(text, |id| format!("<@{id}>"))
}

#[async_trait]
impl ChatSurface for ThreadSurface {
    fn platform(&self) -> &'static str {
        "discord"
    }

    // A thread is its own channel on Discord.
    fn address(&self) -> Option<crate::platforms::surface::ThreadAddress> {
        Some(crate::platforms::surface::ThreadAddress {
            channel: self.channel.clone(),
            thread: self.channel.clone(),
        })
    }

    fn max_len(&self) -> usize {
        MAX_MESSAGE
    }

    fn edit_interval(&self) -> Duration {
        Duration::from_secs(1)
    }

    async fn post_file(&self, file: &crate::core::FileAttachment) -> Result<String, SurfaceError> {
        let m = self
            .rest
            .post_file(&self.channel, &file.title, file)
            .await?;
        Ok(format!("{}/{}", m.channel, m.id))
    }

    async fn post_text(&self, text: &str) -> Result<String, SurfaceError> {
        let body = CreateMessage::new()
            .content(mentionize(text))
            .allowed_mentions(no_pings());
        let m = self.rest.post_message(&self.channel, &body).await?;
        Ok(format!("{}/{}", m.channel, m.id))
    }

    async fn edit_text(&self, message: &str, text: &str) -> Result<(), SurfaceError> {
        let (channel, id) = self.split_ref(message);
        let body = EditMessage::new()
            .content(mentionize(text))
            .allowed_mentions(no_pings());
        self.rest.edit_message(channel, id, &body).await
    }

    async fn post_confirmation(&self, view: &ConfirmationView) -> Result<String, SurfaceError> {
        let body = CreateMessage::new()
            .embed(confirmation_embed(view))
            .components(confirmation_buttons(view, false))
            .allowed_mentions(no_pings());
        let m = self.rest.post_message(&self.channel, &body).await?;
        Ok(format!("{}/{}", m.channel, m.id))
    }

    async fn close_confirmation(
        &self,
        message: &str,
        outcome: &str,
        details: &[String],
    ) -> Result<(), SurfaceError> {
        let text = mentionize(
            &std::iter::once(outcome)
                .chain(details.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let (channel, id) = self.split_ref(message);
        // Replacing the components with disabled ones keeps the ids (unused) and shows that
        // the buttons are spent; the embed listing the items stays as it was.
        let body = json!({
            "content": clip(&text, MAX_MESSAGE),
            "components": [{"type": 1, "components": [
                {"type": 2, "style": 3, "label": "Confirm", "custom_id": format!("{id}:spent:confirm"), "disabled": true},
                {"type": 2, "style": 4, "label": "Cancel", "custom_id": format!("{id}:spent:cancel"), "disabled": true}
            ]}],
            "allowed_mentions": {"parse": []},
        });
        self.rest.edit_message(channel, id, &body).await
    }

    async fn private(&self, user: &str, text: &str) -> Result<(), SurfaceError> {
        let text = clip(&mentionize(text), MAX_MESSAGE);
        match &self.interaction {
            Some(i) if i.is_fresh() => {
                let body = json!({"content": text, "flags": 64, "allowed_mentions": {"parse": []}});
                self.rest
                    .followup(&i.app_id, &i.token, &body)
                    .await
                    .map(|_| ())
            }
            // No interaction to answer privately: address the person in the thread.
            _ => {
                let body = json!({"content": format!("<@{user}> {text}"), "allowed_mentions": {"users": [user]}});
                self.rest
                    .post_message(&self.channel, &body)
                    .await
                    .map(|_| ())
            }
        }
    }

    async fn working(&self, _status: &str) {
        let due = match self.last_typing.lock() {
            Ok(mut last) => {
                let due = last.is_none_or(|t| t.elapsed() >= TYPING_EVERY);
                if due {
                    *last = Some(Instant::now());
                }
                due
            }
            Err(_) => false,
        };
        if due {
            if let Err(e) = self.rest.typing(&self.channel).await {
                tracing::debug!(error = %e, "typing indicator failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_people_become_mentions_but_numbers_do_not() {
        let by = crate::core::UserRef::new("1300000000000000001");
        assert_eq!(
            mentionize(&format!("This change was already executed by {by}.")),
            "This change was already executed by <@1300000000000000001>."
        );
        assert_eq!(
            mentionize("240 V, 12.5 A, 1033044521375764530"),
            "240 V, 12.5 A, 1033044521375764530"
        );
    }

    #[test]
    fn the_embed_lists_every_item_even_when_long() {
        let items: Vec<(String, Vec<String>)> = (0..30)
            .map(|i| {
                (
                    format!("Add circuit {i}"),
                    vec!["x".repeat(400), "y".repeat(400)],
                )
            })
            .collect();
        let view = ConfirmationView {
            title: "Proposed changes (30)".into(),
            items,
            footer: "alice can confirm.".into(),
            confirm_id: "sparky:confirm:a".into(),
            cancel_id: "sparky:cancel:a".into(),
            edit_id: None,
        };
        let v = serde_json::to_value(confirmation_embed(&view)).unwrap();
        let d = v["description"].as_str().unwrap();
        assert!(d.chars().count() <= MAX_EMBED);
        assert!(d.contains("Add circuit 0") && d.contains("Add circuit 29"));
    }

    #[test]
    fn buttons_carry_the_shared_ids_and_styles() {
        let mut view = ConfirmationView {
            title: "Proposed change".into(),
            items: Vec::new(),
            footer: String::new(),
            confirm_id: "sparky:confirm:a".into(),
            cancel_id: "sparky:cancel:a".into(),
            edit_id: None,
        };
        let rows = serde_json::to_value(confirmation_buttons(&view, false)).unwrap();
        assert_eq!(rows[0]["components"][0]["custom_id"], "sparky:confirm:a");
        assert_eq!(rows[0]["components"][0]["style"], 3);
        assert_eq!(rows[0]["components"][1]["style"], 4);
        assert_eq!(rows[0]["components"].as_array().map(Vec::len), Some(2));
        view.edit_id = Some("sparky:edit:a".into());
        let rows = serde_json::to_value(confirmation_buttons(&view, false)).unwrap();
        assert_eq!(rows[0]["components"][2]["custom_id"], "sparky:edit:a");
        assert_eq!(rows[0]["components"][2]["style"], 2);
    }
}
