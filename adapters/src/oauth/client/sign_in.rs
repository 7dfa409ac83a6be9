//! One connection's authorization-code sign-in ([`SignIn`]): the tokens it holds and what it
//! does when the server refuses them — the flow [`AuthorizationCode`] describes, on rmcp's
//! OAuth client.
//!
//! Invariant: the state is behind one async mutex, held across a whole sign-in (while the
//! user is in the browser). Requests that meet a `401` or `403` meanwhile wait for it and
//! then compare the token they sent with the one held now: a different one means somebody
//! else already signed in, and they use it instead of taking the user through it twice.

use super::authorization_code::{AuthorizationCode, AuthorizeError, Registration};
use super::dpop::{DpopKey, Nonces};
use super::dpop_http::{DpopHttp, SecretGuard};
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest, OAuthState,
    WWWAuthenticateParams,
};
use std::sync::Arc;
use tokio::sync::Mutex;

/// Why the import could not sign in, or stopped trying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    /// Discovery, registration, the token exchange or a refresh failed, or the redirect did
    /// not check out (`state`, `iss`): rmcp's OAuth client says why.
    #[error("signing in failed: {0}")]
    OAuth(String),
    /// The application's [`Authorize`](crate::oauth::Authorize) callback failed.
    #[error("the user was not signed in: {0}")]
    Authorize(AuthorizeError),
    /// The server refused a token for lacking scopes it holds already, or named none.
    #[error(
        "the server refuses the token for lacking scope `{wanted}`, which it holds or cannot be asked for"
    )]
    ScopeRefused {
        /// The `scope` of the server's `403` (empty when it named none).
        wanted: String,
    },
    /// The connection asked the user for more scopes as often as it may.
    #[error("the server still wants scope `{wanted}` after {step_ups} step-ups")]
    StepUpLimit {
        /// The scope the server wants.
        wanted: String,
        /// The step-ups made.
        step_ups: u32,
    },
}

impl From<AuthError> for SignInError {
    fn from(error: AuthError) -> Self {
        Self::OAuth(error.to_string())
    }
}

/// A connection's sign-in with the authorization-code flow.
pub(crate) struct SignIn {
    config: Arc<AuthorizationCode>,
    /// The MCP server's URL (the protected resource).
    server: String,
    state: Mutex<Held>,
    /// The connection's DPoP key and the nonces servers gave, when DPoP is on.
    dpop: Option<(Arc<DpopKey>, Arc<Nonces>)>,
}

/// An access token, and the DPoP key and nonces it is bound to when it is DPoP-bound.
#[derive(Clone)]
pub(crate) struct Credential {
    pub(crate) token: String,
    pub(crate) dpop: Option<(Arc<DpopKey>, Arc<Nonces>)>,
}

#[derive(Default)]
struct Held {
    /// The signed-in client (its registration, tokens and scopes); `None` before the first
    /// sign-in.
    manager: Option<AuthorizationManager>,
    step_ups: u32,
    /// The token the authorization server issued is DPoP-bound (`token_type` `DPoP`).
    bound: bool,
}

impl Held {
    async fn token(&self) -> Result<Option<String>, SignInError> {
        let Some(manager) = &self.manager else {
            return Ok(None);
        };
        match manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }
}

impl SignIn {
    pub(crate) fn new(config: Arc<AuthorizationCode>, server: &str) -> Result<Self, SignInError> {
        let dpop = if config.dpop {
            let key = DpopKey::generate().map_err(SignInError::OAuth)?;
            Some((Arc::new(key), Arc::new(Nonces::default())))
        } else {
            None
        };
        Ok(Self {
            config,
            server: server.to_owned(),
            state: Mutex::new(Held::default()),
            dpop,
        })
    }

    /// The access token to send (refreshed when it is about to expire), if signed in.
    pub(crate) async fn token(&self) -> Result<Option<Credential>, SignInError> {
        let held = self.state.lock().await;
        let token = held.token().await?;
        Ok(token.map(|token| self.credential(&held, token)))
    }

    fn credential(&self, held: &Held, token: String) -> Credential {
        Credential {
            token,
            dpop: held.bound.then(|| self.dpop.clone()).flatten(),
        }
    }

    /// Whether the token `manager` holds is DPoP-bound (`token_type` `DPoP`), not a bearer
    /// token.
    async fn bound(manager: &AuthorizationManager) -> bool {
        let Ok((_, Some(response))) = manager.get_credentials().await else {
            return false;
        };
        serde_json::to_value(&response)
            .ok()
            .and_then(|value| {
                value
                    .get("token_type")
                    .and_then(|kind| kind.as_str())
                    .map(str::to_owned)
            })
            .is_some_and(|kind| kind.eq_ignore_ascii_case("dpop"))
    }

    /// Keeps the client a sign-in made, and whether its token is DPoP-bound; its token.
    async fn adopt(held: &mut Held, manager: AuthorizationManager) -> Result<String, SignInError> {
        let token = manager.get_access_token().await?;
        held.bound = Self::bound(&manager).await;
        held.manager = Some(manager);
        Ok(token)
    }

    /// After a `401` with `challenge` for a request that carried `sent`: a token that may
    /// work, from another request's sign-in, a refresh (when `may_refresh`), or a new
    /// sign-in.
    pub(crate) async fn unauthorized(
        &self,
        challenge: &str,
        sent: Option<&str>,
        may_refresh: bool,
    ) -> Result<Credential, SignInError> {
        let mut held = self.state.lock().await;
        if let Some(current) = held.token().await.ok().flatten()
            && Some(current.as_str()) != sent
        {
            return Ok(self.credential(&held, current));
        }
        if may_refresh
            && sent.is_some()
            && let Some(manager) = &held.manager
            && manager.refresh_token().await.is_ok()
            && let Some(fresh) = held.token().await.ok().flatten()
            && Some(fresh.as_str()) != sent
        {
            return Ok(self.credential(&held, fresh));
        }
        // From the start, discovery included: a fresh client, so nothing registered with
        // one authorization server is shown to another.
        let manager = self.sign_in(challenge, &[]).await?;
        let token = Self::adopt(&mut held, manager).await?;
        held.step_ups = 0;
        Ok(self.credential(&held, token))
    }

    /// After a `403` with `challenge` for a request that carried `sent`: a token with more
    /// scopes, from another request's step-up or by asking the user.
    pub(crate) async fn insufficient_scope(
        &self,
        challenge: &str,
        sent: Option<&str>,
    ) -> Result<Credential, SignInError> {
        let mut held = self.state.lock().await;
        if let Some(current) = held.token().await.ok().flatten()
            && Some(current.as_str()) != sent
        {
            return Ok(self.credential(&held, current));
        }
        let base = url::Url::parse(&self.server)
            .map_err(|error| SignInError::OAuth(format!("the server's URL: {error}")))?;
        let wanted = WWWAuthenticateParams::parse(challenge, &base)
            .scope
            .unwrap_or_default();
        let holding = match &held.manager {
            Some(manager) => manager.get_current_scopes().await,
            None => return Err(SignInError::ScopeRefused { wanted }),
        };
        if wanted
            .split_whitespace()
            .all(|scope| holding.iter().any(|held| held == scope))
        {
            return Err(SignInError::ScopeRefused { wanted });
        }
        if held.step_ups >= self.config.max_step_ups {
            return Err(SignInError::StepUpLimit {
                wanted,
                step_ups: held.step_ups,
            });
        }
        held.step_ups += 1;
        // A sign-in from the start for the union: a dynamically registered client may be
        // limited to the scopes it registered with, so it registers again for the union.
        let mut scopes = holding;
        for scope in wanted.split_whitespace() {
            if !scopes.iter().any(|held| held == scope) {
                scopes.push(scope.to_owned());
            }
        }
        let manager = self.sign_in(challenge, &scopes).await?;
        let token = Self::adopt(&mut held, manager).await?;
        Ok(self.credential(&held, token))
    }

    /// The whole flow, from discovery to the token, for `scopes` (none: the configured ones,
    /// else those the server's challenge and metadata suggest).
    async fn sign_in(
        &self,
        challenge: &str,
        scopes: &[String],
    ) -> Result<AuthorizationManager, SignInError> {
        // A client secret goes only to a trusted authorization server's token endpoint.
        let guard = match &self.config.registration {
            Registration::Preregistered {
                client_secret: Some(_),
                ..
            } if !self.config.any_issuer => {
                Some(Arc::new(SecretGuard::new(&self.config.trusted_issuers)))
            }
            _ => None,
        };
        let mut oauth = if self.dpop.is_some() || guard.is_some() {
            let (key, nonces) = match &self.dpop {
                Some((key, nonces)) => (Some(key.clone()), nonces.clone()),
                None => (None, Arc::new(Nonces::default())),
            };
            let http = DpopHttp::new(key, nonces, guard.clone())
                .map_err(|error| SignInError::OAuth(error.to_string()))?;
            OAuthState::new_with_oauth_http_client(self.server.as_str(), Arc::new(http)).await?
        } else {
            OAuthState::new(self.server.as_str(), None).await?
        };
        let mut request =
            AuthorizationRequest::new(self.config.redirect_uri.clone()).with_challenge(challenge);
        match &self.config.registration {
            Registration::Dynamic {
                client_name,
                metadata_url,
            } => {
                request = request.with_client_name(client_name.clone());
                if let Some(url) = metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
            }
            Registration::Preregistered {
                client_id,
                client_secret,
            } => {
                request = request.with_preregistered_client(client_id.clone());
                if let Some(secret) = client_secret {
                    request = request.with_client_secret(secret.clone());
                }
            }
        }
        let scopes = if scopes.is_empty() {
            &self.config.scopes
        } else {
            scopes
        };
        if !scopes.is_empty() {
            request = request.with_scopes(scopes.iter().cloned());
        }
        oauth.start_authorization(request).await?;
        let url = oauth.get_authorization_url().await?;
        let callback = self.ask_user(url).await?;
        let exchanged = oauth
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await;
        if let Err(error) = exchanged {
            // A refusal of the secret's guard says more than rmcp's "request failed".
            return Err(match guard.and_then(|guard| guard.refusal()) {
                Some(refusal) => SignInError::OAuth(refusal),
                None => error.into(),
            });
        }
        oauth
            .into_authorization_manager()
            .ok_or_else(|| SignInError::OAuth("the sign-in did not complete".to_owned()))
    }

    /// The application's callback, and the redirect it gives back read.
    async fn ask_user(&self, url: String) -> Result<AuthorizationCallback, SignInError> {
        let redirect = self
            .config
            .authorize
            .authorize(url)
            .await
            .map_err(SignInError::Authorize)?;
        Ok(AuthorizationCallback::from_redirect_url(&redirect)?)
    }
}
