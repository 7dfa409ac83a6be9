//! Capturing the WARN events a piece of async code logs (shared by the core test files).

use std::sync::{Arc, Mutex};

/// Runs `body` with a tracing subscriber that records WARN events; returns its output and them.
pub async fn capture_warnings<T>(body: impl std::future::Future<Output = T>) -> (T, String) {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let output = body.await;
    let bytes = buffer.0.lock().unwrap().clone();
    (output, String::from_utf8(bytes).unwrap())
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
