//! The Streamable HTTP client of an import that signs in by itself: every request carries a
//! client-credentials access token ([`ClientCredentials`]), fetched again before it expires,
//! and a request the server answers with `401` is sent once more with a new token.

use crate::oauth::ClientCredentials;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::Arc;

/// reqwest, with a token from `credentials` (for `resource`, the server's URL, unless the
/// credentials name another).
#[derive(Clone)]
pub(super) struct TokenClient {
    pub(super) http: reqwest::Client,
    pub(super) credentials: Arc<ClientCredentials>,
    pub(super) resource: Arc<str>,
}

type Error = StreamableHttpError<reqwest::Error>;

impl TokenClient {
    async fn bearer(&self) -> Result<Option<String>, Error> {
        self.credentials
            .token_for(Some(&self.resource))
            .await
            .map(Some)
            .map_err(|error| StreamableHttpError::Io(std::io::Error::other(error)))
    }

    /// After a `401`: the kept token is dropped, a new one fetched.
    async fn renewed(&self) -> Result<Option<String>, Error> {
        self.credentials.invalidate().await;
        self.bearer().await
    }
}

impl StreamableHttpClient for TokenClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let first = self
            .http
            .post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                self.bearer().await?,
                custom_headers.clone(),
            )
            .await;
        match first {
            Err(StreamableHttpError::AuthRequired(_)) => {
                self.http
                    .post_message(
                        uri,
                        message,
                        session_id,
                        self.renewed().await?,
                        custom_headers,
                    )
                    .await
            }
            other => other,
        }
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let first = self
            .http
            .post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                self.bearer().await?,
                custom_headers.clone(),
                max_sse_event_size,
            )
            .await;
        match first {
            Err(StreamableHttpError::AuthRequired(_)) => {
                self.http
                    .post_message_with_max_sse_event_size(
                        uri,
                        message,
                        session_id,
                        self.renewed().await?,
                        custom_headers,
                        max_sse_event_size,
                    )
                    .await
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.http
            .delete_session(uri, session_id, self.bearer().await?, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.http
            .get_stream(
                uri,
                session_id,
                last_event_id,
                self.bearer().await?,
                custom_headers,
            )
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                self.bearer().await?,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
