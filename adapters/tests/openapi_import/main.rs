//! The OpenAPI import tests: edge cases, limits, normalization, hostile documents (proptest), SSE
//! chunking, and real peers (FastAPI under uvicorn, Prism, real API documents).
//!
//! One test binary (linked once) of the modules below; each module is the suite of one
//! file, gated on the features it needs.

#[cfg(feature = "openapi")]
#[path = "../openapi_support/mod.rs"]
mod openapi_support;

mod edges;
mod fastapi;
mod hostile;
mod limits;
mod normalization;
mod prism;
mod real_apis;
mod sse_chunking;
