//! Forwarding a stdio server's stderr to `tracing`.

use tokio::io::AsyncBufReadExt;

/// Logs a stdio server's stderr line by line.
pub(super) fn forward_stderr(label: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        // Ends at EOF, when the child exits.
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "opkit_adapters::mcp", server = %label, "stderr: {line}");
        }
    });
}
