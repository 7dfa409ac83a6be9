//! `OperationRegistry`: holds operations by id and runs them through the shared pipeline.
//!
//! [`OperationRegistry::execute`] and [`OperationRegistry::subscribe`] are the trusted
//! in-process path: they look the operation up, validate the input against its schema
//! (reporting every violation), run the handler (a panic becomes `EXECUTION_ERROR`, the
//! context's deadline becomes `TIMEOUT`, its cancellation `ABORTED`), and finish the result in
//! the shared pipeline (detect → wrap → normalize → validate). Access rules are *not* checked
//! here; the call protocol and the servers check them before calling in.
//!
//! This module holds the operations (registration, lookup, application state). By noun:
//! `operation` is one compiled operation and `handler` its function; `unary` runs a call and
//! `subscription` a stream, both under `guard` (the one place where a panic, a deadline or a
//! cancellation becomes an error) and finished by `pipeline`; `dispatch` and `door` are the
//! entry points that call them, `layered` the middleware around them, `linked` the
//! `#[operation]`s linked in.

mod dispatch;
mod door;
pub(crate) mod guard;
mod handler;
mod layered;
pub(crate) use layered::layers_of;
mod linked;
mod operation;
mod output;
mod pipeline;
mod snapshot;
mod subscription;
mod unary;

pub use door::FoundOperation;
pub use handler::Handler;
pub(crate) use handler::{HandlerFacts, HandlerFn};
pub use linked::{OperationRegistration, join, registrations};
pub use output::{DataForm, Output};
pub use subscription::EnvelopeStream;

pub(crate) use subscription::TracedStream;

use crate::context::OperationContext;
use crate::envelope::OperationId;
use crate::middleware::{Layers, Middleware, Scope};
use crate::schema::SchemaError;
use crate::spec::{OperationKind, OperationSpec};
use crate::state::StateMap;
use arc_swap::ArcSwap;
use operation::{Compile, Operation};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Why an operation could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Another operation already has this id.
    #[error("operation id `{id}` is registered twice: {existing} and {new}")]
    DuplicateId {
        /// The contested id.
        id: String,
        /// The operation registered first.
        existing: String,
        /// The operation that was refused.
        new: String,
    },
    /// The namespace or name breaks the naming rules.
    #[error("operation `{id}` has an invalid id: {message}")]
    InvalidName {
        /// The id as given.
        id: String,
        /// Which rule was broken.
        message: String,
    },
    /// A schema does not compile.
    #[error("operation `{id}` has an invalid {which} schema: {error}")]
    InvalidSchema {
        /// The operation's id.
        id: String,
        /// `"input"` or `"output"`.
        which: &'static str,
        /// The compile error.
        error: SchemaError,
    },
    /// A subscription with a unary handler, or a query/mutation with a stream handler.
    #[error(
        "operation `{id}` is a {kind} but its handler is {}",
        if kind.is_stream() { "unary: use Handler::stream" } else { "a stream: use Handler::unary or make it a SUBSCRIPTION" }
    )]
    HandlerKindMismatch {
        /// The operation's id.
        id: String,
        /// The declared kind.
        kind: OperationKind,
    },
    /// Operations read application state that the registry was not given
    /// ([`OperationRegistry::check_states`]).
    #[error(
        "{}; give each to the registry with `OperationRegistry::with_state`",
        missing.iter().map(|(id, ty)| format!("operation `{id}` needs the state `{ty}`, which the registry was not given")).collect::<Vec<_>>().join("; ")
    )]
    MissingState {
        /// `(operation id, type name)` of every missing state.
        missing: Vec<(String, &'static str)>,
    },
    /// `register_operation` was given a value that is not an `#[operation]` fn.
    #[error(
        "`{type_name}` is not an `#[operation]` fn linked into this program: pass the fn item itself (`registry.register_operation(add)`), or use `register_typed::<add>()` or `register(spec, handler)`"
    )]
    NotAnOperation {
        /// The type of the value that was passed.
        type_name: &'static str,
    },
}

type OperationMap = HashMap<Arc<str>, Arc<Operation>, foldhash::fast::RandomState>;

struct RegistryInner {
    operations: ArcSwap<OperationMap>,
    /// Counts the changes of `operations`. Bumped after each new map is stored, under
    /// `writer`: a reader that loads the revision before the operations sees operations at
    /// least as new as that revision, so data derived from them and kept under it is never
    /// newer than its key says (see [`OperationRegistry::revision`]).
    revision: AtomicU64,
    /// Wakes [`OperationRegistry::changed_since`] waiters after each bump of `revision`.
    changed: tokio::sync::Notify,
    /// The application state handlers see (see [`crate::state`]); replaced whole when a
    /// value is added, read once per call.
    states: ArcSwap<StateMap>,
    /// `true` once `states` holds a value (it never becomes empty again): set under `writer`
    /// after the new map is stored, so a call that reads `true` loads a map with the value, and
    /// a call on a registry never given state skips the load.
    has_states: AtomicBool,
    /// The application's middleware (see [`crate::middleware`]); replaced whole when one is
    /// added.
    layers: ArcSwap<Layers>,
    /// `true` once `layers` holds a middleware (it never becomes empty again), set under
    /// `writer` after the new list is stored: a call that reads `false` takes the plain path
    /// with one atomic load.
    has_layers: AtomicBool,
    writer: Mutex<()>,
    this: Weak<RegistryInner>,
    /// A number no other registry of this process has: the key of the tables threads keep
    /// of `operations` (see [`snapshot`]).
    number: u64,
    /// Counts the stores of `operations` twice, odd while one is under way: what a table a
    /// thread keeps is checked against (see [`snapshot`]).
    writes: AtomicU64,
}

impl RegistryInner {
    /// Makes `table` the registry's operations (the caller holds `writer`): stored (with the
    /// count kept tables are checked against, see [`snapshot`]), then the revision bumped and
    /// its waiters woken.
    fn publish(&self, table: OperationMap) {
        snapshot::store(self, table);
        self.revision.fetch_add(1, Ordering::Release);
        self.changed.notify_waiters();
    }
}

/// The set of operations a program can call, by id.
///
/// Cloning is cheap and clones share the same operations. Registration may happen at any
/// time (adapters refresh their operations at run time); readers never block.
///
/// # When validators are compiled
///
/// Each operation's input and output validators are compiled once, never per call, at one of
/// two moments chosen at registration:
///
/// * [`OperationRegistry::register`] (and `register_operation`, `register_typed`,
///   `from_inventory`) compiles them **at registration**: a schema that does not compile is
///   [`RegistryError::InvalidSchema`] and the operation is not added. This suits
///   hand-written and derived schemas, where such a schema is a programming error.
/// * [`OperationRegistry::register_lazy`] compiles each side **at its first use** (the first
///   input check of a call or [`OperationRegistry::validate_input`], the first result the
///   pipeline finishes). Registering costs no compile, which is what importers of large API
///   descriptions use: most of their operations are never called. A schema that does not
///   compile then makes that side Unknown (not checked, not cast), with one `tracing::warn!`
///   naming the operation, the side and the error; [`OperationRegistry::compile_validators`]
///   compiles them ahead of time and reports such a schema as `InvalidSchema`.
///
/// A first use compiles under a `OnceLock`: concurrent first calls wait for one compile
/// rather than each running their own, and later calls pay one atomic load.
///
/// # Example
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use opkit::{Handler, OperationContext, OperationKind, OperationRegistry, OperationSpec};
/// use serde_json::json;
/// let registry = OperationRegistry::new();
/// let spec = OperationSpec::new("math", "add", OperationKind::Query)
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///         "required": ["a", "b"]
///     }))
///     .output_schema(json!({"type": "integer"}));
/// registry.register(spec, Handler::unary(|input, _ctx| async move {
///     Ok(json!(input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)))
/// })).unwrap();
///
/// let ctx = OperationContext::default();
/// let envelope = registry.execute("math.add", json!({"a": 2, "b": 3}), &ctx).await.unwrap();
/// assert_eq!(envelope.data, json!(5));
/// let error = registry.execute("math.add", json!({"a": "2"}), &ctx).await.unwrap_err();
/// assert_eq!(error.code, opkit::ErrorCode::ValidationError);
/// # });
/// ```
#[derive(Clone)]
pub struct OperationRegistry {
    inner: Arc<RegistryInner>,
}

impl Default for OperationRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OperationRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.specs().iter().map(|spec| spec.id()).collect();
        f.debug_struct("OperationRegistry")
            .field("operations", &ids)
            .finish()
    }
}

impl OperationRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            inner: Arc::new_cyclic(|this| RegistryInner {
                operations: ArcSwap::from_pointee(OperationMap::default()),
                revision: AtomicU64::new(0),
                changed: tokio::sync::Notify::new(),
                states: ArcSwap::from_pointee(StateMap::default()),
                has_states: AtomicBool::new(false),
                layers: ArcSwap::from_pointee(Layers::default()),
                has_layers: AtomicBool::new(false),
                writer: Mutex::new(()),
                this: this.clone(),
                number: snapshot::registry_number(),
                writes: AtomicU64::new(0),
            }),
        }
    }

    /// A registry holding every `#[operation]` linked into the program.
    ///
    /// Only crates that are linked count: a crate holding operations that the program never
    /// names is left out by the linker, with its operations. Name it once (`use my_ops as _;`);
    /// see [the linker caveat](macro@crate::operation#registration).
    ///
    /// # Panics
    ///
    /// When two linked operations share an id, or one is invalid (a programming error, like a
    /// duplicate route); the message names the id and both definitions.
    pub fn from_inventory() -> Self {
        let registry = Self::new();
        for registration in linked::registrations() {
            if let Err(error) = (registration.register)(&registry) {
                panic!("OperationRegistry::from_inventory: {error}");
            }
        }
        registry
    }

    /// Provides the application state value of type `T` (replacing one of the same type) to
    /// every operation this registry runs: `State<T>` parameters and
    /// [`OperationContext::state`] read it. See [`crate::state`].
    ///
    /// ```
    /// use opkit::OperationRegistry;
    /// # #[derive(Clone)] struct Pool;
    /// let registry = OperationRegistry::new().with_state(Pool);
    /// registry.check_states().unwrap();
    /// ```
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.set_state(value);
        self
    }

    /// [`with_state`](Self::with_state) on a shared registry: calls that start afterwards see
    /// the value.
    pub fn set_state<T: Send + Sync + 'static>(&self, value: T) {
        let _writer = self.inner.writer.lock();
        let mut states = StateMap::clone(&self.inner.states.load());
        states.insert(value);
        self.inner.states.store(Arc::new(states));
        self.inner.has_states.store(true, Ordering::Release);
    }

    /// Adds `middleware` around every call of every operation (see [`crate::middleware`] for
    /// what it can do and the order it runs in).
    #[must_use]
    pub fn with_middleware(self, middleware: impl Middleware) -> Self {
        self.add_middleware(Scope::All, middleware);
        self
    }

    /// Adds `middleware` around the calls of the operations `scope` covers.
    #[must_use]
    pub fn with_middleware_for(self, scope: Scope, middleware: impl Middleware) -> Self {
        self.add_middleware(scope, middleware);
        self
    }

    /// [`with_middleware_for`](Self::with_middleware_for) on a shared registry: calls that
    /// start afterwards pass through it, innermost of the middleware registered so far.
    pub fn add_middleware(&self, scope: Scope, middleware: impl Middleware) {
        let _writer = self.inner.writer.lock();
        let mut layers = Layers::clone(&self.inner.layers.load());
        layers.push(scope, std::sync::Arc::new(middleware));
        self.inner.layers.store(Arc::new(layers));
        self.inner.has_layers.store(true, Ordering::Release);
    }

    /// The state value of type `T` this registry was given.
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.inner.states.load().get::<T>().cloned()
    }

    /// Checks that every operation's application state (its `State<T>` parameters, or
    /// [`OperationSpec::requires_state`]) was given to this registry, naming each operation
    /// and type that lacks one. The servers and the call handler run it when they start, so a
    /// missing state is found at startup rather than at the first call.
    pub fn check_states(&self) -> Result<(), RegistryError> {
        let states = self.inner.states.load();
        let operations = self.inner.operations.load();
        let mut missing: Vec<(String, &'static str)> = operations
            .values()
            .flat_map(|operation| {
                operation
                    .spec
                    .states
                    .iter()
                    .filter(|key| !states.contains(key))
                    .map(|key| (operation.id.to_string(), key.type_name()))
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        missing.sort();
        Err(RegistryError::MissingState { missing })
    }

    /// A context for calls into this registry's operations that do not go through it, such
    /// as typed calls (`add::call(&registry.context(), ..)`): nested calls go through this
    /// registry and `State<T>` parameters read its state.
    pub fn context(&self) -> OperationContext {
        self.inner.handler_context(OperationContext::new())
    }

    /// Adds an operation. Fails, naming the id, when the id is taken, the names break the
    /// rules, a schema does not compile, or the handler's shape does not match the kind.
    ///
    /// The validators are compiled here (see [when validators are compiled](OperationRegistry#when-validators-are-compiled));
    /// [`register_lazy`](Self::register_lazy) defers them to the first call.
    pub fn register(&self, spec: OperationSpec, handler: Handler) -> Result<(), RegistryError> {
        self.insert(Operation::build(spec, handler, Compile::Eager)?)
    }

    /// Adds an operation whose validators are compiled at their first use rather than now.
    ///
    /// Fails like [`register`](Self::register) for a taken id, names that break the rules or
    /// a handler that does not match the kind, but never for a schema: a side whose schema
    /// does not compile counts as Unknown from its first use on, with a `tracing::warn!`
    /// (see [when validators are compiled](OperationRegistry#when-validators-are-compiled)). Meant for operations
    /// imported in bulk, most of which may never be called.
    ///
    /// ```
    /// use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec, RegistryError};
    /// use serde_json::json;
    ///
    /// let registry = OperationRegistry::new();
    /// let spec = OperationSpec::new("api", "broken", OperationKind::Query)
    ///     .output_schema(json!({"type": "no such type"}));
    /// let handler = Handler::unary(|_input, _ctx| async { Ok(json!(null)) });
    /// registry.register_lazy(spec, handler).unwrap();
    /// let error = registry.compile_validators("api.broken").unwrap_err();
    /// assert!(matches!(error, RegistryError::InvalidSchema { which: "output", .. }));
    /// ```
    pub fn register_lazy(
        &self,
        spec: OperationSpec,
        handler: Handler,
    ) -> Result<(), RegistryError> {
        self.insert(Operation::build(spec, handler, Compile::Lazy)?)
    }

    /// Compiles the validators of `id` now, if they are not yet (an operation added with
    /// [`register_lazy`](Self::register_lazy)), so its first call does not pay for them.
    ///
    /// Returns [`RegistryError::InvalidSchema`] naming the side whose schema does not compile
    /// (that side stays Unknown), and `Ok` for an id that is not registered.
    pub fn compile_validators(&self, id: &str) -> Result<(), RegistryError> {
        match self.inner.find(id) {
            Some(operation) => operation.compile_now(),
            None => Ok(()),
        }
    }

    /// Puts `spec` in place of the operation of the same id in one step, or adds it when the
    /// id is free: a call finds the old operation or the new one, never neither (what
    /// [`unregister`](Self::unregister) then [`register`](Self::register) would leave for a
    /// moment). Calls already running on the old one finish on it. Returns whether an
    /// operation was replaced. Fails like [`register`](Self::register), and then changes
    /// nothing.
    ///
    /// ```
    /// use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
    /// use serde_json::json;
    ///
    /// let registry = OperationRegistry::new();
    /// let spec = || OperationSpec::new("api", "version", OperationKind::Query);
    /// let answering = |n: i64| Handler::unary(move |_input, _ctx| async move { Ok(json!(n)) });
    /// assert!(!registry.replace(spec(), answering(1)).unwrap(), "added");
    /// assert!(registry.replace(spec(), answering(2)).unwrap(), "replaced");
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let reply = registry.execute("api.version", json!({}), &Default::default()).await.unwrap();
    /// assert_eq!(reply.data, json!(2));
    /// # });
    /// ```
    pub fn replace(&self, spec: OperationSpec, handler: Handler) -> Result<bool, RegistryError> {
        self.put(Operation::build(spec, handler, Compile::Eager)?, true)
    }

    /// [`replace`](Self::replace), with the validators compiled at their first use (as
    /// [`register_lazy`](Self::register_lazy) adds).
    pub fn replace_lazy(
        &self,
        spec: OperationSpec,
        handler: Handler,
    ) -> Result<bool, RegistryError> {
        self.put(Operation::build(spec, handler, Compile::Lazy)?, true)
    }

    fn insert(&self, operation: Operation) -> Result<(), RegistryError> {
        self.put(operation, false).map(|_| ())
    }

    /// Stores `operation` under its id (replacing one there when `replace`, else refusing
    /// a taken id); returns whether one was replaced.
    fn put(&self, operation: Operation, replace: bool) -> Result<bool, RegistryError> {
        let _writer = self.inner.writer.lock();
        let current = self.inner.operations.load();
        let existing = current.get(&operation.id);
        if let Some(existing) = existing
            && !replace
        {
            return Err(RegistryError::DuplicateId {
                id: operation.id.to_string(),
                existing: existing.describe(),
                new: operation.describe(),
            });
        }
        let replaced = existing.is_some();
        let mut next = OperationMap::clone(&current);
        next.insert(operation.id.clone(), Arc::new(operation));
        self.inner.publish(next);
        Ok(replaced)
    }

    /// Adds the `#[operation]` fn `operation`, passed as the fn item itself.
    ///
    /// The fn is found among the operations linked into the program by its type (every fn item
    /// has its own), so this fails with [`RegistryError::NotAnOperation`] for anything else, and
    /// like [`register`](Self::register) for a taken id.
    ///
    /// ```
    /// use opkit::prelude::*;
    ///
    /// #[operation(namespace = "math")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let registry = OperationRegistry::new();
    /// registry.register_operation(add).unwrap();
    /// assert!(registry.contains("math.add"));
    /// assert!(registry.register_operation(42).is_err());
    /// ```
    pub fn register_operation<F: 'static>(&self, operation: F) -> Result<(), RegistryError> {
        let wanted = std::any::TypeId::of::<F>();
        drop(operation);
        let registration = linked::registrations()
            .find(|registration| (registration.fn_type_id)() == wanted)
            .ok_or(RegistryError::NotAnOperation {
                type_name: std::any::type_name::<F>(),
            })?;
        (registration.register)(self)
    }

    /// Adds an operation built from a typed handle's parts (`register_typed`, in `typed`,
    /// which knows the handle's trait): its spec and its handler, whose facts (whether its
    /// JSON results come from its output type, whether it reads its context) hold for that
    /// spec, the handle's own.
    pub(crate) fn register_typed_parts(
        &self,
        spec: OperationSpec,
        handler: Handler,
    ) -> Result<(), RegistryError> {
        let facts = handler.1;
        let mut operation = Operation::build(spec, handler, Compile::Eager)?;
        operation.output_from_type = facts.output_from_type;
        operation.reads_context = facts.reads_context;
        if let Some(id) = facts.id.filter(|id| **id == *operation.id) {
            operation.result_id = OperationId::from_static(id);
        }
        self.insert(operation)
    }

    /// Removes an operation; returns whether it was there.
    ///
    /// A call that starts after this returns does not find it. The operation itself (its
    /// handler and what the handler holds) is dropped once no thread holds it: calls still
    /// running hold it, and so may a thread that served calls of this registry, which keeps a
    /// copy of the operations it last looked up in (a few registries' worth) until it looks up
    /// in this registry again or in others. The same holds for a dropped registry's operations.
    pub fn unregister(&self, id: &str) -> bool {
        let _writer = self.inner.writer.lock();
        let current = self.inner.operations.load();
        if !current.contains_key(id) {
            return false;
        }
        let mut next = OperationMap::clone(&current);
        next.remove(id);
        self.inner.publish(next);
        true
    }

    /// The spec of `id`.
    pub fn spec(&self, id: &str) -> Option<Arc<OperationSpec>> {
        self.inner.find(id).map(|operation| operation.spec.clone())
    }

    /// Every spec, sorted by id.
    pub fn specs(&self) -> Vec<Arc<OperationSpec>> {
        let operations = self.inner.operations.load();
        let mut sorted: Vec<&Arc<Operation>> = operations.values().collect();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        sorted.into_iter().map(|op| op.spec.clone()).collect()
    }

    /// The handler of `id`.
    pub fn handler(&self, id: &str) -> Option<Handler> {
        self.inner
            .find(id)
            .map(|operation| operation.handler.clone())
    }

    /// `true` when `id` is registered.
    pub fn contains(&self, id: &str) -> bool {
        self.inner.operations.load().contains_key(id)
    }

    /// A number that changes whenever an operation is registered or removed, for caches of
    /// data derived from the operations (a server's tool names, a generated document):
    /// read the revision first, then the operations, and keep what was derived under that
    /// revision; it is stale once [`revision`](Self::revision) differs.
    ///
    /// ```
    /// use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
    /// let registry = OperationRegistry::new();
    /// let before = registry.revision();
    /// registry
    ///     .register(
    ///         OperationSpec::new("math", "zero", OperationKind::Query),
    ///         Handler::unary(|_, _| async { Ok(serde_json::json!(0)) }),
    ///     )
    ///     .unwrap();
    /// assert_ne!(registry.revision(), before);
    /// ```
    pub fn revision(&self) -> u64 {
        self.inner.revision.load(Ordering::Acquire)
    }

    /// Waits until the registry's [`revision`](Self::revision) is not `seen` (at once when it
    /// already is not), and returns the new revision: how a server notices that operations
    /// were registered or removed (an MCP server sends its clients list-changed
    /// notifications from it).
    ///
    /// ```
    /// # let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # runtime.block_on(async {
    /// use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
    /// let registry = OperationRegistry::new();
    /// let seen = registry.revision();
    /// let waiter = tokio::spawn({
    ///     let registry = registry.clone();
    ///     async move { registry.changed_since(seen).await }
    /// });
    /// registry
    ///     .register(
    ///         OperationSpec::new("math", "zero", OperationKind::Query),
    ///         Handler::unary(|_, _| async { Ok(serde_json::json!(0)) }),
    ///     )
    ///     .unwrap();
    /// assert_eq!(waiter.await.unwrap(), registry.revision());
    /// # });
    /// ```
    pub async fn changed_since(&self, seen: u64) -> u64 {
        loop {
            let notified = self.inner.changed.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the revision is read: a bump after the read wakes it.
            notified.as_mut().enable();
            let now = self.revision();
            if now != seen {
                return now;
            }
            notified.await;
        }
    }

    /// How many operations are registered.
    pub fn len(&self) -> usize {
        self.inner.operations.load().len()
    }

    /// `true` when no operation is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
