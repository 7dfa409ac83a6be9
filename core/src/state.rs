//! Application state: values an application provides once (a database pool, a config, an
//! HTTP client) and every operation reaches, without globals.
//!
//! The state is given to the registry that runs the operations
//! ([`OperationRegistry::with_state`](crate::OperationRegistry::with_state)); an
//! `#[operation]` fn takes it as a [`State<T>`] parameter (injected, not part of the input
//! schema), a dynamic handler reads it with [`OperationContext::state`]. Which value a call
//! sees:
//!
//! - a call run by a registry (`execute`, `subscribe`, nested calls through the env, the
//!   `CallHandler` of the call protocol, the HTTP and MCP servers) sees the state of *that*
//!   registry; types the registry was not given fall back to the caller's context
//!   ([`OperationContext::with_state`]);
//! - a typed call (`add::call(&ctx, ..)`) runs the fn directly, so it sees the context's
//!   state: build the context with [`OperationRegistry::context`](crate::OperationRegistry::context),
//!   or add values with [`OperationContext::with_state`].
//!
//! Over the call protocol state never travels: each replica serves with the state of its
//! own registry.
//!
//! [`OperationContext::state`]: crate::OperationContext::state
//! [`OperationContext::with_state`]: crate::OperationContext::with_state

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The application's value of type `T`, injected into an `#[operation]` fn.
///
/// Write it like axum's `State`: `State(db): State<Db>` or `db: State<Db>`. The value is
/// cloned out of the registry's state for each call, so `T` is usually a handle that is cheap
/// to clone (a pool, an `Arc<Config>`); wrap anything else in an `Arc`. A `State<T>`
/// parameter is not part of the operation's input.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use opkit::prelude::*;
/// use std::sync::Arc;
///
/// struct Greeting(String);
///
/// #[operation(namespace = "greet")]
/// async fn hello(State(greeting): State<Arc<Greeting>>, name: String) -> String {
///     format!("{}, {name}!", greeting.0)
/// }
///
/// let registry = OperationRegistry::new()
///     .with_state(Arc::new(Greeting("Hello".into())));
/// registry.register_operation(hello).unwrap();
/// registry.check_states().unwrap();
/// let envelope = registry
///     .execute("greet.hello", serde_json::json!({"name": "Ada"}), &OperationContext::default())
///     .await
///     .unwrap();
/// assert_eq!(envelope.data, "Hello, Ada!");
/// // The input schema only has `name`.
/// assert_eq!(hello::spec().input_schema["required"], serde_json::json!(["name"]));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct State<T>(pub T);

impl<T> State<T> {
    /// Takes the value out.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for State<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// A state type an operation needs, so a registry can say before the first call which
/// operation lacks which state ([`OperationRegistry::check_states`](crate::OperationRegistry::check_states)).
#[derive(Clone, Copy)]
pub struct StateKey {
    type_id: fn() -> TypeId,
    type_name: fn() -> &'static str,
}

impl StateKey {
    /// The key of `T`.
    pub fn of<T: 'static>() -> Self {
        Self {
            type_id: TypeId::of::<T>,
            type_name: std::any::type_name::<T>,
        }
    }

    /// The type's id.
    pub fn type_id(&self) -> TypeId {
        (self.type_id)()
    }

    /// The type's name, for messages.
    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.type_name())
    }
}

impl PartialEq for StateKey {
    fn eq(&self, other: &Self) -> bool {
        self.type_id() == other.type_id()
    }
}

/// One provided value.
#[derive(Clone)]
struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

/// The values provided to a registry or a context, one per type. Immutable once shared:
/// adding a value makes a new map (providing state happens at startup, reading it per call).
#[derive(Clone, Default)]
pub(crate) struct StateMap {
    entries: HashMap<TypeId, Entry, foldhash::fast::RandomState>,
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.entries.values().map(|entry| entry.type_name))
            .finish()
    }
}

impl StateMap {
    /// Adds (or replaces) the value of type `T`.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.entries.insert(
            TypeId::of::<T>(),
            Entry {
                value: Arc::new(value),
                type_name: std::any::type_name::<T>(),
            },
        );
    }

    /// Adds (or replaces) a value already shared, of the type named `type_name`.
    pub(crate) fn insert_shared(
        &mut self,
        value: Arc<dyn Any + Send + Sync>,
        type_name: &'static str,
    ) {
        self.entries
            .insert((*value).type_id(), Entry { value, type_name });
    }

    /// The value of type `T`.
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.entries
            .get(&TypeId::of::<T>())
            .and_then(|entry| entry.value.downcast_ref::<T>())
    }

    pub(crate) fn contains(&self, key: &StateKey) -> bool {
        self.entries.contains_key(&key.type_id())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `over`'s values, plus `under`'s for the types `over` lacks.
    pub(crate) fn layered(over: &StateMap, under: &StateMap) -> StateMap {
        let mut entries = under.entries.clone();
        entries.extend(over.entries.iter().map(|(id, entry)| (*id, entry.clone())));
        StateMap { entries }
    }
}

/// The error of a state lookup that found nothing: names the operation (when known) and the
/// type, and says how to provide it.
pub(crate) fn missing_state(operation: Option<&str>, type_name: &str) -> crate::CallError {
    let subject = match operation {
        Some(id) => format!("operation `{id}` needs the state `{type_name}`"),
        None => format!("the state `{type_name}` was asked for"),
    };
    crate::CallError::execution(format!(
        "{subject}, but none was provided: give it to the registry with `OperationRegistry::with_state` (or to the context with `OperationContext::with_state`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layered_prefers_the_upper_map() {
        let mut over = StateMap::default();
        over.insert(1_u32);
        let mut under = StateMap::default();
        under.insert(2_u32);
        under.insert("text");
        let both = StateMap::layered(&over, &under);
        assert_eq!(both.get::<u32>(), Some(&1));
        assert_eq!(both.get::<&str>(), Some(&"text"));
        assert!(both.contains(&StateKey::of::<u32>()));
        assert!(!both.contains(&StateKey::of::<u64>()));
    }

    #[test]
    fn missing_state_names_operation_and_type() {
        let error = missing_state(Some("notes.get"), "app::Db");
        assert!(
            error
                .message
                .contains("operation `notes.get` needs the state `app::Db`")
        );
        assert!(error.message.contains("OperationRegistry::with_state"));
    }
}
