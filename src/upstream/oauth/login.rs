//! `codemcp auth login`: the authorization code grant with PKCE (through a
//! browser, on any machine, back to our loopback listener) and the client
//! credentials grant. rmcp does the protocol; this decides which client
//! registration to use and carries the redirect.

use std::time::Duration;

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig,
    OAuthState,
};

use super::callback::{Listener, Redirect};
use super::probe::{Probe, probe};
use super::{OAuthError, TokenStore};
use crate::config::{Grant, OAuthConfig};

/// The `client_name` we register under.
const CLIENT_NAME: &str = "codemcp";

#[derive(Debug, Clone, Copy)]
pub struct LoginOptions {
    /// How long to wait for the browser to come back.
    pub timeout: Duration,
    /// Also try `xdg-open`/`open` (only when a display is there).
    pub open_browser: bool,
}

/// Logs in to `server` and stores the tokens; returns what to tell the user.
pub async fn login(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    options: LoginOptions,
) -> Result<String, OAuthError> {
    if oauth.disabled {
        return Err(OAuthError::server(
            server,
            "OAuth is turned off for this server (\"oauth\": false in its entry)",
        ));
    }
    let store = TokenStore::new(server, url);
    match oauth.grant {
        Grant::ClientCredentials => {
            client_credentials(server, url, oauth, &store).await?;
            Ok(format!(
                "'{server}': client credentials accepted; token saved in {} (the gateway fetches new ones itself)",
                store.path().display()
            ))
        }
        Grant::AuthorizationCode => {
            authorization_code(server, url, oauth, &store, options).await?;
            Ok(format!(
                "'{server}': logged in; token saved in {}",
                store.path().display()
            ))
        }
    }
}

async fn authorization_code(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    store: &TokenStore,
    options: LoginOptions,
) -> Result<(), OAuthError> {
    let (mut manager, supports_cimd) = discover(server, url, store).await?;
    let (listener, state) = Listener::bind().await?;
    let redirect_uri = listener.redirect_uri();
    let (request, issued_secret) =
        client_request(server, &mut manager, oauth, &redirect_uri, supports_cimd).await?;
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| OAuthError::auth(server)(e))?;
    let auth_url = session.get_authorization_url().to_owned();
    state.expect(&state_of(server, &auth_url)?);
    tell_user(server, &auth_url, &redirect_uri, options);
    let callback_url = wait_for_redirect(server, listener, options.timeout).await?;
    // Exchanges the code (checking state and issuer); rmcp saves the tokens
    // through the store.
    session
        .handle_callback_url(&callback_url)
        .await
        .map_err(OAuthError::auth(server))?;
    store.set_client_secret(issued_secret).await
}

/// Asks the server for its challenge and follows it to the authorization
/// server's metadata; also says whether client ID metadata documents work.
async fn discover(
    server: &str,
    url: &str,
    store: &TokenStore,
) -> Result<(AuthorizationManager, bool), OAuthError> {
    let challenge = match probe(url)
        .await
        .map_err(|e| OAuthError::server(server, e))?
    {
        Probe::NeedsLogin { challenge } => challenge,
        Probe::NoLogin { status } => {
            return Err(OAuthError::server(
                server,
                format!(
                    "{url} did not ask for a login (it answered HTTP {status}, not 401 with an OAuth challenge)"
                ),
            ));
        }
    };
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(OAuthError::auth(server))?;
    manager.set_credential_store(store.clone());
    let metadata = manager
        .resolve_metadata_from_challenge(Some(&challenge))
        .await
        .map_err(OAuthError::auth(server))?
        .metadata;
    let supports_cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    manager.set_metadata(metadata);
    Ok((manager, supports_cimd))
}

/// The request naming which client logs in, in the spec's order: a
/// pre-registered client, then a client ID metadata document where the
/// server takes one, then dynamic registration. Also returns a secret the
/// registration issued.
async fn client_request(
    server: &str,
    manager: &mut AuthorizationManager,
    oauth: &OAuthConfig,
    redirect_uri: &str,
    supports_cimd: bool,
) -> Result<(AuthorizationRequest, Option<String>), OAuthError> {
    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name(CLIENT_NAME);
    request = if oauth.scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(oauth.scopes.iter())
    };
    if let Some(client_id) = &oauth.client_id {
        request = request.with_preregistered_client(client_id);
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret);
        }
        return Ok((request, None));
    }
    if let Some(document) = oauth.client_metadata_url.as_ref().filter(|_| supports_cimd) {
        return Ok((request.with_client_metadata_url(document), None));
    }
    // Registered here rather than inside rmcp so that a secret the server
    // issues is kept for refreshing later.
    let (client_id, secret) = register(server, manager, oauth, redirect_uri).await?;
    request = request.with_preregistered_client(client_id);
    if let Some(secret) = &secret {
        request = request.with_client_secret(secret);
    }
    Ok((request, secret))
}

/// The `state` rmcp put in the authorization URL (fresh and random).
fn state_of(server: &str, auth_url: &str) -> Result<String, OAuthError> {
    url::Url::parse(auth_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| OAuthError::server(server, "rmcp built an authorization URL without state"))
}

/// The callback URL the browser came back with, or why it did not.
async fn wait_for_redirect(
    server: &str,
    listener: Listener,
    timeout: Duration,
) -> Result<String, OAuthError> {
    let redirect = tokio::time::timeout(timeout, listener.wait())
        .await
        .map_err(|_| {
            OAuthError::server(
                server,
                format!(
                    "no login came back within {} s; run the command again",
                    timeout.as_secs()
                ),
            )
        })??;
    match redirect {
        Redirect::Approved { url } => Ok(url),
        Redirect::Refused { error, description } => Err(OAuthError::server(
            server,
            format!(
                "the authorization server refused the login: {error}{}",
                description.map(|d| format!(" ({d})")).unwrap_or_default()
            ),
        )),
    }
}

async fn register(
    server: &str,
    manager: &mut AuthorizationManager,
    oauth: &OAuthConfig,
    redirect_uri: &str,
) -> Result<(String, Option<String>), OAuthError> {
    let scopes = if oauth.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        oauth.scopes.clone()
    };
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    match manager
        .register_client(CLIENT_NAME, redirect_uri, &scopes)
        .await
    {
        Ok(config) => Ok((config.client_id, config.client_secret)),
        Err(e) => Err(OAuthError::server(
            server,
            format!(
                "dynamic client registration failed ({e}); if the server's owner gave you a client id, \
                 put it in the entry: \"oauth\": {{\"clientId\": \"...\"}}"
            ),
        )),
    }
}

/// Prints the URL to stderr (stdout stays for results) and, when a display
/// is there, tries to open it.
fn tell_user(server: &str, auth_url: &str, redirect_uri: &str, options: LoginOptions) {
    eprintln!(
        "To log in to '{server}', open this URL in a browser:\n\n  {auth_url}\n\n\
         It comes back to {redirect_uri} on this machine. If the browser runs elsewhere, \
         copy the address it ends on and open it here: curl '<that address>'\n\
         Waiting up to {} s...",
        options.timeout.as_secs()
    );
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if options.open_browser && (display || cfg!(target_os = "macos")) {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        let _ = std::process::Command::new(opener)
            .arg(auth_url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// Machine to machine: trades the configured client id and secret for a
/// token (saved through the store) and returns the authorized manager.
pub(super) async fn client_credentials(
    server: &str,
    url: &str,
    oauth: &OAuthConfig,
    store: &TokenStore,
) -> Result<AuthorizationManager, OAuthError> {
    let (Some(client_id), Some(client_secret)) = (&oauth.client_id, &oauth.client_secret) else {
        return Err(OAuthError::server(
            server,
            "the client_credentials grant needs \"clientId\" and \"clientSecret\"",
        ));
    };
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(OAuthError::auth(server))?;
    manager.set_credential_store(store.clone());
    let mut state = OAuthState::Unauthorized(manager);
    state
        .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
            client_id: client_id.clone(),
            client_secret: client_secret.clone(),
            scopes: oauth.scopes.clone(),
            // The MCP server is the resource the token is for (RFC 8707).
            resource: Some(url.to_owned()),
        })
        .await
        .map_err(OAuthError::auth(server))?;
    state.into_authorization_manager().ok_or_else(|| {
        OAuthError::server(server, "rmcp did not finish the client credentials login")
    })
}
