//! The Streamable HTTP client of an import that signs in by itself ([`TokenClient`]): every
//! request carries an access token from its [`Tokens`], and a request the server refuses is
//! sent again once the tokens have an answer — a client-credentials token fetched anew after
//! a `401` ([`ClientCredentials`]), or, with a person in the loop ([`SignIn`]), a refresh, a
//! new sign-in after a `401` and a scope step-up after a `403`.

use crate::oauth::ClientCredentials;
use crate::oauth::sign_in::SignIn;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

type Error = StreamableHttpError<reqwest::Error>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Sends of one request at most: the first, one after a refresh, one after a new sign-in,
/// one after a step-up.
const MAX_SENDS: usize = 4;

/// Where a [`TokenClient`]'s access tokens come from, and what it does when one is refused.
/// `Ok(None)` from a refusal gives up: the request fails with the server's answer.
pub(super) trait Tokens: Send + Sync + 'static {
    /// The token for the next request (`None`: send none).
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, BoxError>>;
    /// After a `401` with `challenge` for a request that carried `sent`; `first` is the
    /// request's first `401`.
    fn unauthorized<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>>;
    /// After a `403` with `challenge` for a request that carried `sent`.
    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>>;
}

/// Client credentials for one resource (the server's URL, unless the credentials name
/// another): a `401` drops the kept token and fetches a new one, once; a `403` is final.
pub(super) struct Credentials {
    pub(super) credentials: Arc<ClientCredentials>,
    pub(super) resource: String,
}

impl Tokens for Credentials {
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            let token = self.credentials.token_for(Some(&self.resource)).await?;
            Ok(Some(token))
        })
    }

    fn unauthorized<'a>(
        &'a self,
        _challenge: &'a str,
        _sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            if !first {
                return Ok(None);
            }
            self.credentials.invalidate().await;
            self.token().await
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        _challenge: &'a str,
        _sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async { Ok(None) })
    }
}

impl Tokens for SignIn {
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, BoxError>> {
        Box::pin(async move { Ok(SignIn::token(self).await?) })
    }

    fn unauthorized<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            Ok(Some(
                SignIn::unauthorized(self, challenge, sent, first).await?,
            ))
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            Ok(Some(
                SignIn::insufficient_scope(self, challenge, sent).await?,
            ))
        })
    }
}

/// reqwest, with tokens from `tokens`.
#[derive(Clone)]
pub(super) struct TokenClient {
    pub(super) http: reqwest::Client,
    pub(super) tokens: Arc<dyn Tokens>,
}

fn io(error: BoxError) -> Error {
    StreamableHttpError::Io(std::io::Error::other(error))
}

impl TokenClient {
    /// `send` with the current token, again with a new one while the tokens have an answer
    /// to the server's refusal.
    async fn with_token<T, F, Fut>(&self, send: F) -> Result<T, Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut token = self.tokens.token().await.map_err(io)?;
        let mut first = true;
        let mut sends = 1;
        loop {
            let refused = match send(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(refusal)) if sends < MAX_SENDS => {
                    let next = self
                        .tokens
                        .unauthorized(&refusal.www_authenticate_header, token.as_deref(), first)
                        .await;
                    first = false;
                    (next, StreamableHttpError::AuthRequired(refusal))
                }
                Err(StreamableHttpError::InsufficientScope(refusal)) if sends < MAX_SENDS => {
                    let next = self
                        .tokens
                        .insufficient_scope(&refusal.www_authenticate_header, token.as_deref())
                        .await;
                    (next, StreamableHttpError::InsufficientScope(refusal))
                }
                other => return other,
            };
            match refused {
                (Ok(Some(next)), _) => token = Some(next),
                (Ok(None), refusal) => return Err(refusal),
                (Err(error), _) => return Err(io(error)),
            }
            sends += 1;
        }
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
        self.with_token(|token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
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
        self.with_token(|token| {
            self.http.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let token = self.tokens.token().await.map_err(io)?;
        self.http
            .delete_session(uri, session_id, token, custom_headers)
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
        self.with_token(|token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
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
        self.with_token(|token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
