//! [`Seeded`]: the tables on the serving and call paths (the HTTP server's routes, the MCP
//! server's sessions and streams, the Redis and WebSocket transports' topics, calls and
//! subscriptions), hashed with foldhash and seeded per table, as the protocol's own tables in
//! `opkit` are: keys a peer chooses (topics, request and session ids) cannot be aimed at one
//! bucket without the seed, and a lookup costs a fraction of SipHash's.

/// A `HashMap` hashed with foldhash, seeded per table.
pub(crate) type Seeded<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
