//! The `"oauth"` member of a remote server entry: how codemcp logs in to a
//! Streamable HTTP server that answers 401 with OAuth metadata.
//!
//! Absent means "discover it": dynamic client registration on login.
//! `false` (opencode's spelling) turns OAuth off for the server. An object
//! names a pre-registered client, a client ID metadata document, scopes, or
//! the client credentials grant. Strings take `${VAR}` / `{env:VAR}` like the
//! rest of the entry, so a secret can stay in the environment.

use std::fmt;

use serde_json::{Map, Value};

use super::fields::{kind_of, str_field, str_list_field};

/// How a remote server is logged in to.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `"oauth": false`: never attempt OAuth for this server.
    pub disabled: bool,
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty lets rmcp pick them from the server's challenge
    /// and metadata.
    pub scopes: Vec<String>,
    /// An `https://` URL serving this client's metadata document (SEP-991),
    /// used as the client id when the server supports it.
    pub client_metadata_url: Option<String>,
    pub grant: Grant,
}

/// The OAuth grant `codemcp auth login` performs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Grant {
    /// A person approves in a browser (with PKCE).
    #[default]
    AuthorizationCode,
    /// Machine to machine: the client id and secret are the credentials.
    ClientCredentials,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("disabled", &self.disabled)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .finish()
    }
}

/// Reads the entry's `"oauth"`; `Err` is why the entry is skipped.
pub(super) fn oauth_field(
    fields: &Map<String, Value>,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<OAuthConfig, String> {
    let fields = match fields.get("oauth") {
        None | Some(Value::Null | Value::Bool(true)) => return Ok(OAuthConfig::default()),
        Some(Value::Bool(false)) => {
            return Ok(OAuthConfig {
                disabled: true,
                ..OAuthConfig::default()
            });
        }
        Some(Value::Object(fields)) => fields,
        Some(other) => {
            return Err(format!(
                "\"oauth\" must be an object or false, found {}",
                kind_of(other)
            ));
        }
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        str_field(fields, key)
            .map_err(|e| format!("in \"oauth\": {e}"))?
            .map(expand)
            .transpose()
    };
    // opencode writes one space-separated "scope"; others a "scopes" list.
    let mut scopes = str_list_field(fields, "scopes")
        .map_err(|e| format!("in \"oauth\": {e}"))?
        .unwrap_or_default();
    if let Some(scope) = text("scope")? {
        scopes.extend(scope.split_whitespace().map(str::to_owned));
    }
    let grant = match text("grant")?.as_deref() {
        None | Some("authorization_code" | "authorizationCode") => Grant::AuthorizationCode,
        Some("client_credentials" | "clientCredentials") => Grant::ClientCredentials,
        Some(other) => {
            return Err(format!(
                "in \"oauth\": unknown \"grant\" \"{other}\"; expected \"authorization_code\" or \"client_credentials\""
            ));
        }
    };
    let config = OAuthConfig {
        disabled: false,
        client_id: text("clientId")?,
        client_secret: text("clientSecret")?,
        scopes,
        client_metadata_url: text("clientMetadataUrl")?,
        grant,
    };
    if config.client_secret.is_some() && config.client_id.is_none() {
        return Err("in \"oauth\": \"clientSecret\" needs \"clientId\"".to_owned());
    }
    if grant == Grant::ClientCredentials
        && (config.client_id.is_none() || config.client_secret.is_none())
    {
        return Err(
            "in \"oauth\": the client_credentials grant needs \"clientId\" and \"clientSecret\""
                .to_owned(),
        );
    }
    Ok(config)
}
