//! Bounded requests to the authorization server: every fetch ends within a timeout and
//! reads at most a fixed number of bytes, whatever the other side does.

use super::error::{FetchError, OAuthConfigError};
use serde_json::Value;
use std::time::Duration;
use url::Url;

/// The default bound on one fetch, connection and whole body included: 5 s.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The default bound on a fetched document's size: 256 KiB (key sets and discovery documents
/// of real providers are a few KiB).
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How far a fetch may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// The bound on one fetch, from connecting to the last byte.
    pub timeout: Duration,
    /// The largest document read; a longer one is an error.
    pub max_bytes: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_FETCH_TIMEOUT,
            max_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
        }
    }
}

/// An HTTP client held to [`FetchLimits`].
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    /// For documents: follows three redirects at most.
    client: reqwest::Client,
    /// For form posts, which carry credentials: follows no redirect (a `307` would send the
    /// form, secret and assertions included, wherever it points).
    poster: reqwest::Client,
    limits: FetchLimits,
}

impl Fetcher {
    /// A fetcher with its own clients.
    pub(crate) fn new(limits: FetchLimits) -> Result<Self, OAuthConfigError> {
        let build = |redirects: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .connect_timeout(limits.timeout)
                .timeout(limits.timeout)
                .redirect(redirects)
                .build()
                .map_err(|error| OAuthConfigError::HttpClient(error.to_string()))
        };
        Ok(Self {
            client: build(reqwest::redirect::Policy::limited(3))?,
            poster: build(reqwest::redirect::Policy::none())?,
            limits,
        })
    }

    /// `GET url` as JSON (`Ok(None)` on a `404`, for discovery's "try the next place").
    pub(crate) async fn get_json(&self, url: &str) -> Result<Option<Value>, FetchError> {
        let request = self
            .client
            .get(url)
            .header(http::header::ACCEPT, "application/json");
        match self.send(url, request).await? {
            (404, _) => Ok(None),
            (status, body) if (200..300).contains(&status) => parse(url, &body).map(Some),
            (status, _) => Err(FetchError::Status {
                url: url.to_owned(),
                status,
            }),
        }
    }

    /// `POST url` with a form body (and HTTP Basic client authentication when given): the
    /// status and the JSON answer (`Value::Null` when it is not JSON).
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<(u16, Value), FetchError> {
        let mut request = self
            .poster
            .post(url)
            .header(http::header::ACCEPT, "application/json")
            .form(form);
        if let Some((user, password)) = basic {
            // RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic.
            request = request.basic_auth(form_encode(user), Some(form_encode(password)));
        }
        let (status, body) = self.send(url, request).await?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    async fn send(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), FetchError> {
        let limits = self.limits;
        let fetch = async {
            let mut response = request
                .send()
                .await
                .map_err(|error| request_error(url, &error, limits.timeout))?;
            let status = response.status().as_u16();
            if response
                .content_length()
                .is_some_and(|length| length > limits.max_bytes as u64)
            {
                return Err(too_large(url, limits.max_bytes));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| request_error(url, &error, limits.timeout))?
            {
                if body.len() + chunk.len() > limits.max_bytes {
                    return Err(too_large(url, limits.max_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, body))
        };
        tokio::time::timeout(limits.timeout, fetch)
            .await
            .unwrap_or_else(|_| Err(timeout(url, limits.timeout)))
    }
}

fn parse(url: &str, body: &[u8]) -> Result<Value, FetchError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|error| FetchError::InvalidDocument {
            url: url.to_owned(),
            reason: error.to_string(),
        })?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(FetchError::InvalidDocument {
            url: url.to_owned(),
            reason: "not a JSON object".to_owned(),
        })
    }
}

fn request_error(url: &str, error: &reqwest::Error, limit: Duration) -> FetchError {
    if error.is_timeout() {
        return timeout(url, limit);
    }
    FetchError::Request {
        url: url.to_owned(),
        reason: error_chain(error),
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn too_large(url: &str, limit: usize) -> FetchError {
    FetchError::TooLarge {
        url: url.to_owned(),
        limit,
    }
}

fn timeout(url: &str, timeout: Duration) -> FetchError {
    FetchError::Timeout {
        url: url.to_owned(),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    }
}

/// `application/x-www-form-urlencoded` of one value.
fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// `value` as an `http`/`https` URL, or the configuration error naming `what` it was for.
pub(crate) fn parse_url(what: &'static str, value: &str) -> Result<Url, OAuthConfigError> {
    let invalid = |reason: String| OAuthConfigError::InvalidUrl {
        what,
        value: value.to_owned(),
        reason,
    };
    let url = Url::parse(value).map_err(|error| invalid(error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("not an http or https URL".to_owned()));
    }
    Ok(url)
}

/// Whether `url` is `https`, or `http` to a loopback address (`localhost`, `127.0.0.0/8`,
/// `[::1]`).
#[cfg(feature = "oauth-client")]
pub(crate) fn is_secure_url(url: &str) -> bool {
    let Ok(url) = Url::parse(url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            None => false,
        },
        _ => false,
    }
}
