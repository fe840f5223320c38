//! OAuth 2.1 for remote (Streamable HTTP) upstreams, built on rmcp's `auth`
//! support: rmcp discovers the metadata, registers the client, builds the
//! PKCE authorization URL, exchanges and refreshes tokens; this module adds
//! the loopback callback ([`callback`]), the token files ([`store`]), the
//! `codemcp auth` commands ([`commands`]), and the hook the connection uses
//! ([`authorized_client`]).

mod callback;
pub mod commands;
mod login;
mod probe;
mod store;

use rmcp::transport::AuthClient;
use rmcp::transport::auth::{AuthError, AuthorizationManager, OAuthClientConfig};

use crate::config::{Grant, OAuthConfig};

pub use commands::{AuthAction, run_command};
pub use login::{LoginOptions, login};
pub use store::{TokenFile, TokenStore, token_dir};

/// Why a login, a logout or an authorized connection failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// rmcp's OAuth machinery failed (bad metadata, refused registration or
    /// token request, garbage from the authorization server...).
    #[error("'{server}': {source}")]
    Auth {
        server: String,
        #[source]
        source: Box<AuthError>,
    },
    #[error("'{server}': {message}")]
    Server { server: String, message: String },
    /// The upstream needs a (new) login before it can be used.
    #[error("{}", needs_login_text(server, *again))]
    NeedsLogin { server: String, again: bool },
    #[error("token file {path} {message}")]
    Store {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("login callback: {0}")]
    Callback(String),
}

fn needs_login_text(server: &str, again: bool) -> String {
    if again {
        format!(
            "'{server}': its saved OAuth login is no longer accepted (expired or revoked); \
             log in again: codemcp auth login {server}"
        )
    } else {
        format!("'{server}' needs an OAuth login; run: codemcp auth login {server}")
    }
}

impl OAuthError {
    fn auth(server: &str) -> impl FnOnce(AuthError) -> Self + '_ {
        move |source| match source {
            AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
                Self::NeedsLogin {
                    server: server.to_owned(),
                    again: true,
                }
            }
            source => Self::Auth {
                server: server.to_owned(),
                source: Box::new(source),
            },
        }
    }

    fn server(server: &str, message: impl Into<String>) -> Self {
        Self::Server {
            server: server.to_owned(),
            message: message.into(),
        }
    }
}

/// The HTTP client a connection to `url` should use: `None` when the server
/// is used without OAuth (none configured or stored; if the server then
/// answers 401, [`needs_login`] says what to do). Client-credentials servers
/// get a fresh token here, so they need no `auth login`.
pub async fn authorized_client(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
) -> Result<Option<AuthClient<reqwest::Client>>, OAuthError> {
    if oauth.disabled {
        return Ok(None);
    }
    let store = TokenStore::new(server, url);
    let manager = match oauth.grant {
        Grant::ClientCredentials => login::client_credentials(server, url, oauth, &store).await?,
        Grant::AuthorizationCode => {
            let Some(file) = store.read()? else {
                return Ok(None);
            };
            stored_login(server, url, oauth, &store, file).await?
        }
    };
    Ok(Some(AuthClient::new(reqwest::Client::default(), manager)))
}

/// A manager that continues the login in `file`, refreshing its tokens as
/// they expire (rmcp saves the new ones through the store).
async fn stored_login(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    store: &TokenStore,
    file: TokenFile,
) -> Result<AuthorizationManager, OAuthError> {
    let has_token = file
        .credentials
        .as_ref()
        .is_some_and(|c| c.token_response.is_some());
    if !has_token {
        return Err(OAuthError::NeedsLogin {
            server: server.to_owned(),
            again: true,
        });
    }
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(OAuthError::auth(server))?;
    manager.set_credential_store(store.clone());
    // False when the authorization server changed since the login.
    if !manager
        .initialize_from_store()
        .await
        .map_err(OAuthError::auth(server))?
    {
        return Err(OAuthError::NeedsLogin {
            server: server.to_owned(),
            again: true,
        });
    }
    // rmcp restores only the client id; a confidential client also needs its
    // secret to refresh.
    if let (Some(credentials), Some(secret)) = (
        file.credentials.as_ref(),
        oauth.client_secret.clone().or(file.client_secret),
    ) {
        manager
            .configure_client(
                OAuthClientConfig::new(credentials.client_id.clone(), url)
                    .with_client_secret(secret),
            )
            .map_err(OAuthError::auth(server))?;
    }
    Ok(manager)
}

/// After a failed handshake: whether the server turned us away for want of a
/// login, and if so the error that says which command to run.
pub async fn needs_login(server: &str, url: &str, oauth: &OAuthConfig) -> Option<OAuthError> {
    if oauth.disabled || oauth.grant == Grant::ClientCredentials {
        return None;
    }
    match probe::probe(url).await {
        Ok(probe::Probe::NeedsLogin { .. }) => {
            let again = TokenStore::new(server, url).read().ok().flatten().is_some();
            Some(OAuthError::NeedsLogin {
                server: server.to_owned(),
                again,
            })
        }
        _ => None,
    }
}
