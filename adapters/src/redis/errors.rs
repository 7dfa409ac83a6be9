//! What a Redis failure means for a call: whether the connection must be replaced, whether
//! the command was refused before it ran, and the transport errors that say whether it may
//! have run.

use opkit::protocol::TransportError;
use redis::RedisError;
use std::fmt;

/// Whether an error means the connection is unusable (and a new one must be made). On a
/// cluster that includes a redirection or `CLUSTERDOWN` left after the client's own retries:
/// a new connection starts from a fresh slot map.
pub(super) fn is_connection_error(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || error.is_unrecoverable_error()
        || error.is_cluster_error()
}

/// A server's answer that refuses a command before running it (the command had no effect).
pub(super) fn is_refusal(error: &RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    matches!(
        error.kind(),
        ErrorKind::AuthenticationFailed
            | ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::ReadOnly
                    | ServerErrorKind::NoPerm
                    | ServerErrorKind::Moved
                    | ServerErrorKind::Ask
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::CrossSlot
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ExecAbort
            )
    )
}

/// A failure after a command may have been written: whether it ran is unknown.
pub(super) fn transport_error(what: &str, error: impl fmt::Display) -> TransportError {
    TransportError::new(format!("redis: {what}: {error}"))
}

/// A failure before anything was written (no connection could be had).
pub(super) fn transport_not_sent(what: &str, error: impl fmt::Display) -> TransportError {
    TransportError::not_sent(format!("redis: {what}: {error}"))
}
