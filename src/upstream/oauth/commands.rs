//! `codemcp auth login | status | logout`.
#![allow(clippy::print_stdout)] // a command: its output is for the terminal, not the stdio transport

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::TokenResponse;

use super::probe::{Probe, probe};
use super::{LoginOptions, TokenStore, login};
use crate::config::{Grant, OAuthConfig, Transport, UpstreamConfig};

#[derive(Debug, clap::Subcommand)]
pub enum AuthAction {
    /// Log in to remote server NAME (OAuth 2.1): prints a URL to open in a browser
    Login {
        name: String,
        /// Seconds to wait for the browser to come back
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Only print the URL; do not try xdg-open/open
        #[arg(long)]
        no_browser: bool,
    },
    /// Show, for each remote server, whether it is logged in
    Status,
    /// Forget the saved login of server NAME
    Logout { name: String },
}

/// Runs one `codemcp auth` command against the servers in `config`.
pub async fn run_command(action: &AuthAction, config: &UpstreamConfig) -> Result<ExitCode, String> {
    match action {
        AuthAction::Login {
            name,
            timeout,
            no_browser,
        } => {
            let (url, oauth) = remote(config, name)?;
            let options = LoginOptions {
                timeout: Duration::from_secs(*timeout),
                open_browser: !no_browser,
            };
            let done = login(name, url, oauth, options)
                .await
                .map_err(|e| e.to_string())?;
            println!("{done}");
        }
        AuthAction::Logout { name } => {
            let (url, _) = remote(config, name)?;
            let store = TokenStore::new(name, url);
            if store.remove().map_err(|e| e.to_string())? {
                println!("'{name}': logged out ({} deleted)", store.path().display());
            } else {
                println!("'{name}': was not logged in");
            }
        }
        AuthAction::Status => {
            let mut any = false;
            for server in &config.servers {
                if let Transport::Http { url, headers } = &server.transport {
                    any = true;
                    let state = status(&server.name, url, headers, &server.oauth).await;
                    println!("  {:<20} {state}", server.name);
                }
            }
            if !any {
                println!("no remote (http) servers in the config");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The URL and OAuth settings of remote server `name`.
fn remote<'a>(
    config: &'a UpstreamConfig,
    name: &str,
) -> Result<(&'a str, &'a OAuthConfig), String> {
    if let Some(server) = config.servers.iter().find(|s| s.name == name) {
        return match &server.transport {
            Transport::Http { headers, .. } if has_authorization(headers) => Err(format!(
                "'{name}' sends the Authorization header in its entry, so OAuth is not used for it"
            )),
            Transport::Http { url, .. } => Ok((url, &server.oauth)),
            Transport::Stdio { .. } => Err(format!(
                "'{name}' is a local (stdio) server; only remote (http) servers log in"
            )),
        };
    }
    if let Some(skipped) = config.skipped.iter().find(|s| s.name == name) {
        return Err(format!("'{name}' is skipped: {}", skipped.reason));
    }
    let file = config
        .path
        .as_ref()
        .map_or_else(|| "the config".to_owned(), |p| p.display().to_string());
    Err(format!("no server named '{name}' in {file}"))
}

/// One line of `auth status`.
async fn status(
    name: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    oauth: &OAuthConfig,
) -> String {
    if oauth.disabled {
        return "not OAuth (\"oauth\": false)".to_owned();
    }
    if has_authorization(headers) {
        return "not OAuth (sends its configured Authorization header)".to_owned();
    }
    let store = TokenStore::new(name, url);
    match store.read() {
        Err(e) => format!("unusable login: {e}"),
        Ok(Some(file)) => saved_login(name, &file, oauth.grant),
        Ok(None) if oauth.grant == Grant::ClientCredentials => {
            "client credentials (the gateway fetches a token when it connects)".to_owned()
        }
        Ok(None) => match probe(url).await {
            Ok(Probe::NeedsLogin { .. }) => {
                format!("needs login: codemcp auth login {name}")
            }
            Ok(Probe::NoLogin { status }) => {
                format!("not OAuth (answered HTTP {status} without a login)")
            }
            Err(e) => format!("unknown: {e}"),
        },
    }
}

fn saved_login(name: &str, file: &super::TokenFile, grant: Grant) -> String {
    let again = format!("log in again: codemcp auth login {name}");
    let token = file
        .credentials
        .as_ref()
        .and_then(|c| c.token_response.as_ref().map(|t| (c, t)));
    let Some((credentials, token)) = token else {
        return if file.refresh_rejected {
            format!("expired (the refresh token was refused); {again}")
        } else {
            format!("needs login; {again}")
        };
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let left = match (token.expires_in(), credentials.token_received_at) {
        (Some(lifetime), Some(at)) => {
            Some(lifetime.as_secs().saturating_add(at).saturating_sub(now))
        }
        _ => None,
    };
    let refreshes = token.refresh_token().is_some();
    match left {
        None => "logged in (token without an expiry)".to_owned(),
        Some(0) if refreshes => {
            "logged in (access token expired; it is refreshed on next use)".to_owned()
        }
        Some(0) if grant == Grant::ClientCredentials => {
            "logged in (token expired; the gateway fetches a new one)".to_owned()
        }
        Some(0) => format!("expired; {again}"),
        Some(secs) => format!(
            "logged in (access token valid for {}{})",
            humantime::format_duration(Duration::from_secs(secs)),
            if refreshes { "; refreshes itself" } else { "" }
        ),
    }
}

fn has_authorization(headers: &std::collections::BTreeMap<String, String>) -> bool {
    headers
        .keys()
        .any(|h| h.eq_ignore_ascii_case("authorization"))
}
