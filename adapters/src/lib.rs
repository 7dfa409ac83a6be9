//! Adapters that connect opkit registries to the outside world, one cargo feature each.
//!
//! No adapter is built yet; each arrives behind its own feature (`openapi`, `mcp`, `redis`,
//! `websocket`, `http-server`, `mcp-server`).
