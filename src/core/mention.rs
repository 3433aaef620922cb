//! People named in text the core writes ("only alice can confirm", "cancelled by bob").
//!
//! The core writes a [`UserRef`] into its sentences; it travels inside the text as the
//! platform's user id between two reserved characters, and each front end renders it in its
//! own syntax (`<@U…>` on Slack, `<@id>` on Discord, the bare id on the console) through
//! [`render`]. Text from outside (the model, users, documents) never carries the markers:
//! [`strip`] removes them, so nobody can forge a mention.

use std::fmt;

use serde::Serialize;

/// Opens a user reference inside text (Unicode interlinear annotation anchor, never typed).
const OPEN: char = '\u{FFF9}';
/// Closes a user reference.
const CLOSE: char = '\u{FFFB}';
/// Longest id accepted inside the markers.
const MAX_ID: usize = 64;

/// A person, by platform user id, to be shown as a mention.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct UserRef(String);

impl UserRef {
    /// A reference to the user with platform id `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The platform user id.
    pub fn id(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserRef {
    /// Writes the reference in its in-text form; ids that could not be rendered safely are
    /// written as plain text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if is_id(&self.0) {
            write!(f, "{OPEN}{}{CLOSE}", self.0)
        } else {
            f.write_str(&strip(&self.0))
        }
    }
}

/// Ids are short runs of letters, digits and `_ . -` (Slack `U0ALICE0001`, Discord
/// snowflakes, console names).
fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Replaces every user reference in `text` with `mention(id)`; stray markers are dropped.
pub fn render(text: &str, mention: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start].replace(CLOSE, ""));
        let after = &rest[start + OPEN.len_utf8()..];
        match after.find(CLOSE) {
            Some(end) if is_id(&after[..end]) => {
                out.push_str(&mention(&after[..end]));
                rest = &after[end + CLOSE.len_utf8()..];
            }
            _ => rest = after,
        }
    }
    out.push_str(&rest.replace(CLOSE, ""));
    out
}

/// `text` with user references written as bare ids (logs, the console, the model).
pub fn plain(text: &str) -> String {
    render(text, str::to_string)
}

/// Removes mentions of the bot from a message as the platform sent it (`<@ID>`, and Discord's
/// nickname form `<@!ID>`), so the core sees what the person asked. When the bot's id is not
/// known yet, a leading mention (how people address the bot) is dropped. One rule for every
/// platform's messages.
pub fn strip_bot(text: &str, bot: Option<&str>) -> String {
    match bot {
        Some(bot) => text
            .replace(&format!("<@{bot}>"), "")
            .replace(&format!("<@!{bot}>"), "")
            .trim()
            .to_string(),
        None => {
            let t = text.trim_start();
            t.strip_prefix("<@")
                .and_then(|rest| rest.split_once('>'))
                .map_or(t, |(_, after)| after)
                .trim()
                .to_string()
        }
    }
}

/// Removes the reference markers from text that came from outside the core.
pub fn strip(text: &str) -> String {
    if text.contains([OPEN, CLOSE]) {
        text.replace([OPEN, CLOSE], "")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_render_in_each_syntax() {
        let text = format!("Only {} can confirm.", UserRef::new("U0ALICE0001"));
        assert_eq!(
            render(&text, |id| format!("<@{id}>")),
            "Only <@U0ALICE0001> can confirm."
        );
        assert_eq!(plain(&text), "Only U0ALICE0001 can confirm.");
        let text = format!("executed by {}.", UserRef::new("1300000000000000001"));
        assert_eq!(
            render(&text, |id| format!("<@{id}>")),
            "executed by <@1300000000000000001>."
        );
    }

    #[test]
    fn forged_or_broken_markers_mention_nobody() {
        let forged = format!("hi {OPEN}U0BOSS{CLOSE} there");
        let clean = strip(&forged);
        assert_eq!(clean, "hi U0BOSS there");
        assert_eq!(render(&clean, |id| format!("<@{id}>")), clean);
        // Unclosed, empty or hostile ids inside markers are not rendered as mentions.
        for bad in [
            format!("a {OPEN}U1"),
            format!("a {OPEN}{CLOSE}b"),
            format!("a {OPEN}U1> <!channel{CLOSE}"),
            format!("{CLOSE}{CLOSE}{OPEN}"),
        ] {
            let r = render(&bad, |id| format!("<@{id}>"));
            assert!(!r.contains("<@"), "{bad:?} -> {r:?}");
            assert!(!r.contains([OPEN, CLOSE]), "{bad:?} -> {r:?}");
        }
        assert_eq!(UserRef::new("<!channel>").to_string(), "<!channel>");
    }
}
