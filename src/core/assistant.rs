//! Assistant threads (Slack's split-view AI app): a thread in the app's direct-message channel
//! that works on the project of the channel the person is viewing (its *context channel*).
//!
//! The thread is an ordinary session (same turn loop, gate and cards); what is particular is
//! decided here: which project it sees (the context channel's binding, in the thread's own
//! workspace only), which questions it offers when it opens, and its title after the first
//! question. The context is remembered in the store, so a restart or another replica keeps it.

use super::session::{Mode, SessionKey};
use super::starters::{self, Starters};
use super::{Agent, CoreError};

/// Longest thread title, in characters.
const MAX_TITLE: usize = 60;

/// The title of a thread whose first question is `question`: its first line, cut at a word
/// boundary to at most [`MAX_TITLE`] characters.
pub fn title_for(question: &str) -> String {
    let line = question
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut title = String::new();
    for w in &words {
        let extra = usize::from(!title.is_empty()) + w.chars().count();
        if title.chars().count() + extra > MAX_TITLE {
            if title.is_empty() {
                title = w.chars().take(MAX_TITLE).collect();
            }
            title.push('…');
            return title;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(w);
    }
    if title.is_empty() {
        "New conversation".into()
    } else {
        title
    }
}

impl Agent {
    /// Binds the thread `key` to the project of `context_channel` (a channel of the thread's
    /// own workspace) when that channel has one; the thread keeps its project otherwise.
    /// Returns the thread's project and whether it changed.
    async fn bind_assistant_thread(
        &self,
        key: &SessionKey,
        context_channel: Option<&str>,
    ) -> Result<(Option<i64>, bool), CoreError> {
        let project = match context_channel {
            Some(c) => {
                self.store
                    .channel_project(&key.platform, &key.workspace, c)
                    .await?
            }
            None => None,
        };
        let session = self
            .store
            .open_session(key, Mode::default(), project)
            .await?;
        if project.is_some() && session.project_id != project {
            self.store.set_session_project(session.id, project).await?;
            return Ok((project, true));
        }
        Ok((session.project_id, false))
    }

    /// The questions offered in a thread about `project`.
    async fn starters_for(&self, project: Option<i64>) -> Result<Starters, CoreError> {
        let data = match project {
            Some(id) => Some(self.store.load_project(id).await?),
            None => None,
        };
        Ok(starters::for_project(data.as_ref()))
    }

    /// `user` opened the assistant thread `key` while viewing `context_channel` (`None` when
    /// Slack named none, or the channel is not one Sparky answers in). Remembers the thread,
    /// binds it to that channel's project and returns the questions to offer.
    pub async fn assistant_thread_started(
        &self,
        key: &SessionKey,
        user: &str,
        context_channel: Option<&str>,
    ) -> Result<Starters, CoreError> {
        self.store
            .record_assistant_thread(key, user, context_channel)
            .await?;
        let (project, _) = self.bind_assistant_thread(key, context_channel).await?;
        self.starters_for(project).await
    }

    /// The person moved to `context_channel` while the thread `key` was open. Remembers it and
    /// binds the thread to that channel's project; returns new questions to offer when the
    /// project changed before anything was asked in the thread.
    pub async fn assistant_context_changed(
        &self,
        key: &SessionKey,
        user: &str,
        context_channel: Option<&str>,
    ) -> Result<Option<Starters>, CoreError> {
        self.store
            .record_assistant_thread(key, user, context_channel)
            .await?;
        let (project, changed) = self.bind_assistant_thread(key, context_channel).await?;
        if !changed || self.store.thread_has_history(key).await? {
            return Ok(None);
        }
        Ok(Some(self.starters_for(project).await?))
    }

    /// Whether `key` is an assistant thread; when it is, it is bound (again) to its context
    /// channel's project as bound now, for the turn about to run in it.
    pub async fn assistant_turn(&self, key: &SessionKey) -> Result<bool, CoreError> {
        let Some(thread) = self.store.assistant_thread(key).await? else {
            return Ok(false);
        };
        self.bind_assistant_thread(key, thread.context_channel.as_deref())
            .await?;
        Ok(true)
    }

    /// The title to give the assistant thread `key` after `question`, when it is the thread's
    /// first (of racing replicas, one gets it); `None` otherwise.
    pub async fn assistant_title(
        &self,
        key: &SessionKey,
        question: &str,
    ) -> Result<Option<String>, CoreError> {
        if !self.store.claim_assistant_title(key).await? {
            return Ok(None);
        }
        Ok(Some(title_for(question)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_first_line_cut_at_a_word() {
        assert_eq!(
            title_for("  \nCheck panel LP-1\nthanks"),
            "Check panel LP-1"
        );
        let long =
            "What is the voltage drop on circuit 7 of panel LP-1 at 180 feet with 12 AWG copper?";
        let t = title_for(long);
        assert!(t.chars().count() <= MAX_TITLE + 1, "{t}");
        assert!(
            t.ends_with('…') && long.starts_with(t.trim_end_matches('…')),
            "{t}"
        );
        assert_eq!(title_for(""), "New conversation");
        assert_eq!(title_for(&"x".repeat(100)).chars().count(), MAX_TITLE + 1);
    }
}
