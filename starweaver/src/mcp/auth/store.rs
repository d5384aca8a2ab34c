//! rmcp's credential store on ours: one server's credentials, as JSON, under its URL in
//! the application's [`TokenStore`].

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

use crate::store::TokenStore;

/// The credentials of the server at `key`, kept in `store`.
pub(super) struct Credentials {
    pub(super) store: Arc<dyn TokenStore>,
    pub(super) key: String,
}

/// What a store failure says: the store's own message (it names the store and the
/// operation, never the value).
fn failed(error: &crate::Error) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for Credentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(value) = self.store.load_token(&self.key).map_err(|e| failed(&e))? else { return Ok(None) };
        // Credentials of another shape (an older version wrote them) are as good as none:
        // the client authorizes again and overwrites them.
        Ok(serde_json::from_value(value).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials)
            .map_err(|_| AuthError::CredentialStoreError("the credentials could not be written as JSON".into()))?;
        self.store.save_token(&self.key, &value).map_err(|e| failed(&e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.delete_token(&self.key).map_err(|e| failed(&e))
    }
}
