//! Caps on how many tool calls run at once, beside the run-wide one: a tool's own
//! (`max_concurrency` in its definition), a toolset's, and named limits that every tool,
//! toolset and agent of the process naming them shares ([`ConcurrencyLimit::shared`]).
//!
//! A call takes a place under each limit that applies to it before it starts, in one
//! global order (so two calls never hold a place the other waits for), and keeps them until
//! it ends. Calls waiting for a place queue first come, first served: the calls of one
//! response ask in model order. A queued call is still cancellable, and its timeout starts
//! when it starts. A durable run, whose calls run elsewhere, counts the same limits with
//! [`Admission`] and starts no call past them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, Result};

/// How many calls may run at once: a limit of its own, or one shared by name.
///
/// A limit of its own (`ConcurrencyLimit::from(2)`, or an integer `max_concurrency`) is
/// shared by every copy of the tool, toolset or agent that carries it. A shared limit is
/// the same for everything in the process that names it, whichever agent or run it is in.
///
/// ```
/// use starweaver::{ConcurrencyLimit, ToolDefinition};
/// use serde_json::json;
///
/// let search_api = ConcurrencyLimit::shared("search-api", 4).unwrap();
/// let search = ToolDefinition::new("search", json!({"type": "object"})).with_max_concurrency(search_api.clone());
/// let lookup = ToolDefinition::new("lookup", json!({"type": "object"})).with_max_concurrency(search_api);
/// assert_eq!(search.max_concurrency, lookup.max_concurrency);
/// assert_eq!(serde_json::to_value(&search.max_concurrency).unwrap(), json!({"name": "search-api", "max_running": 4}));
/// // One name is one limit: naming it with another size is a mistake, caught at once.
/// assert!(ConcurrencyLimit::shared("search-api", 5).is_err());
/// ```
#[derive(Clone)]
pub struct ConcurrencyLimit(Arc<Gate>);

/// The places of one limit.
struct Gate {
    /// The order limits are entered in, so that no two calls wait on each other.
    order: u64,
    /// A shared limit's name.
    name: Option<Arc<str>>,
    max_running: u32,
    places: Arc<Semaphore>,
}

static NEXT_ORDER: AtomicU64 = AtomicU64::new(0);

/// The shared limits of the process, by name, while anything holds them.
static SHARED: LazyLock<Mutex<HashMap<Arc<str>, Weak<Gate>>>> = LazyLock::new(Mutex::default);

impl Gate {
    fn new(name: Option<Arc<str>>, max_running: u32) -> Arc<Self> {
        Arc::new(Self {
            order: NEXT_ORDER.fetch_add(1, Ordering::Relaxed),
            name,
            max_running,
            places: Arc::new(Semaphore::new(max_running as usize)),
        })
    }
}

impl ConcurrencyLimit {
    /// The limit called `name`, of `max_running` calls at once, shared with everything in
    /// the process that names it.
    ///
    /// # Errors
    /// `max_running` is 0, or the name is held by a limit of another size.
    pub fn shared(name: impl Into<String>, max_running: u32) -> Result<Self> {
        let name: String = name.into();
        let invalid = |message: String| Error::InvalidOption { option: "max_concurrency", message };
        if name.is_empty() {
            return Err(invalid("a shared ConcurrencyLimit needs a name".into()));
        }
        if max_running == 0 {
            return Err(invalid(format!("ConcurrencyLimit `{name}` must let at least 1 call run")));
        }
        let mut shared = SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.retain(|_, gate| gate.strong_count() > 0);
        if let Some(gate) = shared.get(name.as_str()).and_then(Weak::upgrade) {
            if gate.max_running != max_running {
                return Err(invalid(format!(
                    "ConcurrencyLimit `{name}` is {} in this process already; one name is one limit, so it cannot \
                     also be {max_running}",
                    gate.max_running
                )));
            }
            return Ok(Self(gate));
        }
        let name: Arc<str> = name.into();
        let gate = Gate::new(Some(name.clone()), max_running);
        shared.insert(name, Arc::downgrade(&gate));
        Ok(Self(gate))
    }

    /// The process's shared limit called `name`, if anything holds it.
    fn existing(name: &str) -> Option<Self> {
        let shared = SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.get(name).and_then(Weak::upgrade).map(Self)
    }

    /// The shared limit's name; `None` for a limit of its own.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }

    /// How many calls may run at once.
    #[must_use]
    pub fn max_running(&self) -> u32 {
        self.0.max_running
    }

    /// What events and durable runs call this limit: a shared one by its name, one of its
    /// own by what it belongs to (`tool:search`, `toolset:ops`, `run`).
    fn label(&self, owner: impl FnOnce() -> String) -> Arc<str> {
        self.0.name.clone().unwrap_or_else(|| owner().into())
    }

    /// The check a definition or builder makes: a limit of its own of 0 would start nothing.
    pub(crate) fn is_zero(&self) -> bool {
        self.0.max_running == 0
    }

    /// A limit of the same size, of its own, with places of its own: a run's cap, which
    /// each run gets afresh unless it is shared.
    pub(crate) fn per_run(&self) -> Self {
        match self.0.name {
            Some(_) => self.clone(),
            None => Self(Gate::new(None, self.0.max_running)),
        }
    }
}

/// A limit of its own of `max_running` calls.
impl From<u32> for ConcurrencyLimit {
    fn from(max_running: u32) -> Self {
        Self(Gate::new(None, max_running))
    }
}

/// A limit of its own, from any integer (so a literal `2` is one); a count below 1 or
/// past `u32::MAX` is kept as 0 or `u32::MAX`, and 0 is refused where the limit is set.
macro_rules! from_integers {
    ($($int:ty),*) => {$(
        impl From<$int> for ConcurrencyLimit {
            fn from(max_running: $int) -> Self {
                let max_running = u32::try_from(max_running).unwrap_or(if max_running < 1 { 0 } else { u32::MAX });
                Self::from(max_running)
            }
        }
    )*};
}

from_integers!(i32, i64, usize, u64);

/// Equal limits have the same name (or none) and size: what a definition compares.
impl PartialEq for ConcurrencyLimit {
    fn eq(&self, other: &Self) -> bool {
        (self.0.name.as_deref(), self.0.max_running) == (other.0.name.as_deref(), other.0.max_running)
    }
}

impl std::fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.name {
            Some(name) => write!(f, "ConcurrencyLimit({name:?}, {})", self.0.max_running),
            None => write!(f, "ConcurrencyLimit({})", self.0.max_running),
        }
    }
}

/// A limit of its own is its size; a shared one `{"name", "max_running"}`, which reads
/// back as the process's limit of that name.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Stored<'a> {
    Own(u32),
    #[serde(borrow)]
    Shared(Named<'a>),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Named<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    max_running: u32,
}

impl Serialize for ConcurrencyLimit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match &self.0.name {
            Some(name) => Stored::Shared(Named { name: (&**name).into(), max_running: self.0.max_running }),
            None => Stored::Own(self.0.max_running),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ConcurrencyLimit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        match Stored::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "expected a number of calls, or a shared limit {\"name\": ..., \"max_running\": ...}",
            )
        })? {
            Stored::Own(max_running) => Ok(Self::from(max_running)),
            // What was stored (a durable run's recorded listing, say) may predate a change of
            // the limit's size: the process's limit of that name is the one that applies.
            Stored::Shared(Named { name, max_running }) => match Self::existing(&name) {
                Some(limit) => Ok(limit),
                None => Self::shared(name, max_running).map_err(|error| serde::de::Error::custom(error.to_string())),
            },
        }
    }
}

/// A limit as one call sees it: its places, and what to call it.
#[derive(Clone)]
pub(crate) struct Limit {
    gate: Arc<Gate>,
    pub label: Arc<str>,
}

impl Limit {
    /// `limit`, labelled for what it belongs to if it is of its own.
    pub(crate) fn new(limit: &ConcurrencyLimit, owner: impl FnOnce() -> String) -> Self {
        Self { label: limit.label(owner), gate: limit.0.clone() }
    }

    pub(crate) fn max_running(&self) -> u32 {
        self.gate.max_running
    }

    /// What a durable run counts this limit's calls under: a shared limit's name, or, for
    /// one of its own, its identity (one limit given to two tools is one limit; two of
    /// their own are two, whatever they belong to).
    pub(crate) fn key(&self) -> Arc<str> {
        match &self.gate.name {
            Some(name) => name.clone(),
            None => format!("#{}", self.gate.order).into(),
        }
    }
}

/// The limits a call runs under, in the order they are entered, each once.
pub(crate) fn in_order<'l>(limits: impl IntoIterator<Item = &'l Limit>) -> Vec<&'l Limit> {
    let mut limits: Vec<&Limit> = limits.into_iter().collect();
    limits.sort_by_key(|limit| limit.gate.order);
    limits.dedup_by_key(|limit| limit.gate.order);
    limits
}

/// A call's way in: the places it holds already and the limits it still waits for (none,
/// by default: a call under no limit).
#[derive(Default)]
pub(crate) struct Entry {
    held: Vec<OwnedSemaphorePermit>,
    waiting: Vec<Arc<Semaphore>>,
    /// The limits that were full when the call came (what its `tool_call` event names).
    pub queued_for: Vec<Arc<str>>,
}

impl Entry {
    /// Takes what places are free now, in order, up to the first limit that is full.
    pub(crate) fn try_enter(limits: &[&Limit]) -> Self {
        let mut entry = Self::default();
        for limit in limits {
            let places = &limit.gate.places;
            if entry.waiting.is_empty()
                && let Ok(permit) = places.clone().try_acquire_owned()
            {
                entry.held.push(permit);
                continue;
            }
            if places.available_permits() == 0 {
                entry.queued_for.push(limit.label.clone());
            }
            entry.waiting.push(places.clone());
        }
        entry
    }

    /// Waits for a place under each limit still full, in order; the places are held until
    /// the returned value is dropped. The wait is boxed: a call that has its places (the
    /// common case) does not carry a semaphore's wait in its future.
    pub(crate) async fn enter(self) -> Vec<OwnedSemaphorePermit> {
        let Self { mut held, waiting, .. } = self;
        if waiting.is_empty() {
            return held;
        }
        Box::pin(async move {
            for places in waiting {
                held.push(places.acquire_owned().await.expect("a limit's places are never closed"));
            }
            held
        })
        .await
    }
}

/// The same limits for a driver whose calls run elsewhere (a durable run): counts of
/// running calls by limit, and the calls held back until their limits have room, in the
/// order they came.
///
/// No held call has room while no place was freed since the last look, so a call that
/// ends has the calls held back looked at only while a limit it freed has room: a batch
/// of many calls under one small limit costs a step per call, not a pass over the queue.
pub(crate) struct Admission<T> {
    running: HashMap<Arc<str>, u32>,
    held: VecDeque<Held<T>>,
    /// Each admitted call's limits, by its index, until it ends.
    admitted: HashMap<usize, Vec<Counted>>,
    /// The limits a call that ended freed a place under since the held calls were last
    /// looked at.
    freed: Vec<Counted>,
}

/// One limit a call counts against, as [`Admission`] sees it.
pub(crate) struct Counted {
    /// What the limit is counted under ([`Limit::key`]).
    pub key: Arc<str>,
    /// What events call it ([`Limit::label`]).
    pub label: Arc<str>,
    pub max_running: u32,
}

impl From<&Limit> for Counted {
    fn from(limit: &Limit) -> Self {
        Self { key: limit.key(), label: limit.label.clone(), max_running: limit.max_running() }
    }
}

/// A call offered, with its limits, and those that were full when it came.
struct Held<T> {
    index: usize,
    call: T,
    limits: Vec<Counted>,
    queued_for: Vec<Arc<str>>,
}

impl<T> Default for Admission<T> {
    fn default() -> Self {
        Self { running: HashMap::new(), held: VecDeque::new(), admitted: HashMap::new(), freed: Vec::new() }
    }
}

impl<T> Admission<T> {
    /// Offers `calls` (each with its index and its limits) after those held already; the
    /// calls that may start now, in the order they came, each with the limits it was held
    /// back for (none if it starts at once).
    pub(crate) fn offer(
        &mut self,
        calls: impl IntoIterator<Item = (usize, Vec<Counted>, T)>,
    ) -> Vec<(T, Vec<Arc<str>>)> {
        // The calls held back that a place freed since the last look lets start go first.
        let mut released = self.release();
        // One at a time, so each call sees the places the ones before it took.
        for (index, limits, call) in calls {
            let queued_for: Vec<Arc<str>> =
                limits.iter().filter(|limit| !self.has_room(limit)).map(|limit| limit.label.clone()).collect();
            if queued_for.is_empty() {
                self.admit(index, limits);
                released.push((call, queued_for));
            } else {
                self.held.push_back(Held { index, call, limits, queued_for });
            }
        }
        released
    }

    /// Call `index` ended: its places are free for the calls held back.
    pub(crate) fn finished(&mut self, index: usize) {
        for limit in self.admitted.remove(&index).into_iter().flatten() {
            if let Some(running) = self.running.get_mut(&limit.key) {
                *running = running.saturating_sub(1);
            }
            self.freed.push(limit);
        }
    }

    fn has_room(&self, limit: &Counted) -> bool {
        self.running.get(&limit.key).copied().unwrap_or(0) < limit.max_running
    }

    /// Counts call `index` as running under `limits`.
    fn admit(&mut self, index: usize, limits: Vec<Counted>) {
        for limit in &limits {
            *self.running.entry(limit.key.clone()).or_insert(0) += 1;
        }
        self.admitted.insert(index, limits);
    }

    /// The held calls whose limits all have room now, in the order they came, counted as
    /// running.
    pub(crate) fn release(&mut self) -> Vec<(T, Vec<Arc<str>>)> {
        let freed = std::mem::take(&mut self.freed);
        let mut released = Vec::new();
        let mut at = 0;
        // A held call was full under some limit when last looked at: only a freed place
        // can have made room for it.
        while at < self.held.len() && freed.iter().any(|limit| self.has_room(limit)) {
            let fits = self.held.get(at).is_some_and(|held| held.limits.iter().all(|limit| self.has_room(limit)));
            if !fits {
                at += 1;
            } else if let Some(held) = self.held.remove(at) {
                self.admit(held.index, held.limits);
                released.push((held.call, held.queued_for));
            }
        }
        released
    }

    /// Forgets the calls held back (the run was cancelled: they never start).
    pub(crate) fn drop_held(&mut self) {
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(key: &str, max_running: u32) -> Counted {
        Counted { key: key.into(), label: key.into(), max_running }
    }

    fn started(released: Vec<(usize, Vec<Arc<str>>)>) -> Vec<usize> {
        released.into_iter().map(|(call, _)| call).collect()
    }

    #[test]
    fn a_batch_under_one_limit_starts_in_the_order_it_came_and_never_past_the_limit() {
        let mut admission = Admission::default();
        let first = admission.offer((0..50).map(|i| (i, vec![limit("api", 3)], i)));
        assert_eq!(started(first), [0, 1, 2]);
        let mut running = vec![0, 1, 2];
        let mut order = running.clone();
        while let Some(&done) = running.first() {
            running.remove(0);
            admission.finished(done);
            let now = started(admission.release());
            assert!(now.len() <= 1, "one place freed, {} calls started", now.len());
            running.extend(&now);
            order.extend(now);
            assert!(running.len() <= 3);
        }
        assert_eq!(order, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_call_held_for_one_limit_does_not_hold_back_a_call_that_fits() {
        let mut admission = Admission::default();
        assert_eq!(started(admission.offer([(0, vec![limit("b", 1)], 0)])), [0]);
        let released = admission.offer([(1, vec![limit("a", 1), limit("b", 1)], 1), (2, vec![limit("a", 1)], 2)]);
        assert_eq!(released, [(2, Vec::new())]);
        admission.finished(2);
        // `a` has room again, but call 1 still waits for `b`.
        assert!(admission.release().is_empty());
        admission.finished(0);
        assert_eq!(admission.release(), [(1, vec![Arc::from("b")])]);
    }

    #[test]
    fn calls_held_back_start_before_calls_offered_after_a_place_is_freed() {
        let mut admission = Admission::default();
        assert_eq!(started(admission.offer([(0, vec![limit("api", 1)], 0), (1, vec![limit("api", 1)], 1)])), [0]);
        admission.finished(0);
        assert_eq!(started(admission.offer([(2, vec![limit("api", 1)], 2)])), [1]);
        admission.finished(1);
        assert_eq!(started(admission.release()), [2]);
    }

    #[test]
    fn nothing_starts_until_a_place_is_freed_and_dropped_calls_never_start() {
        let mut admission = Admission::default();
        assert_eq!(started(admission.offer((0..3).map(|i| (i, vec![limit("api", 1)], i)))), [0]);
        assert!(admission.release().is_empty());
        admission.drop_held();
        admission.finished(0);
        assert!(admission.release().is_empty());
    }
}
