//! [`Session`]: state scoped to an MCP session or to a key the application chooses, and
//! [`Sessions`], the bounded store of keyed sessions.

use parking_lot::Mutex;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// State shared by the calls of one session: an MCP session (the MCP server makes one per
/// session), or whatever key an application's middleware scopes calls by (a tenant, an API
/// key) through [`Sessions`].
///
/// Each value is one per type, made on first use by [`get_or_insert_with`](Self::get_or_insert_with)
/// and shared (`Arc`) by every call of the session; a value that changes holds its own lock
/// or atomics.
///
/// ```
/// use opkit::edge::Session;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let session = Session::new("mcp-session-1");
/// let counter = session.get_or_insert_with(|| AtomicU64::new(0));
/// counter.fetch_add(1, Ordering::Relaxed);
/// assert_eq!(session.get_or_insert_with(|| AtomicU64::new(0)).load(Ordering::Relaxed), 1);
/// assert_eq!(session.key(), "mcp-session-1");
/// ```
pub struct Session {
    key: Arc<str>,
    /// One value per type. Locked only to find or insert a value, never while user code runs
    /// (the initializer runs outside the lock; the first value stored wins).
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>, foldhash::fast::RandomState>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("key", &self.key)
            .field("values", &self.values.lock().len())
            .finish()
    }
}

impl Session {
    /// An empty session named `key`.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        Self {
            key: key.into(),
            values: Mutex::default(),
        }
    }

    /// The key that names the session (the MCP session id, or the application's key).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The session's value of type `T`, made by `init` the first time it is asked for.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        if let Some(value) = self.get::<T>() {
            return value;
        }
        let made: Arc<dyn Any + Send + Sync> = Arc::new(init());
        let stored = self
            .values
            .lock()
            .entry(TypeId::of::<T>())
            .or_insert(made)
            .clone();
        stored
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("stored under its own TypeId"))
    }

    /// The session's value of type `T`, when one was made.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let value = self.values.lock().get(&TypeId::of::<T>())?.clone();
        value.downcast::<T>().ok()
    }

    /// Replaces the session's value of type `T`.
    pub fn insert<T: Send + Sync + 'static>(&self, value: T) {
        self.values
            .lock()
            .insert(TypeId::of::<T>(), Arc::new(value));
    }
}

/// Sessions by key, for a middleware that scopes calls by a key of the application's choosing
/// (a tenant, an API key): `sessions.session(key)` is the same [`Session`] for every call with
/// that key until it has been idle for the store's idle time.
///
/// Bounded: at most `max` sessions are held; past that the longest idle is forgotten (its
/// values are dropped once no call holds them).
///
/// ```
/// use opkit::edge::Sessions;
/// use std::time::Duration;
///
/// let sessions = Sessions::new(Duration::from_secs(600), 10_000);
/// let a = sessions.session("tenant-a");
/// a.insert(7_u32);
/// assert_eq!(*sessions.session("tenant-a").get::<u32>().unwrap(), 7);
/// assert!(sessions.session("tenant-b").get::<u32>().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Sessions {
    inner: Arc<Mutex<Store>>,
}

#[derive(Debug)]
struct Store {
    idle: Duration,
    max: usize,
    entries: HashMap<Arc<str>, (Arc<Session>, Instant), foldhash::fast::RandomState>,
}

impl Sessions {
    /// A store that forgets a session idle for `idle`, and holds at most `max` (at least 1).
    pub fn new(idle: Duration, max: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Store {
                idle,
                max: max.max(1),
                entries: HashMap::default(),
            })),
        }
    }

    /// The session named `key`, made when there is none (or it had expired).
    pub fn session(&self, key: &str) -> Arc<Session> {
        let now = Instant::now();
        let mut store = self.inner.lock();
        let idle = store.idle;
        if let Some((session, used)) = store.entries.get_mut(key)
            && now.duration_since(*used) < idle
        {
            *used = now;
            return session.clone();
        }
        if store.entries.len() >= store.max {
            store
                .entries
                .retain(|_, (_, used)| now.duration_since(*used) < idle);
            if store.entries.len() >= store.max
                && let Some(oldest) = store
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(key, _)| key.clone())
            {
                store.entries.remove(&oldest);
            }
        }
        let key: Arc<str> = Arc::from(key);
        let session = Arc::new(Session::new(key.clone()));
        store.entries.insert(key, (session.clone(), now));
        session
    }

    /// How many sessions are held.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// `true` when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
