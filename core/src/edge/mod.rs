//! What the edge a call came through knows about it: [`Edge`] (the transport's name and
//! typed facts such as the HTTP method and headers or the MCP session id) and [`Session`] (a
//! state slot an MCP session or an application-defined key scopes).
//!
//! An *edge* is whatever brings a call from outside the process: the HTTP server, the MCP
//! server, the call protocol's `CallHandler`, or a server the application writes. The edge
//! puts what it knows on the [`OperationContext`](crate::OperationContext)
//! ([`with_edge`](crate::OperationContext::with_edge)), so an operation or a middleware reads
//! it, typed, without it ever being part of the operation's input schema:
//!
//! ```
//! use opkit::OperationContext;
//! use opkit::edge::Edge;
//!
//! /// A fact a Unix-socket server of the application knows about its peer.
//! #[derive(Debug)]
//! struct PeerUid(u32);
//!
//! let ctx = OperationContext::new().with_edge(Edge::new("unix").with_fact(PeerUid(1000)));
//! let edge = ctx.edge().unwrap();
//! assert_eq!(edge.name(), "unix");
//! assert_eq!(edge.fact::<PeerUid>().unwrap().0, 1000);
//! ```
//!
//! The facts opkit's own edges set are typed values of their crates
//! (`opkit_adapters::http_server::HttpRequest`, `opkit_adapters::mcp_server::McpSession`,
//! [`CallProtocolRequest`](crate::protocol::CallProtocolRequest)); an edge name is one of
//! [`Edge::HTTP`], [`Edge::MCP`], [`Edge::CALL_PROTOCOL`] or the application's own.
//!
//! # Options an operation gives an edge
//!
//! The other way round, an operation says how one edge should serve it in that edge's own
//! group of its attribute: `#[operation(mcp(resource = "notes://{id}"), http(method = "GET",
//! path = "/notes/{id}"))]`. Core carries each group as JSON (keys as written) in
//! [`OperationSpec::edges`](crate::OperationSpec::edges) without knowing it; the edge reads
//! its own, typed, with [`OperationSpec::edge_options`](crate::OperationSpec::edge_options),
//! and refuses to start on options it cannot read ([`EdgeOptionsError`]). So an edge of the
//! application's takes options from the attribute with no change to opkit:
//! `#[operation(grpc(method = "GetNote"))]` gives `{"grpc": {"method": "GetNote"}}`. In a
//! group, `key = "text"`, numbers and `true`/`false` are those values, `key = [..]` a list,
//! `key` alone `true`, and `key(..)` an object of its own keys.

mod options;
mod session;

pub use options::EdgeOptionsError;
pub use session::{Session, Sessions};

use crate::state::StateMap;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The edge a call came through: its name and the typed facts it knows.
///
/// Cheap to clone (the facts are shared). Built by the edge before it serves the call.
#[derive(Clone)]
pub struct Edge {
    name: &'static str,
    facts: Facts,
    session: Option<Arc<Session>>,
}

/// An edge's facts. Most edges know one (the HTTP server its request, the call protocol its
/// message): that one is kept on its own, so building the edge of a call allocates the fact
/// and nothing else; a second makes them a map.
#[derive(Clone, Default)]
enum Facts {
    #[default]
    None,
    /// One fact, and the name of its type (for `Debug`).
    One(Arc<dyn Any + Send + Sync>, &'static str),
    Many(Arc<StateMap>),
}

impl Facts {
    fn with<T: Send + Sync + 'static>(self, fact: T) -> Self {
        match self {
            Self::None => Self::One(Arc::new(fact), std::any::type_name::<T>()),
            Self::One(value, _) if value.is::<T>() => {
                Self::One(Arc::new(fact), std::any::type_name::<T>())
            }
            Self::One(value, type_name) => {
                let mut map = StateMap::default();
                map.insert_shared(value, type_name);
                map.insert(fact);
                Self::Many(Arc::new(map))
            }
            Self::Many(mut map) => {
                Arc::make_mut(&mut map).insert(fact);
                Self::Many(map)
            }
        }
    }

    fn get<T: 'static>(&self) -> Option<&T> {
        match self {
            Self::None => None,
            Self::One(value, _) => value.downcast_ref::<T>(),
            Self::Many(map) => map.get::<T>(),
        }
    }
}

impl fmt::Debug for Facts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.debug_set().finish(),
            Self::One(_, type_name) => f.debug_set().entry(type_name).finish(),
            Self::Many(map) => map.fmt(f),
        }
    }
}

impl fmt::Debug for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Edge")
            .field("name", &self.name)
            .field("facts", &self.facts)
            .field(
                "session",
                &self.session.as_ref().map(|session| session.key()),
            )
            .finish()
    }
}

impl Edge {
    /// The HTTP server (`opkit_adapters::http_server`).
    pub const HTTP: &'static str = "http_server";
    /// The MCP server (`opkit_adapters::mcp_server`).
    pub const MCP: &'static str = "mcp_server";
    /// The call protocol's [`CallHandler`](crate::CallHandler), over any `PubSub`.
    pub const CALL_PROTOCOL: &'static str = "call_handler";

    /// An edge named `name` (the span's `opkit.path` of the calls it serves), with no facts.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            facts: Facts::None,
            session: None,
        }
    }

    /// Adds a fact of type `T` (replacing one of the same type).
    #[must_use]
    pub fn with_fact<T: Send + Sync + 'static>(mut self, fact: T) -> Self {
        self.facts = self.facts.with(fact);
        self
    }

    /// Scopes the call to `session` (see [`Session`]).
    #[must_use]
    pub fn with_session(mut self, session: Arc<Session>) -> Self {
        self.session = Some(session);
        self
    }

    /// The edge's name: [`Edge::HTTP`], [`Edge::MCP`], [`Edge::CALL_PROTOCOL`] or the one an
    /// application's edge chose.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The fact of type `T`, when the edge knows one.
    pub fn fact<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.facts.get::<T>()
    }

    /// Whether the edge is its name alone: no facts, no session.
    pub(crate) fn is_bare(&self) -> bool {
        matches!(self.facts, Facts::None) && self.session.is_none()
    }

    /// The session the call belongs to, when the edge (or a middleware) scoped it to one.
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.session.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Method(&'static str);
    #[derive(Debug, PartialEq)]
    struct Peer(u32);

    #[test]
    fn one_fact_two_facts_and_a_replaced_fact_read_back() {
        let none = Edge::new("test");
        assert_eq!(none.fact::<Method>(), None);

        let one = Edge::new("test").with_fact(Method("GET"));
        assert_eq!(one.fact::<Method>(), Some(&Method("GET")));
        assert_eq!(one.fact::<Peer>(), None);
        let replaced = one.clone().with_fact(Method("POST"));
        assert_eq!(replaced.fact::<Method>(), Some(&Method("POST")));
        assert_eq!(
            one.fact::<Method>(),
            Some(&Method("GET")),
            "a clone is its own"
        );

        let two = one.with_fact(Peer(7));
        assert_eq!(two.fact::<Method>(), Some(&Method("GET")));
        assert_eq!(two.fact::<Peer>(), Some(&Peer(7)));
        let three = two.clone().with_fact(Peer(8)).with_fact(Method("PUT"));
        assert_eq!(three.fact::<Peer>(), Some(&Peer(8)));
        assert_eq!(three.fact::<Method>(), Some(&Method("PUT")));
        assert_eq!(two.fact::<Peer>(), Some(&Peer(7)), "a clone is its own");
    }

    #[test]
    fn debug_names_the_types_of_the_facts() {
        let one = format!("{:?}", Edge::new("test").with_fact(Method("GET")));
        assert!(
            one.contains("facts: {\"opkit::edge::tests::Method\"}"),
            "{one}"
        );
        let two = format!(
            "{:?}",
            Edge::new("test")
                .with_fact(Method("GET"))
                .with_fact(Peer(1))
        );
        assert!(two.contains("Method") && two.contains("Peer"), "{two}");
        let none = format!("{:?}", Edge::new("test"));
        assert!(none.contains("facts: {}"), "{none}");
    }
}
