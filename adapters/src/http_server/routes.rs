//! What the server derives from an operation's spec once, not on every request: the methods
//! it answers and how its input spreads over a query string.

use super::query::QueryShape;
use crate::seeded::Seeded;
use http::Method;
use opkit::{FoundOperation, OperationKind, OperationRegistry, OperationSpec};
use parking_lot::RwLock;
use std::sync::Arc;

/// One operation as served at `/ops/<id>`.
pub(crate) struct Route {
    pub(crate) spec: Arc<OperationSpec>,
    /// The methods it answers: queries and subscriptions take GET (when their input spreads
    /// over query parameters) and POST; mutations take POST.
    pub(crate) methods: Vec<Method>,
    /// How a GET's query string maps onto the input, when it can.
    pub(crate) query: Option<QueryShape>,
}

impl Route {
    fn of(spec: Arc<OperationSpec>) -> Self {
        // The view holds only what the query reading needs of a shared schema: reading the
        // whole self-contained form would keep a copy of its definitions per operation.
        let query = QueryShape::of(&super::shared_components::query_view(&spec.input_schema));
        let methods = match spec.kind {
            OperationKind::Mutation => vec![Method::POST],
            OperationKind::Query | OperationKind::Subscription if query.is_some() => {
                vec![Method::GET, Method::POST]
            }
            OperationKind::Query | OperationKind::Subscription => vec![Method::POST],
        };
        Self {
            spec,
            methods,
            query,
        }
    }
}

/// The routes derived so far, by operation id.
///
/// Invariant: a kept route is used only while its `spec` is the very one the registry holds
/// (`Arc::ptr_eq`), so an operation replaced or re-registered gets a fresh route on its next
/// request; and the map holds at most about twice as many routes as the registry has
/// operations (ids the registry no longer has are dropped when it outgrows that).
#[derive(Default)]
pub(crate) struct Routes {
    /// Keyed by ids the registry found (a request's path reaches it only then), hashed with
    /// a fast hash: this is read on every request.
    by_id: RwLock<Seeded<String, Arc<Route>>>,
}

impl Routes {
    /// The route of the operation `found` (looked up in `registry` once, for this request).
    pub(crate) fn get(&self, registry: &OperationRegistry, found: &FoundOperation) -> Arc<Route> {
        let (id, spec) = (found.id(), found.spec());
        if let Some(route) = self.by_id.read().get(id)
            && Arc::ptr_eq(&route.spec, spec)
        {
            return route.clone();
        }
        let route = Arc::new(Route::of(spec.clone()));
        let mut by_id = self.by_id.write();
        if by_id.len() >= 2 * registry.len().max(8) {
            by_id.retain(|id, _| registry.contains(id));
        }
        by_id.insert(id.to_owned(), route.clone());
        route
    }
}

#[cfg(test)]
mod tests {
    use super::Routes;
    use http::Method;
    use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
    use serde_json::json;
    use std::sync::Arc;

    fn spec(kind: OperationKind, input: serde_json::Value) -> OperationSpec {
        let mut spec = OperationSpec::new("test", "op", kind);
        spec.input_schema = input.into();
        spec
    }

    fn handler(kind: OperationKind) -> Handler {
        match kind {
            OperationKind::Subscription => Handler::stream(|_, _| {
                futures::stream::empty::<Result<serde_json::Value, opkit::CallError>>()
            }),
            _ => Handler::unary(|_, _| async { Ok(json!(null)) }),
        }
    }

    #[test]
    fn a_route_is_derived_once_and_again_after_the_operation_changes() {
        let registry = OperationRegistry::new();
        let object = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        registry
            .register(
                spec(OperationKind::Query, object.clone()),
                handler(OperationKind::Query),
            )
            .unwrap();
        let routes = Routes::default();
        let route = |routes: &Routes| {
            let found = registry.lookup("test.op")?;
            Some(routes.get(&registry, &found))
        };
        let first = route(&routes).unwrap();
        assert_eq!(first.methods, [Method::GET, Method::POST]);
        assert!(Arc::ptr_eq(&first, &route(&routes).unwrap()));

        assert!(registry.unregister("test.op"));
        assert!(route(&routes).is_none());
        registry
            .register(
                spec(OperationKind::Mutation, object),
                handler(OperationKind::Mutation),
            )
            .unwrap();
        let replaced = route(&routes).unwrap();
        assert_eq!(replaced.methods, [Method::POST]);
    }
}
