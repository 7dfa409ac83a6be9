//! Operation ids ↔ tool names.
//!
//! [`ToolNaming`] says how an id becomes a tool name; an operation may choose its own name
//! with its MCP option `tool_name` (`#[operation(mcp(tool_name = ".."))]`).
//! The mapping is built from the registry's specs, checked (every name valid for the chosen
//! form, no two operations on one name) and applied both ways: `tools/list` shows the
//! names, `tools/call` finds the operation by its name.

use super::naming::{ToolNameError, ToolNaming};
use opkit::{FoundOperation, OperationRegistry, OperationSpec};
use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
use rmcp::model::Tool;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The tool names of one registry revision, kept until the registry changes, so a call does
/// not rebuild them.
///
/// Invariant: the names kept under revision `r` were built from operations read after `r`
/// was (see [`OperationRegistry::revision`]), so they are never older than their key; a
/// registry that changed meanwhile has a newer revision, and the next reader rebuilds.
///
/// Each thread also keeps the names it last read ([`LAST_READ`]), under this cache's number
/// and the same revision: a tool call on a thread that read them before finds its operation
/// without taking the cache's lock (a read lock is two atomic read-modify-writes, each a full
/// barrier on x86). The thread's copy is the cache's own `Arc`, kept under the key the cache
/// kept it under, so the invariant holds for it; it is released when the thread reads another
/// cache's names or newer ones, or exits.
#[derive(Debug)]
pub(crate) struct NamesCache {
    /// A number no other cache of this process has: threads key their kept names by it,
    /// never by address (a new cache where a dropped one was never finds its names).
    number: u64,
    kept: RwLock<Option<(u64, Arc<ToolNames>)>>,
}

impl Default for NamesCache {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            number: NEXT.fetch_add(1, Ordering::Relaxed),
            kept: RwLock::default(),
        }
    }
}

impl Clone for NamesCache {
    /// A clone starts empty (it may serve another registry or naming).
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// Names a thread read last: whose (a cache's number), of which revision.
struct LastRead {
    cache: u64,
    revision: u64,
    names: Arc<ToolNames>,
}

thread_local! {
    /// The names this thread read last (see [`NamesCache`]).
    static LAST_READ: RefCell<Option<LastRead>> = const { RefCell::new(None) };
}

impl NamesCache {
    /// The tool names of `registry`'s current operations.
    pub(crate) fn get(
        &self,
        registry: &OperationRegistry,
        naming: ToolNaming,
    ) -> Result<Arc<ToolNames>, ToolNameError> {
        let revision = registry.revision();
        if let Some(names) = self.kept_at(revision) {
            return Ok(names.clone());
        }
        let names = Arc::new(ToolNames::build_with(&registry.specs(), naming, |id| {
            registry.lookup(id)
        })?);
        *self.kept.write() = Some((revision, names.clone()));
        Ok(names)
    }

    /// `read` of the tool names of `registry`'s current operations: [`get`](Self::get)
    /// without taking a reference to the names when they are current (what every tool
    /// call does: it reads one operation out of them).
    pub(crate) fn read<R>(
        &self,
        registry: &OperationRegistry,
        naming: ToolNaming,
        read: impl FnOnce(&ToolNames) -> R,
    ) -> Result<R, ToolNameError> {
        let revision = registry.revision();
        let mut read = Some(read);
        let on_thread = LAST_READ.try_with(|last| match &*last.borrow() {
            Some(last) if last.cache == self.number && last.revision == revision => {
                read.take().map(|read| read(&last.names))
            }
            _ => None,
        });
        if let Ok(Some(read)) = on_thread {
            return Ok(read);
        }
        let Some(read) = read else {
            unreachable!("`read` is taken only when its value is returned")
        };
        let names = self.get(registry, naming)?;
        // Kept under the revision read before the names were: never newer than they are.
        // (Not while a `read` on this thread borrows them: it would read other names.)
        let _ = LAST_READ.try_with(|last| {
            if let Ok(mut last) = last.try_borrow_mut() {
                *last = Some(LastRead {
                    cache: self.number,
                    revision,
                    names: names.clone(),
                });
            }
        });
        Ok(read(&names))
    }

    /// The names kept for `revision`, if they are the ones kept, borrowed under the lock.
    fn kept_at(&self, revision: u64) -> Option<MappedRwLockReadGuard<'_, Arc<ToolNames>>> {
        RwLockReadGuard::try_map(self.kept.read(), |kept| match kept {
            Some((at, names)) if *at == revision => Some(names),
            _ => None,
        })
        .ok()
    }
}

/// The tool name of every operation, both ways.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolNames {
    /// Shared, so a call takes its operation with one reference count (the definitions
    /// it holds are large to copy).
    by_tool: BTreeMap<String, Arc<Served>>,
    by_id: BTreeMap<String, String>,
    /// The operations served as resources and prompts instead of tools.
    pub(crate) catalog: super::catalog::Catalog,
}

/// The operation served under one tool name, as the registry had it when the names were
/// built (the names are rebuilt when the registry changes), so a call neither looks it up
/// again nor formats its id.
#[derive(Debug)]
pub(crate) struct Served {
    /// The operation as the registry had it when the names were built (read after the
    /// revision they are kept under, see [`NamesCache`]), so a call does not look it up;
    /// `None` when it was removed meanwhile, or for names built from specs alone.
    pub(crate) found: Option<FoundOperation>,
    /// The operation's id.
    pub(crate) id: Arc<str>,
    /// The operation's spec.
    pub(crate) spec: Arc<OperationSpec>,
    /// [`takes_arguments`](super::tools::takes_arguments) of the spec.
    pub(crate) takes_arguments: bool,
    /// The [`output_form`](super::tools::output_form) for a legacy and a modern client.
    pub(crate) forms: [super::tools::OutputForm; 2],
    /// The output is [`Binary`](opkit::binary::Binary) (base64 text): its result carries a
    /// content block beside the structured content.
    pub(crate) binary_output: bool,
    /// The tool's definition for a legacy and a modern client, built at first use (a modern
    /// `tools/call` over HTTP asks for it on every request, to check `Mcp-Param-*` headers).
    definitions: [OnceLock<Option<Tool>>; 2],
}

impl Served {
    /// The definition of this operation served as `tool` to a modern or a legacy client.
    pub(crate) fn definition(&self, tool: &str, modern: bool) -> Option<Tool> {
        self.definitions[usize::from(modern)]
            .get_or_init(|| super::tools::tool(&self.spec, tool, modern))
            .clone()
    }
}

impl ToolNames {
    /// The mapping of `specs`, or the first problem found (in id order).
    pub(crate) fn build(
        specs: &[Arc<OperationSpec>],
        naming: ToolNaming,
    ) -> Result<Self, ToolNameError> {
        Self::build_with(specs, naming, |_| None)
    }

    /// [`build`](Self::build), each tool holding the operation `lookup` finds for its id
    /// ([`Served::found`]).
    fn build_with(
        specs: &[Arc<OperationSpec>],
        naming: ToolNaming,
        lookup: impl Fn(&str) -> Option<FoundOperation>,
    ) -> Result<Self, ToolNameError> {
        let mut names = Self::default();
        let mut tools = Vec::new();
        for spec in specs {
            if !names.catalog.add(spec, naming)? {
                tools.push(spec);
            }
        }
        let assigned = assign(&tools, naming)?;
        for (spec, tool) in tools.into_iter().zip(assigned) {
            let id = spec.id();
            names.by_tool.insert(
                tool.clone(),
                Arc::new(Served {
                    found: lookup(&id),
                    id: Arc::from(id.as_str()),
                    spec: spec.clone(),
                    takes_arguments: super::tools::takes_arguments(spec),
                    forms: [
                        super::tools::output_form(spec, false),
                        super::tools::output_form(spec, true),
                    ],
                    binary_output: opkit::binary::is_binary_schema(&spec.output_schema),
                    definitions: Default::default(),
                }),
            );
            names.by_id.insert(id, tool);
        }
        names.catalog.check_completers(specs, naming)?;
        Ok(names)
    }

    /// The operation served as `tool` (calls use [`served`](Self::served)).
    #[cfg(test)]
    pub(crate) fn operation(&self, tool: &str) -> Option<&str> {
        self.by_tool.get(tool).map(|served| &*served.id)
    }

    /// The operation served as `tool`, with its spec.
    pub(crate) fn served(&self, tool: &str) -> Option<&Arc<Served>> {
        self.by_tool.get(tool)
    }

    /// The operations from the first id not before `from` on, in id order: `(id, tool name,
    /// operation)`.
    pub(crate) fn starting_at<'a>(
        &'a self,
        from: &str,
    ) -> impl Iterator<Item = (&'a str, &'a str, &'a Arc<Served>)> + 'a {
        self.by_id
            .range::<str, _>((std::ops::Bound::Included(from), std::ops::Bound::Unbounded))
            .filter_map(|(id, tool)| Some((id.as_str(), tool.as_str(), self.by_tool.get(tool)?)))
    }

    /// The tool name of operation `id` (listing uses [`starting_at`](Self::starting_at)).
    #[cfg(test)]
    pub(crate) fn tool(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }
}

/// The tool name of each of `specs`, in their order. An operation's own name
/// (`tool_name`) is kept as it is, and refused when it is invalid or another's own name: the
/// application chose it. A name derived from an id is kept when it is valid and no other
/// operation's; otherwise (an imported id too long for the limit, or two ids meeting after
/// [`ToolNaming::ProviderSafe`]) it is [fitted](ToolNaming::fit), with a log line, so a
/// registry is never refused for the names its ids give. Kept names are reserved first, so a
/// fitted name never takes one.
fn assign(specs: &[&Arc<OperationSpec>], naming: ToolNaming) -> Result<Vec<String>, ToolNameError> {
    // Each operation's id and its own name, or the name its id gives (read once).
    let candidates: Vec<(String, Option<&str>, String)> = specs
        .iter()
        .map(|spec| {
            let id = spec.id();
            let own = super::options::tool_name(spec);
            let name = own.map_or_else(|| naming.name_of(&id), str::to_owned);
            (id, own, name)
        })
        .collect();
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    let mut derived: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, own, name) in &candidates {
        if own.is_none() {
            *derived.entry(name).or_default() += 1;
            continue;
        }
        if let Some(reason) = naming.check(name) {
            return Err(ToolNameError::Invalid {
                operation: id.clone(),
                tool: name.clone(),
                reason,
            });
        }
        if let Some(first) = taken.insert(name.clone(), id.clone()) {
            return Err(ToolNameError::Collision {
                tool: name.clone(),
                first,
                second: id.clone(),
            });
        }
    }
    // A derived name is kept when valid, its own (no other id gives it) and no operation
    // chose it; kept ones are reserved before any is fitted. `None`: to be fitted.
    let mut assigned: Vec<Option<String>> = Vec::with_capacity(candidates.len());
    for (id, own, name) in &candidates {
        let keep = own.is_some()
            || (derived[name.as_str()] == 1
                && naming.check(name).is_none()
                && !taken.contains_key(name));
        if keep && own.is_none() {
            taken.insert(name.clone(), id.clone());
        }
        assigned.push(keep.then(|| name.clone()));
    }
    for ((id, _, _), name) in candidates.iter().zip(&mut assigned) {
        if name.is_some() {
            continue;
        }
        // Ends: `taken` is finite, and each attempt salts the digest anew.
        let mut attempt = 0;
        let fitted = loop {
            let fitted = naming.fit(id, attempt);
            if !taken.contains_key(&fitted) {
                break fitted;
            }
            attempt += 1;
        };
        tracing::info!(
            operation = %id,
            tool = %fitted,
            "the name this operation's id gives is too long, not allowed or another's: it is served under a shortened name (its id is in the tool's _meta as opkit/operationId; `mcp(tool_name = \"..\")` chooses one)"
        );
        taken.insert(fitted.clone(), id.clone());
        *name = Some(fitted);
    }
    Ok(assigned.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::super::options::McpSpec;
    use super::*;
    use opkit::OperationKind;
    use serde_json::json;

    #[test]
    fn the_cache_keeps_names_until_the_registry_changes() {
        let registry = OperationRegistry::new();
        let add = |name: &str| {
            registry
                .register(
                    OperationSpec::new("math", name, OperationKind::Query),
                    opkit::Handler::unary(|_, _| async { Ok(json!(0)) }),
                )
                .unwrap();
        };
        add("one");
        let cache = NamesCache::default();
        let first = cache.get(&registry, ToolNaming::OperationId).unwrap();
        let again = cache.get(&registry, ToolNaming::OperationId).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "not rebuilt");
        add("two");
        let after = cache.get(&registry, ToolNaming::OperationId).unwrap();
        assert!(
            after.operation("math.two").is_some(),
            "rebuilt after a change"
        );
        registry.unregister("math.two");
        let removed = cache.get(&registry, ToolNaming::OperationId).unwrap();
        assert!(removed.operation("math.two").is_none());
        assert!(cache.clone().kept.read().is_none(), "a clone starts empty");
    }

    #[test]
    fn a_thread_reads_its_kept_names_only_while_they_are_current_and_its_caches() {
        let registry = OperationRegistry::new();
        let add = |registry: &OperationRegistry, name: &str| {
            registry
                .register(
                    OperationSpec::new("math", name, OperationKind::Query),
                    opkit::Handler::unary(|_, _| async { Ok(json!(0)) }),
                )
                .unwrap();
        };
        let has = |cache: &NamesCache, registry: &OperationRegistry, tool: &str| {
            cache
                .read(registry, ToolNaming::OperationId, |names| {
                    names.served(tool).is_some()
                })
                .unwrap()
        };
        add(&registry, "one");
        let cache = NamesCache::default();
        assert!(has(&cache, &registry, "math.one"));
        // Read again from this thread's names: the same answer.
        assert!(has(&cache, &registry, "math.one"));
        // A change the thread's names predate is seen at the next read, both ways.
        add(&registry, "two");
        assert!(has(&cache, &registry, "math.two"));
        registry.unregister("math.one");
        assert!(!has(&cache, &registry, "math.one"));
        // Another cache on this thread (another server, another registry) reads its own
        // names, and then the first one its own again.
        let other_registry = OperationRegistry::new();
        add(&other_registry, "three");
        let other = NamesCache::default();
        assert!(has(&other, &other_registry, "math.three"));
        assert!(!has(&other, &other_registry, "math.two"));
        assert!(has(&cache, &registry, "math.two"));
        assert!(!has(&cache, &registry, "math.three"));
        // A clone is a cache of its own.
        let clone = cache.clone();
        assert!(has(&clone, &other_registry, "math.three"));
        assert!(has(&cache, &registry, "math.two"));
    }

    fn spec(namespace: &str, name: &str) -> Arc<OperationSpec> {
        Arc::new(OperationSpec::new(namespace, name, OperationKind::Query))
    }

    fn named(namespace: &str, name: &str, tool: &str) -> Arc<OperationSpec> {
        Arc::new(OperationSpec::new(namespace, name, OperationKind::Query).mcp_tool_name(tool))
    }

    #[test]
    fn ids_map_both_ways_in_either_form() {
        let specs = [spec("math", "add"), spec("a.b", "c")];
        let ids = ToolNames::build(&specs, ToolNaming::OperationId).unwrap();
        assert_eq!(ids.tool("math.add"), Some("math.add"));
        assert_eq!(ids.operation("a.b.c"), Some("a.b.c"));
        let safe = ToolNames::build(&specs, ToolNaming::ProviderSafe).unwrap();
        assert_eq!(safe.tool("a.b.c"), Some("a_b_c"));
        assert_eq!(safe.operation("math_add"), Some("math.add"));
        assert_eq!(safe.operation("math.add"), None);
    }

    #[test]
    fn overrides_win_and_only_their_collisions_are_refused() {
        let conformance = named("conformance", "simple", "test_simple_text");
        let names = ToolNames::build(&[conformance], ToolNaming::OperationId).unwrap();
        assert_eq!(
            names.operation("test_simple_text"),
            Some("conformance.simple")
        );
        let twice = [named("a", "b", "same"), named("a", "c", "same")];
        let error = ToolNames::build(&twice, ToolNaming::OperationId).unwrap_err();
        assert_eq!(
            error,
            ToolNameError::Collision {
                tool: "same".into(),
                first: "a.b".into(),
                second: "a.c".into()
            }
        );
        assert!(error.to_string().contains("tool_name"), "{error}");
        let dotted = named("x", "y", "x.y");
        let error = ToolNames::build(&[dotted], ToolNaming::ProviderSafe).unwrap_err();
        assert!(matches!(error, ToolNameError::Invalid { .. }), "{error}");
    }

    #[test]
    fn derived_names_too_long_or_taken_are_fitted_not_refused() {
        let clash = [
            spec("a", "b_c"),
            spec("a_b", "c"),
            named("k", "l", "a_b_c_x"),
        ];
        let safe = ToolNames::build(&clash, ToolNaming::ProviderSafe).unwrap();
        let (first, second) = (safe.tool("a.b_c").unwrap(), safe.tool("a_b.c").unwrap());
        assert_ne!(first, second);
        for name in [first, second] {
            assert!(name.starts_with("a_b_c_"), "{name}");
            assert_eq!(ToolNaming::ProviderSafe.check(name), None, "{name}");
        }
        assert_eq!(safe.tool("k.l"), Some("a_b_c_x"), "an own name is kept");
        // A derived name another operation chose as its own is fitted.
        let chosen = [spec("m", "n"), named("p", "q", "m.n")];
        let names = ToolNames::build(&chosen, ToolNaming::OperationId).unwrap();
        assert_eq!(names.operation("m.n"), Some("p.q"));
        assert!(names.tool("m.n").unwrap().starts_with("m.n_"));
        // Too long for either form: fitted within the limit, the same on every build.
        let long = spec("n", &"x".repeat(140));
        for naming in [ToolNaming::OperationId, ToolNaming::ProviderSafe] {
            let one = ToolNames::build(std::slice::from_ref(&long), naming).unwrap();
            let name = one.tool(&long.id()).unwrap().to_owned();
            assert_eq!(naming.check(&name), None, "{name}");
            let again = ToolNames::build(std::slice::from_ref(&long), naming).unwrap();
            assert_eq!(again.tool(&long.id()), Some(name.as_str()));
            assert_eq!(one.operation(&name), Some(long.id().as_str()));
        }
        let fits = spec("n", &"x".repeat(70));
        let kept = ToolNames::build(std::slice::from_ref(&fits), ToolNaming::OperationId).unwrap();
        assert_eq!(
            kept.tool(&fits.id()),
            Some(fits.id().as_str()),
            "valid: as it is"
        );
    }

    #[test]
    fn completers_must_be_queries_for_input_fields() {
        let prompt = |argument: &str, completer: &str| {
            Arc::new(
                OperationSpec::new("notes", "summarize", OperationKind::Query)
                    .input_schema(
                        json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
                    )
                    .mcp_prompt()
                    .mcp_completion(argument, completer),
            )
        };
        let topics = spec("notes", "topics");
        let delete = Arc::new(OperationSpec::new(
            "notes",
            "delete",
            OperationKind::Mutation,
        ));
        let naming = ToolNaming::OperationId;
        let ok = [prompt("topic", "notes.topics"), topics.clone()];
        assert!(ToolNames::build(&ok, naming).is_ok());
        let reason = |specs: &[Arc<OperationSpec>]| match ToolNames::build(specs, naming) {
            Err(ToolNameError::Invalid { reason, .. }) => reason,
            other => panic!("not refused: {other:?}"),
        };
        let missing = reason(&[prompt("topic", "notes.nowhere"), topics.clone()]);
        assert!(
            missing.contains("not an operation of the registry"),
            "{missing}"
        );
        let mutation = reason(&[prompt("topic", "notes.delete"), delete]);
        assert!(mutation.contains("not a query"), "{mutation}");
        let field = reason(&[prompt("title", "notes.topics"), topics]);
        assert!(field.contains("not a field of its input"), "{field}");
    }
}
