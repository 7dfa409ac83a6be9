//! What a verified token allows a spoke ([`SpokeGrant`]): the operations it may call, the
//! operations it may serve, the plain topics it may use, and the identity the hub stamps on
//! its requests; and the name sets those are made of ([`Names`]).

use opkit::Identity;
use std::collections::BTreeSet;

/// A set of names (operation ids or topics): every name, none, or those listed, each exactly
/// or, ending in `*`, as a prefix (`"math.*"` is every operation of the `math` namespace;
/// `"*"` is every name).
///
/// ```
/// use opkit_adapters::websocket::Names;
/// let math = Names::only(["math.*", "clock.count"]);
/// assert!(math.contains("math.add") && math.contains("clock.count"));
/// assert!(!math.contains("clock.reset") && !math.contains("mathematics.pi"));
/// assert!(Names::all().contains("anything") && !Names::none().contains("anything"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names {
    all: bool,
    exact: BTreeSet<String>,
    prefixes: BTreeSet<String>,
}

impl Names {
    /// Every name.
    pub fn all() -> Self {
        Self {
            all: true,
            ..Self::default()
        }
    }

    /// No name.
    pub fn none() -> Self {
        Self::default()
    }

    /// The names listed: each exactly, or as a prefix when it ends in `*`.
    pub fn only<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        let mut set = Self::none();
        set.extend(names);
        set
    }

    /// Adds names (as [`only`](Self::only) reads them).
    pub fn extend<S: Into<String>>(&mut self, names: impl IntoIterator<Item = S>) {
        for name in names {
            let name = name.into();
            match name.strip_suffix('*') {
                Some("") => self.all = true,
                Some(prefix) => {
                    self.prefixes.insert(prefix.to_owned());
                }
                None => {
                    self.exact.insert(name);
                }
            }
        }
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.all
            || self.exact.contains(name)
            || self
                .prefixes
                .iter()
                .any(|prefix| name.starts_with(prefix.as_str()))
    }

    /// Whether the set holds every name.
    pub fn is_all(&self) -> bool {
        self.all
    }
}

/// What a verified token grants a spoke.
///
/// A grant says what the spoke may do and nothing else is allowed:
///
/// | may | given by | default of [`new`](Self::new) | default of [`service`](Self::service) |
/// |---|---|---|---|
/// | call an operation (publish on its request topic, abort its own calls) | [`calling`](Self::calling) | every operation | every operation |
/// | receive the replies to its own calls (on any reply topic it subscribes to) | always | yes | yes |
/// | serve an operation (join its handler group, read its request and abort topics, answer the requests routed to it) | [`serving`](Self::serving), [`serve_all`](Self::serve_all) | none | every operation |
/// | publish and subscribe on topics outside the call protocol | [`with_topics`](Self::with_topics), [`serve_all`](Self::serve_all) | none | every topic |
///
/// Whatever the grant, a spoke never receives replies to other spokes' calls, cannot answer a
/// request the hub did not route to it, and cannot abort another spoke's call. A spoke whose
/// grant carries an [`identity`](Self::with_identity) has that identity stamped on every
/// request it publishes; one granted none states its own (trust it to, or require signed
/// identities).
///
/// ```
/// use opkit::Identity;
/// use opkit_adapters::websocket::SpokeGrant;
/// // A kiosk: calls as `kiosk-7`, only the `shop` operations, serves nothing.
/// let kiosk = SpokeGrant::new("kiosk")
///     .with_identity(Identity::new("kiosk-7"))
///     .calling(["shop.*"]);
/// assert!(kiosk.may_call("shop.order") && !kiosk.may_call("admin.purge"));
/// assert!(!kiosk.may_serve("shop.order"));
/// // A service: serves the `math` operations and calls anything.
/// let math = SpokeGrant::new("math").serving(["math.*"]);
/// assert!(math.may_serve("math.add") && !math.may_serve("admin.purge"));
/// // A trusted service spoke that may do everything, as every grant could before grants
/// // carried permissions.
/// assert!(SpokeGrant::service("backend").may_serve("admin.purge"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SpokeGrant {
    /// The spoke's name, in logs and [`WsHub::operations`](super::WsHub::operations).
    pub name: String,
    /// When set, the hub stamps this identity on every `call.requested` the spoke publishes.
    pub identity: Option<Identity>,
    /// The operations the spoke may call.
    pub calls: Names,
    /// The operations the spoke may serve.
    pub serves: Names,
    /// The topics outside the call protocol (not `opkit.request.*`, `opkit.abort.*`,
    /// `opkit.reply*`) the spoke may publish and subscribe on.
    pub topics: Names,
}

impl SpokeGrant {
    /// A client spoke named `name`: it may call every operation (the handlers check each
    /// call's access rule) and receive the replies to its own calls; it serves nothing and
    /// uses no topic outside the call protocol. Without an
    /// [`identity`](Self::with_identity) its requests carry the identities it puts in them.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            identity: None,
            calls: Names::all(),
            serves: Names::none(),
            topics: Names::none(),
        }
    }

    /// A trusted service spoke named `name`: [`new`](Self::new) with
    /// [`serve_all`](Self::serve_all). It may call and serve every operation and use every
    /// topic.
    pub fn service(name: impl Into<String>) -> Self {
        Self::new(name).serve_all()
    }

    /// Lets the spoke serve every operation and use every topic outside the call protocol:
    /// for trusted service spokes only (any operation's requests reach it if it asks).
    #[must_use]
    pub fn serve_all(mut self) -> Self {
        self.serves = Names::all();
        self.topics = Names::all();
        self
    }

    /// Lets the spoke serve the operations named (exactly, or by prefix ending in `*`; see
    /// [`Names`]), in addition to those it may already serve.
    #[must_use]
    pub fn serving<S: Into<String>>(mut self, operations: impl IntoIterator<Item = S>) -> Self {
        self.serves.extend(operations);
        self
    }

    /// Lets the spoke call only the operations named (exactly, or by prefix ending in `*`),
    /// instead of every operation.
    #[must_use]
    pub fn calling<S: Into<String>>(mut self, operations: impl IntoIterator<Item = S>) -> Self {
        self.calls = Names::only(operations);
        self
    }

    /// Lets the spoke publish and subscribe on the topics named (outside the call protocol),
    /// in addition to those it may already use.
    #[must_use]
    pub fn with_topics<S: Into<String>>(mut self, topics: impl IntoIterator<Item = S>) -> Self {
        self.topics.extend(topics);
        self
    }

    /// Binds the spoke's requests to `identity` (the hub overwrites theirs).
    #[must_use]
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Whether the spoke may call `operation_id`.
    pub fn may_call(&self, operation_id: &str) -> bool {
        self.calls.contains(operation_id)
    }

    /// Whether the spoke may serve `operation_id`.
    pub fn may_serve(&self, operation_id: &str) -> bool {
        self.serves.contains(operation_id)
    }

    /// Whether the spoke may use `topic`, a topic outside the call protocol.
    pub fn may_use_topic(&self, topic: &str) -> bool {
        self.topics.contains(topic)
    }
}
