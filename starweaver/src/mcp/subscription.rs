//! Resource subscriptions: which client sessions asked (`resources/subscribe`) to hear that
//! a resource changed, and the application's way to say it did ([`McpHandle`]), which
//! sends `notifications/resources/updated` to those sessions only.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

/// A client session of a service: stdio has one, streamable HTTP one per `initialize`.
pub(crate) type SessionId = u64;

/// Who listens to which URI.
#[derive(Default)]
pub(crate) struct Subscriptions {
    by_uri: Mutex<HashMap<String, HashMap<SessionId, Peer<RoleServer>>>>,
}

impl Subscriptions {
    /// `session` (reached through `peer`) hears of changes to `uri` from now on.
    pub(crate) fn subscribe(&self, uri: String, session: SessionId, peer: Peer<RoleServer>) {
        self.lock().entry(uri).or_default().insert(session, peer);
    }

    /// `session` no longer hears of `uri` (subscribed or not: unsubscribing is idempotent).
    pub(crate) fn unsubscribe(&self, uri: &str, session: SessionId) {
        let mut by_uri = self.lock();
        if let Some(sessions) = by_uri.get_mut(uri) {
            sessions.remove(&session);
            if sessions.is_empty() {
                by_uri.remove(uri);
            }
        }
    }

    /// Tells every session subscribed to `uri` that it changed. A session whose client has
    /// gone is forgotten, so subscriptions do not outlive their sessions by more than one
    /// update.
    pub(crate) async fn notify(&self, uri: &str) {
        let peers: Vec<(SessionId, Peer<RoleServer>)> =
            self.lock().get(uri).map(|s| s.iter().map(|(id, peer)| (*id, peer.clone())).collect()).unwrap_or_default();
        for (session, peer) in peers {
            if peer.is_transport_closed()
                || peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await.is_err()
            {
                self.unsubscribe(uri, session);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<SessionId, Peer<RoleServer>>>> {
        // A panic cannot leave the map half-changed: every change is one call on it.
        self.by_uri.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The application's handle on a running [`McpService`](super::McpService), taken before
/// it serves: say that a resource changed, and the sessions subscribed to it are told.
///
/// ```
/// use starweaver::content::Text;
/// use starweaver::mcp::{McpResource, McpService};
/// use starweaver::ToolError;
///
/// let service = McpService::builder("status")
///     .resource(McpResource::new("status://build", "build", |_| async { Ok::<_, ToolError>([Text::new("green")]) }))
///     .build()
///     .unwrap();
/// let handle = service.handle();
/// // Later, from any thread, while `service.serve_stdio()` (or `serve_http`) runs:
/// handle.resource_updated("status://build");
/// ```
#[derive(Clone, Debug)]
pub struct McpHandle {
    pub(crate) updates: mpsc::UnboundedSender<String>,
}

impl McpHandle {
    /// Tells the sessions subscribed to `uri` that it changed (with
    /// `notifications/resources/updated`); a client then reads it again if it wants. Sent
    /// by the serving future, so nothing is sent before it serves or after it ends.
    pub fn resource_updated(&self, uri: impl Into<String>) {
        // The service has stopped serving: there is no one left to tell.
        drop(self.updates.send(uri.into()));
    }
}
