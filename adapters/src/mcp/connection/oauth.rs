//! The Streamable HTTP client of an import that signs in by itself ([`TokenClient`]): every
//! request carries an access token from its [`Tokens`], and a request the server refuses is
//! sent again once the tokens have an answer — a client-credentials token fetched anew after
//! a `401` ([`ClientCredentials`]), or, with a person in the loop ([`SignIn`]), a refresh, a
//! new sign-in after a `401` and a scope step-up after a `403`. A DPoP-bound token goes as
//! `Authorization: DPoP` with a fresh proof for the request's method and URL; a server's
//! `use_dpop_nonce` refusal is followed with its nonce.

use crate::oauth::ClientCredentials;
use crate::oauth::client::dpop::{NONCE_HEADER, PROOF_HEADER, USE_NONCE};
use crate::oauth::client::sign_in::{Credential, SignIn};
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
/// one after a step-up (and one more with a DPoP nonce).
const MAX_SENDS: usize = 4;

/// Where a [`TokenClient`]'s access tokens come from, and what it does when one is refused.
/// `Ok(None)` from a refusal gives up: the request fails with the server's answer.
pub(super) trait Tokens: Send + Sync + 'static {
    /// The token for the next request (`None`: send none).
    fn token(&self) -> BoxFuture<'_, Result<Option<Credential>, BoxError>>;
    /// After a `401` with `challenge` for a request that carried `sent`; `first` is the
    /// request's first `401`.
    fn unauthorized<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>>;
    /// After a `403` with `challenge` for a request that carried `sent`.
    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>>;
}

/// Client credentials for one resource (the server's URL, unless the credentials name
/// another): a `401` drops the kept token and fetches a new one, once; a `403` is final.
pub(super) struct Credentials {
    pub(super) credentials: Arc<ClientCredentials>,
    pub(super) resource: String,
}

impl Tokens for Credentials {
    fn token(&self) -> BoxFuture<'_, Result<Option<Credential>, BoxError>> {
        Box::pin(async move {
            let token = self.credentials.token_for(Some(&self.resource)).await?;
            Ok(Some(Credential { token, dpop: None }))
        })
    }

    fn unauthorized<'a>(
        &'a self,
        _challenge: &'a str,
        _sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>> {
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
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>> {
        Box::pin(async { Ok(None) })
    }
}

impl Tokens for SignIn {
    fn token(&self) -> BoxFuture<'_, Result<Option<Credential>, BoxError>> {
        Box::pin(async move { Ok(SignIn::token(self).await?) })
    }

    fn unauthorized<'a>(
        &'a self,
        challenge: &'a str,
        sent: Option<&'a str>,
        first: bool,
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>> {
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
    ) -> BoxFuture<'a, Result<Option<Credential>, BoxError>> {
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

/// What one send of a request carries: the bearer token rmcp's client sets, or the DPoP
/// headers (which it passes on as custom headers).
struct Presented {
    bearer: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
}

impl TokenClient {
    /// How `credential` goes on a `method` request to `uri`, beside `headers`.
    fn present(
        credential: Option<&Credential>,
        method: &str,
        uri: &str,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Presented, Error> {
        let Some(credential) = credential else {
            return Ok(Presented {
                bearer: None,
                headers,
            });
        };
        let Some((key, nonces)) = &credential.dpop else {
            return Ok(Presented {
                bearer: Some(credential.token.clone()),
                headers,
            });
        };
        let proof = key
            .proof(
                method,
                uri,
                Some(&credential.token),
                nonces.for_url(uri).as_deref(),
            )
            .map_err(|error| io(error.into()))?;
        let value = |text: String| HeaderValue::from_str(&text).map_err(|error| io(error.into()));
        headers.insert(
            http::header::AUTHORIZATION,
            value(format!("DPoP {}", credential.token))?,
        );
        headers.insert(HeaderName::from_static(PROOF_HEADER), value(proof)?);
        Ok(Presented {
            bearer: None,
            headers,
        })
    }

    /// The nonce the server at `uri` wants in DPoP proofs: rmcp's client keeps only the
    /// `WWW-Authenticate` of a `401`, not its `DPoP-Nonce`, so it is read from the answer to
    /// a request that carries the proof without it and no JSON-RPC message (which the
    /// server refuses as it refused the first).
    async fn learn_nonce(&self, credential: &Credential, uri: &str) -> Result<bool, Error> {
        let Some((key, nonces)) = &credential.dpop else {
            return Ok(false);
        };
        let proof = key
            .proof("POST", uri, Some(&credential.token), None)
            .map_err(|error| io(error.into()))?;
        let answer = self
            .http
            .post(uri)
            .header(
                http::header::AUTHORIZATION,
                format!("DPoP {}", credential.token),
            )
            .header(PROOF_HEADER, proof)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .body("{}")
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let nonce = answer
            .headers()
            .get(NONCE_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        match nonce {
            Some(nonce) => {
                nonces.remember(uri, &nonce);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// `send` with the current token, again with a new one while the tokens have an answer
    /// to the server's refusal.
    async fn with_token<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        headers: HashMap<HeaderName, HeaderValue>,
        send: F,
    ) -> Result<T, Error>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut credential = self.tokens.token().await.map_err(io)?;
        let mut first = true;
        let mut nonce_asked = false;
        let mut sends = 1;
        loop {
            let presented = Self::present(credential.as_ref(), method, uri, headers.clone())?;
            let sent = credential
                .as_ref()
                .map(|credential| credential.token.clone());
            let refused = match send(presented.bearer, presented.headers).await {
                Err(StreamableHttpError::AuthRequired(refusal))
                    if !nonce_asked
                        && refusal.www_authenticate_header.contains(USE_NONCE)
                        && credential.as_ref().is_some_and(|c| c.dpop.is_some()) =>
                {
                    nonce_asked = true;
                    let Some(held) = &credential else {
                        return Err(StreamableHttpError::AuthRequired(refusal));
                    };
                    if self.learn_nonce(held, uri).await? {
                        continue;
                    }
                    return Err(StreamableHttpError::AuthRequired(refusal));
                }
                Err(StreamableHttpError::AuthRequired(refusal)) if sends < MAX_SENDS => {
                    let next = self
                        .tokens
                        .unauthorized(&refusal.www_authenticate_header, sent.as_deref(), first)
                        .await;
                    first = false;
                    (next, StreamableHttpError::AuthRequired(refusal))
                }
                Err(StreamableHttpError::InsufficientScope(refusal)) if sends < MAX_SENDS => {
                    let next = self
                        .tokens
                        .insufficient_scope(&refusal.www_authenticate_header, sent.as_deref())
                        .await;
                    (next, StreamableHttpError::InsufficientScope(refusal))
                }
                other => return other,
            };
            match refused {
                (Ok(Some(next)), _) => credential = Some(next),
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
        self.with_token("POST", &uri, custom_headers, |token, headers| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers,
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
        self.with_token("POST", &uri, custom_headers, |token, headers| {
            self.http.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                headers,
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
        let credential = self.tokens.token().await.map_err(io)?;
        let presented = Self::present(credential.as_ref(), "DELETE", &uri, custom_headers)?;
        self.http
            .delete_session(uri, session_id, presented.bearer, presented.headers)
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
        self.with_token("GET", &uri, custom_headers, |token, headers| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers,
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
        self.with_token("GET", &uri, custom_headers, |token, headers| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                headers,
                max_sse_event_size,
            )
        })
        .await
    }
}
