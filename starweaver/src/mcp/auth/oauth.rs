//! [`OAuth`]: how the client of a protected server gets its tokens, and the application's
//! part of the authorization code grant ([`Authorize`], [`AuthorizationResponse`]).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::store::{MemoryTokenStore, TokenStore};

/// How many times one request to the server may be authorized (a first authorization,
/// a refresh, a step-up) before it fails with the server's refusal.
pub const MAX_AUTHORIZATIONS: usize = 3;

/// What the authorization server sent back to the redirect URI after the user approved:
/// the code to exchange and the `state` it must match.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthorizationResponse {
    pub(crate) code: String,
    pub(crate) state: String,
    pub(crate) issuer: Option<String>,
}

impl AuthorizationResponse {
    /// The `code` and `state` the redirect carried.
    pub fn new(code: impl Into<String>, state: impl Into<String>) -> Self {
        Self { code: code.into(), state: state.into(), issuer: None }
    }

    /// Reads the URL the authorization server redirected to (its `code`, `state` and,
    /// when present, `iss`, checked against the server's issuer).
    ///
    /// ```
    /// use starweaver::mcp::AuthorizationResponse;
    ///
    /// let response = AuthorizationResponse::from_redirect_url("http://localhost:3000/callback?code=abc&state=xyz");
    /// assert_eq!(response.unwrap(), AuthorizationResponse::new("abc", "xyz"));
    /// assert!(AuthorizationResponse::from_redirect_url("http://localhost:3000/callback?error=access_denied").is_err());
    /// ```
    ///
    /// # Errors
    /// The URL is not one, or lacks `code` or `state` (the error says which, and the
    /// server's `error` if it sent one).
    pub fn from_redirect_url(url: &str) -> Result<Self, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("the redirect URL is not a URL: {e}"))?;
        let query = |name: &str| parsed.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
        if let Some(error) = query("error") {
            let description = query("error_description").map(|d| format!(": {d}")).unwrap_or_default();
            return Err(format!("the authorization server refused: `{error}`{description}"));
        }
        let code = query("code").ok_or("the redirect URL has no `code` parameter")?;
        let state = query("state").ok_or("the redirect URL has no `state` parameter")?;
        Ok(Self { code, state, issuer: query("iss") })
    }
}

/// Shows the state only: the code is a credential.
impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &"[redacted]")
            .field("state", &self.state)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// The application's part of the authorization code grant: given the authorization URL,
/// have the user approve (open a browser, print the link) and return what the
/// authorization server sent to the redirect URI. Any `Fn(String) -> impl Future<Output
/// = Result<AuthorizationResponse, String>>` is one; an `Err` fails the request that
/// needed the token, with that message.
pub trait Authorize: Send + Sync + 'static {
    /// Has the user approve at `url`; the response, or why there is none.
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<AuthorizationResponse, String>>;
}

impl<F, Fut> Authorize for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AuthorizationResponse, String>> + Send + 'static,
{
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<AuthorizationResponse, String>> {
        Box::pin(self(url))
    }
}

/// How the client obtains tokens.
#[derive(Clone)]
pub(crate) enum Grant {
    /// The user approves at the authorization server, which redirects to `redirect_uri`.
    AuthorizationCode { redirect_uri: String, authorize: Arc<dyn Authorize> },
    /// The client authenticates as itself (no user).
    ClientCredentials,
}

/// OAuth 2.1 for an MCP server reached over HTTP: give it to
/// [`McpServer::auth`](crate::mcp::McpServer::auth).
///
/// It says how the client gets a token: the authorization code grant with PKCE (S256),
/// the user approving through an application callback ([`Authorize`]), or the client
/// credentials grant. The client acts only when the server asks (a `401` with its
/// `WWW-Authenticate` challenge), so one `OAuth` fits servers that protect everything,
/// some methods, or nothing:
///
/// - discovery: the protected-resource metadata (RFC 9728) from the challenge's `resource_metadata`, else its well-known paths (path-based, then root);
///   then the authorization server's metadata (RFC 8414 and `OpenID` configuration, their
///   path-based forms first);
/// - the client's identity: pre-registered credentials, else a Client ID Metadata
///   Document URL when the server supports them (SEP-991), else dynamic client
///   registration (RFC 7591), authenticating at the token endpoint as the registration
///   and the server's metadata say (`client_secret_basic`, `client_secret_post` or
///   `none`);
/// - scopes: the ones given, else the challenge's `scope`, else the resource's
///   `scopes_supported`, else none (no `scope` parameter); a `403` `insufficient_scope`
///   authorizes again for the union of the granted and the required scopes (step-up);
/// - every token request names the server as its `resource` (RFC 8707); an expired or
///   rejected token is refreshed before the user is asked again; each request tries at
///   most [`MAX_AUTHORIZATIONS`] times, so a server that is never satisfied fails the
///   request instead of looping.
///
/// Tokens live in a [`TokenStore`](crate::store::TokenStore), in memory unless another is
/// given. No token, code, verifier or secret is written to a log,
/// an event, a trace or an error: `Debug` of these types shows none.
///
/// ```no_run
/// use starweaver::mcp::{AuthorizationResponse, McpServer, OAuth};
///
/// // The application shows the user `url`, and its redirect handler returns the URL
/// // the browser was sent to (`http://localhost:3000/callback?code=...&state=...`).
/// async fn approve(url: String) -> Result<AuthorizationResponse, String> {
///     println!("open {url}");
///     let redirected = wait_for_redirect().await;
///     AuthorizationResponse::from_redirect_url(&redirected)
/// }
/// # async fn wait_for_redirect() -> String { String::new() }
///
/// let oauth = OAuth::authorization_code("http://localhost:3000/callback", approve).client_name("my agent");
/// let server = McpServer::http("docs", "https://mcp.example.com/mcp").auth(oauth);
/// ```
#[derive(Clone)]
pub struct OAuth {
    pub(crate) grant: Grant,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) store: Arc<dyn TokenStore>,
}

impl OAuth {
    /// The authorization code grant with PKCE: when the server asks for a token,
    /// `authorize` is called with the authorization URL, whose approval redirects to
    /// `redirect_uri` (registered with the authorization server, or sent in dynamic
    /// registration).
    pub fn authorization_code(redirect_uri: impl Into<String>, authorize: impl Authorize) -> Self {
        Self::new(Grant::AuthorizationCode { redirect_uri: redirect_uri.into(), authorize: Arc::new(authorize) })
    }

    /// The client credentials grant, for a client registered with the authorization server
    /// as `client_id` with `client_secret` (sent as the server's metadata prefers:
    /// `client_secret_basic` when it supports only that, else `client_secret_post`).
    pub fn client_credentials(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        let mut oauth = Self::new(Grant::ClientCredentials);
        oauth.client_id = Some(client_id.into());
        oauth.client_secret = Some(client_secret.into());
        oauth
    }

    fn new(grant: Grant) -> Self {
        Self {
            grant,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "starweaver".to_owned(),
            scopes: None,
            store: Arc::new(MemoryTokenStore::new()),
        }
    }

    /// A client registered with the authorization server beforehand: no dynamic
    /// registration.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The pre-registered client's secret (a confidential client).
    #[must_use]
    pub fn client_secret(mut self, client_secret: impl Into<String>) -> Self {
        self.client_secret = Some(client_secret.into());
        self
    }

    /// The HTTPS URL of this client's Client ID Metadata Document (SEP-991), used as its
    /// client id by authorization servers that support such documents (others get a
    /// dynamic registration).
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The name sent in dynamic client registration (`starweaver` by default).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for, instead of the ones the server names.
    #[must_use]
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Where the tokens are kept (in memory by default), under the server's URL: a
    /// [`SqliteSessionStore`](crate::store::SqliteSessionStore) keeps them across restarts.
    #[must_use]
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// [`store`](Self::store), for a store already shared.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }
}

/// Names the grant and the client, never the secret.
impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grant = match &self.grant {
            Grant::AuthorizationCode { .. } => "authorization_code",
            Grant::ClientCredentials => "client_credentials",
        };
        f.debug_struct("OAuth")
            .field("grant", &grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[redacted]"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}
