//! Clients generated from a registry: code in another language that calls the registry's
//! operations as a server built with this crate serves them, typed from the same schemas.
//!
//! - [`typescript`]: a TypeScript module for browsers and Node (`fetch` and server-sent
//!   events over the [HTTP server](crate::http_server)'s `/ops/<id>` routes).

pub mod typescript;
