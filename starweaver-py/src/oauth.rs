//! OAuth for MCP servers reached over HTTP: `starweaver.mcp.OAuth` builds a
//! `NativeOAuth`, which `NativeMcpServer.http(..., auth=)` takes. The application's
//! authorization callback runs on a blocking thread of the runtime (the authorization
//! happens inside the MCP transport, which no Python task polls), and the Python layer
//! hands its coroutine to the event loop that owns it.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_stub_gen::derive::{gen_stub_pyclass, gen_stub_pymethods};
use starweaver::mcp::{AuthorizationResponse, OAuth};
use starweaver::store::SqliteSessionStore;

use crate::bridge::attach_unless_exiting;
use crate::errors::IntoPyResult;

/// How the client of an OAuth-protected MCP server gets its tokens. Use
/// `starweaver.mcp.OAuth`.
#[gen_stub_pyclass]
#[pyclass(module = "starweaver._native", name = "NativeOAuth", frozen)]
pub struct PyOAuth {
    pub(crate) oauth: OAuth,
}

/// Calls the layer's blocking `authorize(url) -> redirect URL` on a blocking thread.
fn callback(
    authorize: Py<PyAny>,
) -> impl Fn(String) -> futures::future::BoxFuture<'static, Result<AuthorizationResponse, String>> + Send + Sync + 'static
{
    let authorize = Arc::new(authorize);
    move |url: String| {
        let authorize = authorize.clone();
        Box::pin(async move {
            let redirected = tokio::task::spawn_blocking(move || {
                attach_unless_exiting(|py| {
                    authorize.call1(py, (url,)).and_then(|redirected| redirected.extract::<String>(py)).map_err(|err| {
                        format!(
                            "{}: {}",
                            err.get_type(py).name().map_or_else(|_| "Exception".to_owned(), |n| n.to_string()),
                            err.value(py)
                        )
                    })
                })
                .unwrap_or_else(|| Err("the interpreter is exiting".to_owned()))
            })
            .await
            .map_err(|e| format!("the callback did not finish: {e}"))??;
            AuthorizationResponse::from_redirect_url(&redirected)
        })
    }
}

#[gen_stub_pymethods]
#[pymethods]
impl PyOAuth {
    /// The authorization code grant (`redirect_uri` and a blocking `authorize(url) ->
    /// redirect URL`) or, with `client_credentials=True`, the client credentials grant;
    /// `store` is the path of a `SqliteSessionStore` database to keep the tokens in.
    #[new]
    #[pyo3(signature = (*, redirect_uri=None, authorize=None, client_credentials=false, client_id=None, client_secret=None, client_metadata_url=None, client_name=None, scopes=None, store=None))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of `OAuth(...)`
    fn new(
        py: Python<'_>,
        redirect_uri: Option<String>,
        #[gen_stub(override_type(type_repr = "typing.Callable[[str], str] | None", imports = ("typing",)))]
        authorize: Option<Py<PyAny>>,
        client_credentials: bool,
        client_id: Option<String>,
        client_secret: Option<String>,
        client_metadata_url: Option<String>,
        client_name: Option<String>,
        scopes: Option<Vec<String>>,
        #[gen_stub(override_type(type_repr = "str | os.PathLike[str] | None", imports = ("os",)))] store: Option<
            PathBuf,
        >,
    ) -> PyResult<Self> {
        let mut oauth = if client_credentials {
            let (Some(id), Some(secret)) = (client_id.clone(), client_secret.clone()) else {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "the client credentials grant needs `client_id` and `client_secret`",
                ));
            };
            OAuth::client_credentials(id, secret)
        } else {
            let (Some(redirect_uri), Some(authorize)) = (redirect_uri, authorize) else {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "the authorization code grant needs `redirect_uri` and `on_authorize`",
                ));
            };
            let mut oauth = OAuth::authorization_code(redirect_uri, callback(authorize));
            if let Some(id) = client_id {
                oauth = oauth.client_id(id);
            }
            if let Some(secret) = client_secret {
                oauth = oauth.client_secret(secret);
            }
            oauth
        };
        if let Some(url) = client_metadata_url {
            oauth = oauth.client_metadata_url(url);
        }
        if let Some(name) = client_name {
            oauth = oauth.client_name(name);
        }
        if let Some(scopes) = scopes {
            oauth = oauth.scopes(scopes);
        }
        if let Some(path) = store {
            oauth = oauth.store(py.detach(|| SqliteSessionStore::open(&path)).into_py_result(py)?);
        }
        Ok(Self { oauth })
    }

    /// The grant and the client, never a secret.
    fn __repr__(&self) -> String {
        format!("{:?}", self.oauth)
    }
}
