//! The handlers: build the request from the plan and the input, send it with reqwest, and
//! turn the response into an envelope (or a stream of them).
//!
//! Timeouts: the options' `timeout` bounds each request (for SSE, until the response
//! headers arrive); the context's deadline bounds the call as a whole (the registry stops
//! the handler at the deadline and the dropped request closes its connection). Errors: a
//! non-2xx status is `EXECUTION_ERROR` (status, headers and body in `details`); a timeout
//! is `TIMEOUT`; a connection failure is `TRANSPORT_ERROR`; an input the request cannot
//! carry (a header value with a line break, a bad base64 body) is `VALIDATION_ERROR`.

use super::auth::AuthAction;
use super::body::{self, Encoded};
use super::mapping::{OperationPlan, ParamPlan};
use super::media::MediaType;
use super::params::{self, Location};
use super::response;
use super::sse;
use super::sse_stream;
use futures::FutureExt;
use futures::StreamExt;
use opkit::trace::{CallSpan, SpanKind, TraceContext};
use opkit::{CallError, ErrorCode, Handler, OperationContext};
use reqwest::header::{ACCEPT, CONTENT_TYPE, COOKIE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// What every handler of one import shares.
#[derive(Debug, Clone)]
pub(crate) struct ApiClient {
    pub client: reqwest::Client,
    pub timeout: Option<Duration>,
    /// The largest SSE event a subscription accepts.
    pub max_sse_event_bytes: usize,
    /// The largest response body a query or mutation reads.
    pub max_response_bytes: usize,
    /// How dropped SSE subscriptions are resumed.
    pub sse_reconnect: super::options::SseReconnect,
}

fn invalid(message: String) -> CallError {
    CallError::new(ErrorCode::ValidationError, message)
}

/// Builds the request for `input`.
pub(crate) fn build(
    plan: &OperationPlan,
    shared: &ApiClient,
    input: &Value,
) -> Result<reqwest::RequestBuilder, CallError> {
    let empty = serde_json::Map::new();
    let whole = input;
    let input = input.as_object().unwrap_or(&empty);
    let mut parts = RequestParts::new(&plan.path);
    for param in &plan.params {
        match input.get(&param.property) {
            Some(value) => parts.param(param, value, &plan.label)?,
            None if param.location == Location::Path => {
                return Err(invalid(format!(
                    "{}: the path parameter `{}` is missing",
                    plan.label, param.name
                )));
            }
            None => {}
        }
    }
    for action in &plan.auth {
        parts.auth(action, &plan.label)?;
    }
    let (url, headers) = parts.finish(plan)?;
    let mut request = shared
        .client
        .request(plan.method.clone(), &url)
        .headers(headers);
    // An operation served by opkit takes its whole input as the body.
    let body = if plan.served {
        Some(whole)
    } else {
        input.get("body")
    };
    if let Some(body_plan) = &plan.body
        && let Some(value) = body
    {
        request = match body::encode(body_plan, value)? {
            Encoded::Bytes(bytes) => request
                .header(CONTENT_TYPE, &body_plan.content_type)
                .body(bytes),
            Encoded::Multipart(form) => request.multipart(form),
        };
    }
    Ok(request)
}

/// What a request is made of before reqwest builds it: its path with the variables filled in,
/// its query pairs (encoded), its headers and its cookies.
struct RequestParts {
    path: String,
    query: Vec<String>,
    headers: HeaderMap,
    cookies: Vec<String>,
}

impl RequestParts {
    fn new(path: &str) -> Self {
        Self {
            path: path.to_owned(),
            query: Vec::new(),
            headers: HeaderMap::new(),
            cookies: Vec::new(),
        }
    }

    /// Puts one parameter's value where its location says, serialized in its style.
    fn param(&mut self, param: &ParamPlan, value: &Value, label: &str) -> Result<(), CallError> {
        // `content` parameters are serialized with their media type (JSON text, or plain).
        let owned;
        let value = match &param.content {
            Some(media)
                if MediaType::parse(media).is_json() && param.location != Location::QueryString =>
            {
                owned = Value::String(value.to_string());
                &owned
            }
            _ => value,
        };
        match param.location {
            Location::Path => {
                let text = params::path(&param.name, value, param.style, param.explode);
                self.path = self.path.replace(&format!("{{{}}}", param.name), &text);
            }
            Location::Query => self.query.extend(params::query(
                &param.name,
                value,
                param.style,
                param.explode,
                param.allow_reserved,
            )),
            Location::QueryString => self.query.extend(match value {
                Value::String(text) => vec![text.trim_start_matches('?').to_owned()],
                other => params::form_pairs(other),
            }),
            Location::Header => {
                let text = params::header(value, param.explode);
                insert_header(&mut self.headers, &param.name, &text, label)?;
            }
            Location::Cookie => self.cookies.extend(params::cookie(
                &param.name,
                value,
                param.style,
                param.explode,
            )),
        }
        Ok(())
    }

    /// Puts one credential of the import's security where it goes.
    fn auth(&mut self, action: &AuthAction, label: &str) -> Result<(), CallError> {
        match action {
            AuthAction::Header(name, value) => {
                insert_header(&mut self.headers, name, value, label)?
            }
            AuthAction::Query(name, value) => self.query.push(format!(
                "{}={}",
                params::encode_component(name),
                params::encode_component(value)
            )),
            AuthAction::Cookie(name, value) => self.cookies.push(format!("{name}={value}")),
        }
        Ok(())
    }

    /// The request's URL (the plan's base, the path, the query) and its headers, with the
    /// cookies, the `Accept` of the plan and its fixed headers.
    fn finish(mut self, plan: &OperationPlan) -> Result<(String, HeaderMap), CallError> {
        let label = &plan.label;
        if !self.cookies.is_empty() {
            let cookies = self.cookies.join("; ");
            insert_header(&mut self.headers, COOKIE.as_str(), &cookies, label)?;
        }
        if let Some(accept) = &plan.accept {
            insert_header(&mut self.headers, ACCEPT.as_str(), accept, label)?;
        }
        for (name, value) in &plan.headers {
            insert_header(&mut self.headers, name, value, label)?;
        }
        let mut url = format!("{}{}", plan.base_url, self.path);
        if !self.query.is_empty() {
            url.push('?');
            url.push_str(&self.query.join("&"));
        }
        Ok((url, self.headers))
    }
}

fn insert_header(
    headers: &mut HeaderMap,
    name: &str,
    value: &str,
    label: &str,
) -> Result<(), CallError> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| invalid(format!("{label}: {name:?} is not a valid header name")))?;
    let value = HeaderValue::from_str(value)
        .map_err(|_| invalid(format!("{label}: the value of header `{name}` cannot be sent (line breaks or control characters)")))?;
    headers.insert(name, value);
    Ok(())
}

/// `request` with the `traceparent` and `tracestate` headers of `trace` (its client span).
fn with_trace(
    request: reqwest::RequestBuilder,
    trace: Option<&TraceContext>,
) -> reqwest::RequestBuilder {
    let Some(trace) = trace else {
        return request;
    };
    let request = request.header("traceparent", trace.traceparent());
    match trace.tracestate() {
        Some(state) => request.header("tracestate", state),
        None => request,
    }
}

/// The timeout of one request: the options' timeout and the context's deadline.
fn effective_timeout(shared: &ApiClient, ctx: &OperationContext) -> Option<Duration> {
    let deadline = ctx.deadline().map(|deadline| deadline.remaining());
    match (shared.timeout, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A handler for a query or mutation.
pub(crate) fn unary(plan: Arc<OperationPlan>, shared: Arc<ApiClient>) -> Handler {
    Handler::unary_envelope(move |input: Value, ctx: OperationContext| {
        let plan = plan.clone();
        let shared = shared.clone();
        async move {
            let mut span = CallSpan::start(SpanKind::Client, "openapi", &plan.operation_id, &ctx);
            let sending = async {
                let mut request = with_trace(build(&plan, &shared, &input)?, span.trace());
                if let Some(timeout) = effective_timeout(&shared, &ctx) {
                    request = request.timeout(timeout);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|error| response::transport_error(&plan.label, &error))?;
                let max = shared.max_response_bytes;
                response::into_result(response, &plan, Some(&plan.normalizer), max).await
            };
            let result = if span.is_active() {
                sending.instrument(span.span().clone()).await
            } else {
                sending.await
            };
            span.finish_with(&result);
            result
        }
    })
}

/// Sends the request of a subscription (with `Last-Event-ID` when resuming) and checks that
/// the answer is a 2xx event stream.
async fn open_event_stream(
    plan: Arc<OperationPlan>,
    shared: Arc<ApiClient>,
    input: Arc<Value>,
    last_event_id: Option<String>,
    timeout: Option<Duration>,
    trace: Option<TraceContext>,
) -> Result<reqwest::Response, CallError> {
    let mut request = with_trace(build(&plan, &shared, &input)?, trace.as_ref());
    if let Some(id) = &last_event_id {
        request = request.header("last-event-id", id);
    }
    let sending = request.send();
    let response = match timeout {
        Some(limit) => tokio::time::timeout(limit, sending).await.map_err(|_| {
            CallError::timeout(format!("{} did not answer within {limit:?}", plan.label))
        })?,
        None => sending.await,
    }
    .map_err(|error| response::transport_error(&plan.label, &error))?;
    if !response.status().is_success() {
        let error = response::into_result(response, &plan, None, shared.max_sse_event_bytes).await;
        return Err(error
            .err()
            .unwrap_or_else(|| CallError::execution("unreachable")));
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    if !sse::is_event_stream(&content_type) {
        return Err(CallError::execution(format!(
            "{} answered with Content-Type {content_type:?}, not text/event-stream",
            plan.label
        ))
        .with_details(json!({"status": response.status().as_u16(), "contentType": content_type})));
    }
    Ok(response)
}

/// Methods whose request may be sent again: a dropped stream of theirs is resumed.
fn idempotent(method: &reqwest::Method) -> bool {
    matches!(
        method.as_str(),
        "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE" | "QUERY"
    )
}

/// A handler for an SSE subscription.
pub(crate) fn stream(plan: Arc<OperationPlan>, shared: Arc<ApiClient>) -> Handler {
    Handler::stream_envelope(move |input: Value, ctx: OperationContext| {
        let plan = plan.clone();
        let shared = shared.clone();
        let timeout = effective_timeout(&shared, &ctx);
        let input = Arc::new(input);
        futures::stream::once(async move {
            // The client span covers the request, up to the event stream's headers.
            let mut span = CallSpan::start(SpanKind::Client, "openapi", &plan.operation_id, &ctx);
            let trace = span.trace().cloned();
            let opening = open_event_stream(
                plan.clone(),
                shared.clone(),
                input.clone(),
                None,
                timeout,
                trace.clone(),
            );
            let opened = if span.is_active() {
                opening.instrument(span.span().clone()).await
            } else {
                opening.await
            };
            span.finish_with(&opened);
            let response = opened?;
            let resume =
                (idempotent(&plan.method) && shared.sse_reconnect.max_attempts > 0).then(|| {
                    let policy = shared.sse_reconnect;
                    let (plan, shared) = (plan.clone(), shared.clone());
                    let reopen: sse_stream::Reopen = Arc::new(move |last_event_id| {
                        // Each attempt waits for the headers at most as long as the options say.
                        open_event_stream(
                            plan.clone(),
                            shared.clone(),
                            input.clone(),
                            last_event_id,
                            shared.timeout,
                            trace.clone(),
                        )
                        .boxed()
                    });
                    sse_stream::Resume { reopen, policy }
                });
            let mode = plan.sse.unwrap_or(sse::EventData::Sniff);
            let max = shared.max_sse_event_bytes;
            Ok(sse_stream::envelopes(response, mode, plan, max, resume))
        })
        .flat_map(|opened| match opened {
            Ok(events) => events.boxed(),
            Err(error) => futures::stream::once(async move { Err(error) }).boxed(),
        })
    })
}
