//! Admission of inputs: one turn at a time per thread, across processes, with no database
//! connection or transaction held while a turn waits on the model, a tool or a platform.
//!
//! Every input is first queued in its session's inbox (its platform event id is claimed in
//! the same transaction, so a redelivery is dropped and an accepted input is never lost).
//! Whoever takes the session's lease (one conditional update: owner and expiry, renewed
//! while it works) serves the inbox oldest first:
//! * its own input, with its own sink;
//! * an older input whose waiter is gone (its process died), with its own sink too, since
//!   both belong to the same thread;
//! * an older input whose waiter is alive is left to that waiter: the lease is released and
//!   the thread's waiters in this process are woken (waiters elsewhere poll);
//! * an input that was started under a lease that lapsed (its process died mid-turn) is
//!   closed and the thread is told.
//!
//! On a free thread, with a turn slot free, queueing the input also takes the lease and starts
//! it (one statement), and for a message to the model with no proposal waiting, stores its
//! question and reads the thread back with it; a turn that ends with an answer finishes its input and releases the
//! lease in the statement that stores the answer (`TurnEnd`).
//!
//! The turns running in one process are bounded by `agent.max_concurrent_turns`, independent
//! of the database pool; past it the user sees a "queued" status until a turn finishes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{json, Value};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::agent::{Agent, CoreError, Input, InputAction};
use super::effects::{Effect, EffectSink};
use super::session::Mode;
use crate::config::AgentConfig;
use crate::store::{
    fenced, Enqueued, InputFinish, LeaseFence, LeaseTaken, NewQueuedInput, QueuedInput,
    StartedInput, Store, StoreError,
};

/// First wait of a waiter between attempts at the lease (waiters in this process are also
/// woken at once when the holder releases it).
const POLL_MIN: Duration = Duration::from_millis(50);
/// Longest wait between attempts, for waiters whose thread is served by another process.
const POLL_MAX: Duration = Duration::from_millis(800);

/// What the user is told (as a [`Effect::Notice`]) when their input waits for an earlier one
/// of the same thread.
pub const QUEUED_BEHIND_THREAD: &str =
    "Queued: I will answer this once I have replied to the earlier message in this thread.";
/// What the user sees while the process runs as many turns as it may.
pub const QUEUED_BUSY: &str = "queued: many conversations are running; yours starts next";

/// Decides when each input runs: in order per thread, one turn at a time per thread across
/// every process on the store, and at most `agent.max_concurrent_turns` turns per process.
pub struct Admission {
    store: Arc<dyn Store>,
    /// This process's name in lease owners.
    replica: String,
    lease: Duration,
    turns: Arc<Semaphore>,
    max_turns: usize,
    /// Wakes this process's waiters of a thread when its lease is released here.
    wakers: Mutex<HashMap<i64, Arc<Notify>>>,
}

/// How a stint as lease holder ended.
enum Served {
    /// The waiter's own input is done (here or, earlier, by another holder); `released` when
    /// the lease was given up with it.
    Done { released: bool },
    /// An older input of the thread belongs to a live waiter; let it go first.
    NotYet,
    /// The lease could not be renewed (another process holds it, or the database did not
    /// answer until it lapsed): the turn was cancelled and the person told.
    Lost,
}

/// What the person reads when their turn is cancelled because its thread's lease was lost.
pub const LEASE_LOST: &str = "I stopped this reply: the server answering it lost its hold on      this thread (it stalled longer than agent.lease_secs) and another one may have taken the      thread over. Anything shown as done before this is saved; please send your message again      for the rest.";

/// Finds where a thread's effects go (its platform's surface), or `None` when no platform of
/// this process serves it.
pub type SinkFor =
    dyn Fn(&crate::core::session::SessionKey) -> Option<Box<dyn EffectSink>> + Send + Sync;

impl Admission {
    /// Admission for one process on `store`.
    pub fn new(store: Arc<dyn Store>, cfg: &AgentConfig) -> Self {
        let max_turns = cfg.max_concurrent_turns.max(1);
        Self {
            store,
            replica: uuid::Uuid::new_v4().simple().to_string(),
            lease: Duration::from_secs(cfg.lease_secs.max(1)),
            turns: Arc::new(Semaphore::new(max_turns)),
            max_turns,
            wakers: Mutex::new(HashMap::new()),
        }
    }

    /// Turns running now in this process.
    pub fn running(&self) -> usize {
        self.max_turns
            .saturating_sub(self.turns.available_permits())
    }

    /// This process's name in lease owners.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    fn lease_until(&self) -> chrono::DateTime<Utc> {
        Utc::now() + chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::MAX)
    }

    /// Queues `input` in its thread's inbox and serves it when its turn comes. Returns once
    /// it was answered (here or by another holder of the thread's lease).
    pub(super) async fn serve(
        &self,
        agent: &Agent,
        session_id: i64,
        input: Input,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        // The owner names this wait, not the input: the lease is first tried in the statement
        // that queues the input, before its id exists.
        let owner = format!("{}:{}", self.replica, uuid::Uuid::new_v4().simple());
        let waker = WakerGuard::new(self, session_id);
        // Registered before the first try, so a holder's wake-up after it is not missed.
        let mut notified = Box::pin(waker.notify().notified());
        notified.as_mut().enable();
        let (queued, permit) = self.enqueue(agent, session_id, &input, &owner).await?;
        let Some(Enqueued {
            input: mine,
            lease: first_try,
            started,
        }) = queued
        else {
            tracing::debug!(event_id = ?input.event_id, "duplicate event ignored");
            return Ok(());
        };
        // The slot is kept only by an input that started.
        let mut started = started.map(|session| Started { session, permit });
        let mut first_try = Some(first_try);
        let mut told = false;
        let mut poll = POLL_MIN;
        let mut renew_at = Instant::now() + self.lease / 3;
        loop {
            // Taking the lease also reads the oldest input of the thread (one statement).
            let taken = match first_try.take() {
                Some(taken) => taken,
                None => {
                    self.store
                        .take_lease_and_next(session_id, &owner, self.lease_until(), Utc::now())
                        .await?
                }
            };
            if let LeaseTaken::Taken { next } = taken {
                let served = self
                    .hold(
                        agent,
                        session_id,
                        &owner,
                        Some((&mine, &input)),
                        (next, started.take()),
                        sink,
                    )
                    .await;
                // Finishing our own input released the lease with the same statement.
                if !matches!(served, Ok(Served::Done { released: true })) {
                    if let Err(e) = self.store.release_lease(session_id, &owner).await {
                        // It lapses on its own after agent.lease_secs.
                        tracing::warn!(error = %e, session_id, "could not release a thread's lease");
                    }
                }
                waker.notify().notify_waiters();
                match served? {
                    Served::Done { .. } => return Ok(()),
                    Served::Lost => {
                        sink.emit(Effect::Error {
                            message: LEASE_LOST.into(),
                        })
                        .await;
                        return Ok(());
                    }
                    Served::NotYet => {
                        // Our own wake-up is for the others: wait for the next one.
                        notified.set(waker.notify().notified());
                        notified.as_mut().enable();
                        poll = POLL_MIN;
                    }
                }
            }
            if !told {
                told = true;
                sink.emit(Effect::Notice {
                    text: QUEUED_BEHIND_THREAD.into(),
                })
                .await;
            }
            tokio::select! {
                () = &mut notified => poll = POLL_MIN,
                () = tokio::time::sleep(poll) => poll = (poll * 2).min(POLL_MAX),
            }
            // Registered before the next try.
            notified.set(waker.notify().notified());
            notified.as_mut().enable();
            if Instant::now() >= renew_at {
                renew_at = Instant::now() + self.lease / 3;
                if !self.store.renew_waiter(mine.id, self.lease_until()).await? {
                    // Gone from the inbox: another holder answered it in this thread.
                    return Ok(());
                }
            }
        }
    }

    /// Queues `input` for `owner`. With a turn slot free, a thread that is free too starts the
    /// input as it is queued, and the slot comes back with it. `None`: a duplicate event.
    async fn enqueue(
        &self,
        agent: &Agent,
        session_id: i64,
        input: &Input,
        owner: &str,
    ) -> Result<(Option<Enqueued>, Option<OwnedSemaphorePermit>), CoreError> {
        let permit = self.turns.clone().try_acquire_owned().ok();
        let queued = self
            .store
            .enqueue_and_start(
                &NewQueuedInput {
                    session_id,
                    platform: input.key.platform.clone(),
                    user: input.user.clone(),
                    event_id: input.event_id.clone(),
                    action: encode(&input.action),
                    waiter_until: self.lease_until(),
                    // Stored only if the input starts now, so only asked for then.
                    question: permit.as_ref().and_then(|_| agent.question_at_start(input)),
                },
                owner,
                self.lease_until(),
                Utc::now(),
                permit.is_some(),
            )
            .await?;
        Ok((queued, permit))
    }

    /// Serves the inbox of every thread left without a live waiter or holder (a process died
    /// mid-turn or while its inputs waited), telling each thread through `sink_for`. Returns
    /// how many threads were recovered.
    pub async fn recover(&self, agent: &Agent, sink_for: &SinkFor) -> Result<usize, CoreError> {
        let orphaned = self.store.orphaned_sessions(Utc::now(), 100).await?;
        let mut recovered = 0;
        for session_id in orphaned {
            let Some(session) = self.store.session(session_id).await? else {
                continue;
            };
            let Some(sink) = sink_for(&session.key) else {
                continue;
            };
            let owner = format!("{}:recover", self.replica);
            if !self
                .store
                .take_lease(session_id, &owner, self.lease_until(), Utc::now())
                .await?
            {
                continue;
            }
            let served = self
                .hold_orphans(agent, session_id, &owner, &session.key, sink.as_ref())
                .await;
            if let Err(e) = self.store.release_lease(session_id, &owner).await {
                tracing::warn!(error = %e, session_id, "could not release a thread's lease");
            }
            self.wake(session_id);
            if matches!(served?, Served::Lost) {
                sink.emit(Effect::Error {
                    message: LEASE_LOST.into(),
                })
                .await;
            }
            recovered += 1;
        }
        Ok(recovered)
    }

    /// Resolves proposals whose time ran out as expired, without waiting for a click: each is
    /// expired under its thread's lease (a thread busy with a turn is left to that turn, or to
    /// the next sweep), its history and audit told, and its card edited through `sink_for`.
    /// Returns how many were expired.
    pub async fn sweep_expired(
        &self,
        agent: &Agent,
        sink_for: &SinkFor,
    ) -> Result<usize, CoreError> {
        let expired = self.store.expired_pending(Utc::now(), 100).await?;
        let mut swept = 0;
        for action in expired {
            let Some(session) = self.store.session(action.session_id).await? else {
                continue;
            };
            let Some(sink) = sink_for(&session.key) else {
                continue;
            };
            let owner = format!("{}:expire", self.replica);
            if !self
                .store
                .take_lease(session.id, &owner, self.lease_until(), Utc::now())
                .await?
            {
                continue;
            }
            let expired = agent.expire(&action, &session, sink.as_ref()).await;
            if let Err(e) = self.store.release_lease(session.id, &owner).await {
                tracing::warn!(error = %e, session_id = session.id, "could not release a thread's lease");
            }
            self.wake(session.id);
            expired?;
            swept += 1;
        }
        Ok(swept)
    }

    fn wake(&self, session_id: i64) {
        let notify = lock(&self.wakers).get(&session_id).cloned();
        if let Some(n) = notify {
            n.notify_waiters();
        }
    }

    /// Works as the thread's lease holder, renewing the lease until the work ends. `first` is
    /// the oldest input, read when the lease was taken, and `mine`'s start when it was
    /// started with its queueing.
    async fn hold(
        &self,
        agent: &Agent,
        session_id: i64,
        owner: &str,
        mine: Option<(&QueuedInput, &Input)>,
        (first, started): (Option<QueuedInput>, Option<Started>),
        sink: &dyn EffectSink,
    ) -> Result<Served, CoreError> {
        let drain = Drain {
            session_id,
            owner,
            first: Some(first),
            started,
        };
        tokio::select! {
            served = self.drain(agent, drain, mine, None, sink) => served,
            () = self.renew_until_lost(session_id, owner) => Ok(Served::Lost),
        }
    }

    async fn hold_orphans(
        &self,
        agent: &Agent,
        session_id: i64,
        owner: &str,
        key: &crate::core::session::SessionKey,
        sink: &dyn EffectSink,
    ) -> Result<Served, CoreError> {
        let drain = Drain {
            session_id,
            owner,
            first: None,
            started: None,
        };
        tokio::select! {
            served = self.drain(agent, drain, None, Some(key), sink) => served,
            () = self.renew_until_lost(session_id, owner) => Ok(Served::Lost),
        }
    }

    /// Renews the lease every third of its length; returns once it is lost: another process
    /// holds it, or no renewal succeeded for as long as the lease lasts (it may have lapsed
    /// and been taken). Returning cancels the work it was raced against.
    async fn renew_until_lost(&self, session_id: i64, owner: &str) {
        let mut held_until = Instant::now() + self.lease;
        loop {
            tokio::time::sleep(self.lease / 3).await;
            let asked = Instant::now();
            match self
                .store
                .renew_lease(session_id, owner, self.lease_until())
                .await
            {
                Ok(true) => held_until = asked + self.lease,
                Ok(false) => {
                    tracing::error!(
                        session_id,
                        "lost a thread's lease while serving it (stalled longer than agent.lease_secs); its turn is cancelled"
                    );
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, session_id, "could not renew a thread's lease");
                    if Instant::now() >= held_until {
                        tracing::error!(
                            session_id,
                            "a thread's lease could not be renewed before it lapsed; its turn is cancelled"
                        );
                        return;
                    }
                }
            }
        }
    }

    /// Serves the thread's inbox in order up to and including `mine` (or, without `mine`,
    /// every input nobody else will take).
    async fn drain(
        &self,
        agent: &Agent,
        mut at: Drain<'_>,
        mine: Option<(&QueuedInput, &Input)>,
        key: Option<&crate::core::session::SessionKey>,
        sink: &dyn EffectSink,
    ) -> Result<Served, CoreError> {
        let session_id = at.session_id;
        loop {
            let next = match at.first.take() {
                Some(first) => first,
                None => self.store.next_input(session_id).await?,
            };
            let Some(next) = next else {
                return Ok(Served::Done { released: false });
            };
            if let Some((m, _)) = mine {
                if next.id > m.id {
                    // Ours is no longer queued: another holder answered it.
                    return Ok(Served::Done { released: false });
                }
            }
            if let (Some((m, input)), Some(started)) = (mine, at.started.take()) {
                // Queued started: the thread had nothing older.
                if m.id == next.id {
                    let released = self
                        .run(
                            agent,
                            &next,
                            input.clone(),
                            (at.owner, true),
                            Some(started),
                            sink,
                        )
                        .await?;
                    return Ok(Served::Done { released });
                }
            }
            if next.running {
                // Started under a lease that lapsed: its process stopped mid-turn.
                self.close_interrupted(&next, sink).await?;
                continue;
            }
            match mine {
                Some((m, input)) if m.id == next.id => {
                    // Our own input is the last one we serve: finishing it gives the lease up.
                    let released = self
                        .run(agent, &next, input.clone(), (at.owner, true), None, sink)
                        .await?;
                    return Ok(Served::Done { released });
                }
                _ => {}
            }
            if next.waiter_until > Utc::now() {
                return Ok(Served::NotYet);
            }
            // Its waiter is gone: answer it here, in the same thread.
            let Some(thread) = key.or(mine.map(|(_, i)| &i.key)) else {
                return Ok(Served::NotYet);
            };
            let Some(action) = decode(&next.action) else {
                tracing::error!(id = next.id, "a queued input could not be read; dropped");
                self.store.finish_input(next.id).await?;
                continue;
            };
            let adopted = Input {
                key: thread.clone(),
                user: next.user.clone(),
                event_id: next.event_id.clone(),
                action,
            };
            tracing::info!(
                id = next.id,
                session_id,
                "answering an input whose process stopped"
            );
            if let Err(e) = self
                .run(agent, &next, adopted, (at.owner, false), None, sink)
                .await
            {
                tracing::error!(error = %e, id = next.id, "an adopted input failed");
                sink.emit(Effect::Error {
                    message: format!(
                        "Something went wrong on my side ({e}) while answering an earlier message here. \
                         Please send it again."
                    ),
                })
                .await;
            }
        }
    }

    async fn close_interrupted(
        &self,
        item: &QueuedInput,
        sink: &dyn EffectSink,
    ) -> Result<(), CoreError> {
        tracing::warn!(
            id = item.id,
            session_id = item.session_id,
            "closing a turn interrupted mid-way"
        );
        crate::telemetry::metrics()
            .turns
            .with_label_values(&["interrupted"])
            .inc();
        sink.emit(Effect::Error {
            message: format!(
                "My reply to an earlier message here (from {}) was interrupted: the server \
                 handling it stopped. Anything it showed as done is saved; please send that \
                 message again for the rest.",
                item.user
            ),
        })
        .await;
        self.store.finish_input(item.id).await?;
        Ok(())
    }

    /// Runs one input within the process's turn limit, starting it unless `started` says it
    /// was, as `owner` of the thread's lease: every write of the turn is fenced on it. With
    /// `release`, the lease is given up in the statement that finishes the input; returns
    /// whether it was.
    async fn run(
        &self,
        agent: &Agent,
        item: &QueuedInput,
        input: Input,
        (owner, release): (&str, bool),
        started: Option<Started>,
        sink: &dyn EffectSink,
    ) -> Result<bool, CoreError> {
        let release_as = release.then_some(owner);
        let (session, _permit) = match started {
            Some(Started { session, permit }) => (session, permit),
            None => {
                let permit = self.permit(sink).await;
                // Starting the input also reads its session (one statement on Postgres).
                let Some(session) = self.store.start_input_with_session(item.id).await? else {
                    return Ok(false);
                };
                (session, permit)
            }
        };
        let gauge = &crate::telemetry::metrics().turns_in_flight;
        gauge.inc();
        let end = TurnEnd {
            input: InputFinish {
                id: item.id,
                release_as,
            },
            released: OnceLock::new(),
        };
        // Boxed: a turn's state is allocated when it runs, not for as long as its input waits
        // for a turn slot.
        let queued = Queued {
            started: session,
            end: &end,
        };
        let fence = LeaseFence {
            session_id: item.session_id,
            owner: owner.to_string(),
            epoch: queued.started.lease_epoch,
        };
        let result = Box::pin(fenced(fence, agent.dispatch(&input, Some(queued), sink))).await;
        gauge.dec();
        if let Err(CoreError::Store(StoreError::LeaseLost(lost))) = &result {
            // Another process holds the thread now: it closes this input, not us.
            tracing::error!(error = %lost, id = item.id, "a turn's write was refused: its lease was lost");
            sink.emit(Effect::Error {
                message: LEASE_LOST.into(),
            })
            .await;
            return Ok(false);
        }
        // Finished either way: a failure was shown, and an input retried forever would block
        // its thread. A turn that ended with an answer finished it already.
        let finished = match (end.released.get(), release_as) {
            (Some(released), _) => Ok(*released),
            (None, Some(owner)) => {
                self.store
                    .finish_input_and_release(item.id, item.session_id, owner)
                    .await
            }
            (None, None) => self.store.finish_input(item.id).await.map(|()| false),
        };
        result?;
        Ok(finished?)
    }

    async fn permit(&self, sink: &dyn EffectSink) -> Option<OwnedSemaphorePermit> {
        if let Ok(p) = self.turns.clone().try_acquire_owned() {
            return Some(p);
        }
        let m = crate::telemetry::metrics();
        m.turns_queued.inc();
        sink.emit(Effect::Status {
            text: QUEUED_BUSY.into(),
        })
        .await;
        let p = self.turns.clone().acquire_owned().await.ok();
        m.turns_queued.dec();
        p
    }
}

/// What the inbox knows of the input a lease holder runs.
pub(super) struct Queued<'a> {
    /// Its session, read when it started.
    pub started: StartedInput,
    /// Its entry, for the turn's last write to finish.
    pub end: &'a TurnEnd<'a>,
}

/// The queued input a turn answers. A turn that ends with the model's answer finishes it (and
/// gives the lease up, when `release_as` says so) in the statement that stores the answer;
/// any other ending leaves it to [`Admission`], which finishes it after the turn.
pub(super) struct TurnEnd<'a> {
    input: InputFinish<'a>,
    /// Set once finished: whether the lease went with it.
    released: OnceLock<bool>,
}

impl TurnEnd<'_> {
    /// Stores `steps` and finishes the input with them.
    pub(super) async fn write(
        &self,
        store: &dyn Store,
        session_id: i64,
        steps: &mut super::turn::UnsavedSteps,
    ) -> Result<(), crate::store::StoreError> {
        let released = steps.end(store, session_id, self.input).await?;
        // Only the turn's last write finishes its input, so this is the one set.
        let _ = self.released.set(released);
        Ok(())
    }
}

/// Where a lease holder stands in its thread's inbox.
struct Drain<'a> {
    session_id: i64,
    /// The lease's owner name.
    owner: &'a str,
    /// The oldest input as read when the lease was taken (`Some(None)`: the inbox was empty).
    first: Option<Option<QueuedInput>>,
    /// The waiter's own input, when it was started with its queueing.
    started: Option<Started>,
}

/// An input started with its queueing, with the turn slot it holds.
struct Started {
    session: StartedInput,
    permit: Option<OwnedSemaphorePermit>,
}

/// This process's wake-up for one thread, dropped from the map with its last user.
struct WakerGuard<'a> {
    admission: &'a Admission,
    session_id: i64,
    notify: Arc<Notify>,
}

impl<'a> WakerGuard<'a> {
    fn new(admission: &'a Admission, session_id: i64) -> Self {
        let notify = lock(&admission.wakers)
            .entry(session_id)
            .or_default()
            .clone();
        Self {
            admission,
            session_id,
            notify,
        }
    }

    fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for WakerGuard<'_> {
    fn drop(&mut self) {
        let mut map = lock(&self.admission.wakers);
        // Counted under the map's lock, where new users take their clone: the map and this
        // guard are the only holders left.
        if map
            .get(&self.session_id)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify) && Arc::strong_count(n) == 2)
        {
            map.remove(&self.session_id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An input's action as stored in the inbox.
pub fn encode(action: &InputAction) -> Value {
    match action {
        InputAction::Message { text, mode } => {
            json!({"kind": "message", "text": text, "mode": mode.map(Mode::as_str)})
        }
        // References only: the files are downloaded again if the input is served later.
        InputAction::MessageWithFiles { text, mode, files } => {
            json!({"kind": "message", "text": text, "mode": mode.map(Mode::as_str), "files": files})
        }
        InputAction::Confirm { action_id } => json!({"kind": "confirm", "action_id": action_id}),
        InputAction::Cancel { action_id } => json!({"kind": "cancel", "action_id": action_id}),
        InputAction::Tool { name, args } => json!({"kind": "tool", "name": name, "args": args}),
        InputAction::Edit { action_id, values } => {
            json!({"kind": "edit", "action_id": action_id, "values": values})
        }
    }
}

/// Reads back what [`encode`] stored; `None` when it is not an action.
pub fn decode(v: &Value) -> Option<InputAction> {
    let action_id = || {
        v.get("action_id")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match v.get("kind")?.as_str()? {
        "message" => Some(InputAction::message(
            v.get("text")?.as_str()?.to_string(),
            match v.get("mode").and_then(Value::as_str) {
                Some(m) => Some(m.parse().ok()?),
                None => None,
            },
            match v.get("files") {
                Some(f) => serde_json::from_value(f.clone()).ok()?,
                None => Vec::new(),
            },
        )),
        "confirm" => Some(InputAction::Confirm {
            action_id: action_id(),
        }),
        "cancel" => Some(InputAction::Cancel {
            action_id: action_id(),
        }),
        "tool" => Some(InputAction::Tool {
            name: v.get("name")?.as_str()?.to_string(),
            args: v.get("args")?.as_str()?.to_string(),
        }),
        "edit" => Some(InputAction::Edit {
            action_id: action_id()?,
            values: serde_json::from_value(v.get("values")?.clone()).ok()?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip_through_the_inbox_encoding() {
        for a in [
            InputAction::Message {
                text: "hello".into(),
                mode: None,
            },
            InputAction::Message {
                text: "a fridge".into(),
                mode: Some(Mode::Load),
            },
            InputAction::Confirm {
                action_id: Some("a1".into()),
            },
            InputAction::Confirm { action_id: None },
            InputAction::MessageWithFiles {
                text: String::new(),
                mode: None,
                files: vec![crate::core::FileRef {
                    name: "panel.jpg".into(),
                    mime: "image/jpeg".into(),
                    size: 1_200_000,
                    url: "https://files.slack.com/files-pri/T1-F1/panel.jpg".into(),
                }],
            },
            InputAction::Cancel {
                action_id: Some("a2".into()),
            },
            InputAction::Edit {
                action_id: "a3".into(),
                values: [("breaker".to_string(), "30".to_string())].into(),
            },
        ] {
            assert_eq!(decode(&encode(&a)), Some(a));
        }
        assert_eq!(decode(&json!({"kind": "dance"})), None);
        assert_eq!(decode(&json!({"kind": "message"})), None);
        assert_eq!(
            decode(&json!({"kind": "message", "text": "x", "mode": "nope"})),
            None
        );
    }
}
