//! The authorizations themselves: discovery, the client's identity, the grant, refresh
//! and step-up, on rmcp's `AuthorizationManager`, one per server, kept between
//! authorizations so that a registered client is registered once.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig,
    WWWAuthenticateParams,
};

use tracing::instrument::WithSubscriber;

use super::oauth::{Grant, OAuth};
use super::store::Credentials;

/// One server's authorizations: at most one runs at a time, and requests wait for it.
pub(crate) struct Authorizer {
    /// The server's name, for errors.
    server: String,
    /// The server's MCP endpoint: the base of discovery, the `resource` of every token
    /// request, and the key of its credentials in the store.
    url: String,
    oauth: OAuth,
    /// Set by the first authorization (or by credentials found in the store).
    manager: tokio::sync::Mutex<Option<AuthorizationManager>>,
}

impl Authorizer {
    pub(crate) fn new(server: String, url: String, oauth: OAuth) -> Self {
        Self { server, url, oauth, manager: tokio::sync::Mutex::new(None) }
    }

    /// The token to send, refreshed when it is about to expire; none before the first
    /// authorization (the server's challenge starts one).
    pub(crate) async fn token(&self) -> Result<Option<String>, String> {
        let mut slot = self.manager.lock().await;
        if slot.is_none() {
            *slot = self.kept_credentials().await?;
        }
        let Some(manager) = slot.as_ref() else { return Ok(None) };
        match manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => Ok(None),
            Err(error) => Err(self.failure("could not refresh its access token", &error)),
        }
    }

    /// The server refused the request (`401`) with `challenge`, having been sent `sent`:
    /// a token got meanwhile is tried, a rejected one refreshed, else the client
    /// authorizes again.
    pub(crate) async fn unauthorized(&self, challenge: &str, sent: Option<&str>) -> Result<(), String> {
        let mut slot = self.manager.lock().await;
        if let Some(manager) = slot.as_ref() {
            if let Ok(current) = manager.get_access_token().await
                && Some(current.as_str()) != sent
            {
                return Ok(());
            }
            if sent.is_some() && manager.refresh_token().await.is_ok() {
                return Ok(());
            }
        }
        self.authorize(&mut slot, challenge, None).await
    }

    /// The server refused the request (`403` `insufficient_scope`) with `challenge`: the
    /// client authorizes again for the scopes it holds and the ones the server requires,
    /// unless it holds them already (asking again would be refused again).
    pub(crate) async fn insufficient_scope(&self, challenge: &str, sent: Option<&str>) -> Result<(), String> {
        let mut slot = self.manager.lock().await;
        let Some(manager) = slot.as_ref() else {
            return self.authorize(&mut slot, challenge, None).await;
        };
        if let Ok(current) = manager.get_access_token().await
            && Some(current.as_str()) != sent
        {
            return Ok(());
        }
        let required: Vec<String> =
            self.challenge(challenge).scope.unwrap_or_default().split_whitespace().map(str::to_owned).collect();
        let mut scopes = manager.get_current_scopes().await;
        if required.is_empty() {
            return Err(
                self.refusal("refused the request for `insufficient_scope` without naming the scope it requires")
            );
        }
        if required.iter().all(|scope| scopes.contains(scope)) {
            return Err(self.refusal(&format!(
                "refused the request for `insufficient_scope` although the token was granted the scopes it requires (`{}`)",
                required.join(" ")
            )));
        }
        for scope in required {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        self.authorize(&mut slot, challenge, Some(scopes)).await
    }

    /// Credentials kept from before, if the store has some for this server.
    async fn kept_credentials(&self) -> Result<Option<AuthorizationManager>, String> {
        let kept = self
            .oauth
            .store
            .load_token(&self.url)
            .map_err(|e| self.refusal(&format!("could not read its OAuth credentials: {e}")))?;
        if kept.is_none() {
            return Ok(None);
        }
        let mut manager = self.manager().await?;
        match manager.initialize_from_store().await {
            Ok(true) => {
                if let Grant::ClientCredentials = self.oauth.grant {
                    // The secret is not stored: configure it again, for the refreshes.
                    let config = self.client_credentials(Vec::new());
                    manager.configure_client_credentials(&config).map_err(|e| self.refusal(&e.to_string()))?;
                }
                Ok(Some(manager))
            }
            // The stored credentials belong to another authorization server, or cannot be
            // read back: the next challenge authorizes anew.
            Ok(false) | Err(_) => Ok(None),
        }
    }

    /// A manager for this server, its credentials in the application's store.
    async fn manager(&self) -> Result<AuthorizationManager, String> {
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .map_err(|e| self.refusal(&format!("has a URL OAuth cannot use: {e}")))?;
        manager.set_credential_store(Credentials { store: self.oauth.store.clone(), key: self.url.clone() });
        Ok(manager)
    }

    /// A new authorization, discovery seeded by `challenge`, for `scopes` when given.
    async fn authorize(
        &self,
        slot: &mut Option<AuthorizationManager>,
        challenge: &str,
        scopes: Option<Vec<String>>,
    ) -> Result<(), String> {
        let mut manager = match slot.take() {
            Some(manager) => manager,
            None => self.manager().await?,
        };
        let discovered = manager.resolve_metadata_from_challenge(Some(challenge)).await;
        let metadata = match discovered {
            Ok(resolution) => resolution.metadata,
            Err(error) => {
                *slot = Some(manager);
                return Err(self.failure("could not discover its authorization server", &error));
            }
        };
        manager.set_metadata(metadata);
        let scopes = scopes.or_else(|| self.oauth.scopes.clone());
        match &self.oauth.grant {
            Grant::ClientCredentials => {
                let scopes = match scopes {
                    Some(scopes) => scopes,
                    None => manager.select_initial_scopes(&[]).await,
                };
                let config = self.client_credentials(scopes);
                let outcome = async {
                    manager.validate_client_credentials_metadata(&config)?;
                    manager.configure_client_credentials(&config)?;
                    manager.exchange_client_credentials(&config).await
                }
                .await;
                *slot = Some(manager);
                match outcome {
                    Ok(_) => Ok(()),
                    Err(error) => Err(self.failure("refused the client credentials", &error)),
                }
            }
            Grant::AuthorizationCode { redirect_uri, authorize } => {
                // A client already registered (or pre-registered, or known by its metadata
                // URL) keeps its identity: only the authorization URL is new.
                let (manager, url) = if manager.get_credentials().await.is_ok() {
                    let scopes = scopes.unwrap_or_else(|| manager.select_scopes(None, &[]));
                    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
                    match manager.get_authorization_url(&scopes).await {
                        Ok(url) => (manager, url),
                        Err(error) => {
                            *slot = Some(manager);
                            return Err(self.failure("could not start an authorization", &error));
                        }
                    }
                } else {
                    match AuthorizationSession::new(manager, self.request(redirect_uri, scopes)).await {
                        Ok(session) => (session.auth_manager, session.auth_url),
                        Err((manager, error)) => {
                            *slot = Some(manager);
                            return Err(self.failure("could not register this client", &error));
                        }
                    }
                };
                let manager = slot.insert(manager);
                let response = authorize.authorize(url).await.map_err(|why| {
                    self.refusal(&format!("was not authorized: the authorization callback failed: {why}"))
                })?;
                // rmcp logs the code at DEBUG while it exchanges it: nothing it logs then is kept.
                let exchange = manager.exchange_code_for_token_with_issuer(
                    &response.code,
                    &response.state,
                    response.issuer.as_deref(),
                );
                if let Err(error) = exchange.with_subscriber(tracing::subscriber::NoSubscriber::default()).await {
                    return Err(self.failure("did not exchange the authorization code for a token", &error));
                }
                Ok(())
            }
        }
    }

    /// The first authorization's request: who the client is, by priority (pre-registered,
    /// its metadata document, dynamic registration), and which scopes it asks for.
    fn request(&self, redirect_uri: &str, scopes: Option<Vec<String>>) -> AuthorizationRequest {
        let oauth = &self.oauth;
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name(oauth.client_name.clone());
        if let Some(id) = &oauth.client_id {
            request = request.with_preregistered_client(id.clone());
            if let Some(secret) = &oauth.client_secret {
                request = request.with_client_secret(secret.clone());
            }
        }
        if let Some(url) = &oauth.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        match scopes {
            Some(scopes) => request.with_scopes(scopes),
            // The challenge's scope, else the resource's `scopes_supported`, else none.
            None => request.with_initial_scope_selection(),
        }
    }

    fn client_credentials(&self, scopes: Vec<String>) -> ClientCredentialsConfig {
        ClientCredentialsConfig::ClientSecret {
            client_id: self.oauth.client_id.clone().unwrap_or_default(),
            client_secret: self.oauth.client_secret.clone().unwrap_or_default(),
            scopes,
            resource: Some(self.url.clone()),
        }
    }

    fn challenge(&self, challenge: &str) -> WWWAuthenticateParams {
        match reqwest::Url::parse(&self.url) {
            Ok(base) => WWWAuthenticateParams::parse(challenge, &base),
            Err(_) => WWWAuthenticateParams::default(),
        }
    }

    /// A refusal of this server's, named.
    fn refusal(&self, what: &str) -> String {
        format!("MCP server `{}` {what}", self.server)
    }

    /// An OAuth step that failed, named, with rmcp's reason stripped of every secret the
    /// client holds (a server's error could quote one back).
    fn failure(&self, what: &str, error: &AuthError) -> String {
        let mut message = self.refusal(&format!("{what}: {error}"));
        for secret in self.secrets() {
            if secret.len() >= 4 {
                message = message.replace(&secret, "[redacted]");
            }
        }
        message
    }

    /// The client secret and the tokens in the store.
    fn secrets(&self) -> Vec<String> {
        let mut secrets: Vec<String> = self.oauth.client_secret.iter().cloned().collect();
        if let Ok(Some(kept)) = self.oauth.store.load_token(&self.url) {
            let response = kept.get("token_response");
            for field in ["access_token", "refresh_token"] {
                if let Some(secret) = response.and_then(|r| r.get(field)).and_then(serde_json::Value::as_str) {
                    secrets.push(secret.to_owned());
                }
            }
        }
        secrets
    }
}
