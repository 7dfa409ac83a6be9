//! The span recorder of the trace tests: a `tracing` layer that writes every closed
//! `opkit::call` span as one JSON line (its fields, plus `name` and `process`), helpers to
//! read such lines back and check parent links, and the steps the scenarios share (running
//! one with its spans recorded, the incoming trace context, the echo operation). It collects
//! spans in one process or many (each writing a file of its own).

use opkit::{Handler, OperationKind, OperationRegistry, OperationSpec};
use serde_json::{Map, Value};
use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The fields of one span, as JSON.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::from(format!("{value:?}")));
    }
}

/// Writes closed `opkit::call` spans as JSON lines to `out`.
pub struct JsonSpans<W> {
    out: Arc<Mutex<W>>,
    process: String,
}

impl<W: Write + Send + 'static> JsonSpans<W> {
    /// Writes to `out`, every line naming `process`.
    pub fn new(out: W, process: &str) -> Self {
        Self {
            out: Arc::new(Mutex::new(out)),
            process: process.to_owned(),
        }
    }
}

impl<S, W> Layer<S> for JsonSpans<W>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: Write + Send + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != opkit::trace::TARGET {
            return;
        }
        let mut fields = Fields(Map::new());
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Mutex::new(fields.0));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let extensions = span.extensions();
        if let Some(map) = extensions.get::<Mutex<Map<String, Value>>>() {
            let mut fields = Fields(std::mem::take(&mut *map.lock().unwrap()));
            values.record(&mut fields);
            *map.lock().unwrap() = fields.0;
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let extensions = span.extensions();
        let Some(map) = extensions.get::<Mutex<Map<String, Value>>>() else {
            return;
        };
        let mut line = map.lock().unwrap().clone();
        line.insert("name".into(), Value::from(span.name()));
        line.insert("process".into(), Value::from(self.process.clone()));
        let mut out = self.out.lock().unwrap();
        let _ = writeln!(out, "{}", Value::Object(line));
        let _ = out.flush();
    }
}

/// A `Write` into a shared buffer, for spans collected in-process.
#[derive(Clone, Default)]
pub struct SharedBuffer(pub Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuffer {
    /// The spans written so far.
    pub fn spans(&self) -> Vec<Value> {
        parse_lines(&String::from_utf8_lossy(&self.0.lock().unwrap()))
    }
}

/// The spans in JSON-lines text.
pub fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The one span with `opkit.path == path` (and `rpc.method == method`); panics listing
/// the spans otherwise.
pub fn find<'a>(spans: &'a [Value], path: &str, method: &str) -> &'a Value {
    let found: Vec<&Value> = spans
        .iter()
        .filter(|span| span["opkit.path"] == path && span["rpc.method"] == method)
        .collect();
    assert_eq!(found.len(), 1, "one {path} span of {method} in {spans:#?}");
    found[0]
}

/// Asserts that `child`'s parent is `parent`, in the same trace.
pub fn assert_parent(child: &Value, parent: &Value) {
    assert_eq!(child["trace_id"], parent["trace_id"], "{child} vs {parent}");
    assert_eq!(
        child["parent_span_id"], parent["span_id"],
        "the parent of {child} should be {parent}"
    );
}

/// The `traceparent` the scenarios continue: trace `4bf92f35…`, parent span `00f067aa…`.
pub const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Runs `scenario` on a current-thread runtime with a span recorder as the default
/// subscriber; returns the recorded spans, one JSON object each.
pub fn spans_of(scenario: impl Future<Output = ()>) -> Vec<Value> {
    let buffer = SharedBuffer::default();
    let subscriber = tracing_subscriber::registry().with(JsonSpans::new(buffer.clone(), "test"));
    let _guard = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(scenario);
    buffer.spans()
}

/// A registry with `<namespace>.echo`, a query answering its input.
pub fn echo_registry(namespace: &str) -> OperationRegistry {
    let registry = OperationRegistry::new();
    registry
        .register(
            OperationSpec::new(namespace, "echo", OperationKind::Query),
            Handler::unary(|input, _ctx| async move { Ok(input) }),
        )
        .unwrap();
    registry
}
