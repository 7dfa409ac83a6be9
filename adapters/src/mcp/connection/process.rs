//! Starting a stdio server: the child process, its stdin/stdout as the transport, its
//! stderr forwarded or inherited.

use super::error::McpError;
use super::stderr::forward_stderr;
use rmcp::transport::TokioChildProcess;
use std::process::Stdio;

/// Starts the program of `cmd` (with its arguments and environment changes) as a stdio
/// server: its stdin/stdout become the transport; its stderr is inherited or forwarded to
/// `tracing`. Returns the transport and the child's pid.
pub(super) fn spawn(
    cmd: &tokio::process::Command,
    label: &str,
    inherit_stderr: bool,
) -> Result<(TokioChildProcess, Option<u32>), McpError> {
    let mut fresh = tokio::process::Command::new(cmd.as_std().get_program());
    // rmcp kills the child from a spawned task; if the runtime is already gone, this
    // makes dropping the child kill it all the same.
    fresh.args(cmd.as_std().get_args()).kill_on_drop(true);
    for (key, value) in cmd.as_std().get_envs() {
        match value {
            Some(value) => fresh.env(key, value),
            None => fresh.env_remove(key),
        };
    }
    let stderr = if inherit_stderr {
        Stdio::inherit()
    } else {
        Stdio::piped()
    };
    let (transport, stderr) = TokioChildProcess::builder(fresh)
        .stderr(stderr)
        .spawn()
        .map_err(|source| McpError::Spawn {
            label: label.to_owned(),
            source,
        })?;
    if let Some(stderr) = stderr {
        forward_stderr(label.to_owned(), stderr);
    }
    let pid = transport.id();
    Ok((transport, pid))
}
