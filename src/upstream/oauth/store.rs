//! Where a remote server's OAuth login lives: one JSON file per server (keyed
//! by its name and URL) under `$XDG_DATA_HOME/codemcp/oauth/`, created 0600 in
//! a 0700 directory. It implements rmcp's [`CredentialStore`], so the tokens
//! rmcp refreshes on its own are written back here.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::OAuthError;
use codemcp_base::secure_file;

/// A token file is a login: read only when it is a regular file of yours
/// that nobody else could have written (codemcp never makes it a symlink).
const TOKEN_RULES: secure_file::Rules = secure_file::Rules {
    what: "the OAuth token file",
    max_bytes: 1 << 20,
    follow_symlink: false,
    owner: secure_file::Owner::Me,
    private_writes: true,
};

/// What one token file holds. (No `Debug`: it holds secrets.)
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct TokenFile {
    /// The server entry's name and URL, for people reading the file.
    pub server: String,
    pub url: String,
    /// rmcp's record: client id, token response, scopes, issuer.
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
    /// A secret the authorization server issued at dynamic registration;
    /// refreshing needs it. (A configured `clientSecret` stays in the config.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The authorization server refused the refresh token: only a new login helps.
    #[serde(default)]
    pub refresh_rejected: bool,
}

/// The token file of one server. Cheap to clone; clones share the lock that
/// keeps this process's read-modify-write cycles apart.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
    server: String,
    url: String,
    lock: Arc<tokio::sync::Mutex<()>>,
}

/// `$XDG_DATA_HOME/codemcp/oauth`, else `~/.local/share/codemcp/oauth`.
pub fn token_dir() -> PathBuf {
    let xdg = std::env::var_os("XDG_DATA_HOME").map(PathBuf::from);
    // The XDG spec says to ignore relative paths.
    let data = match xdg.filter(|d| d.is_absolute()) {
        Some(dir) => dir,
        None => match std::env::home_dir() {
            Some(home) => home.join(".local/share"),
            None => std::env::temp_dir().join(format!("codemcp-{}", nix::unistd::geteuid())),
        },
    };
    data.join("codemcp").join("oauth")
}

impl TokenStore {
    pub fn new(server: &str, url: &str) -> Self {
        Self::in_dir(&token_dir(), server, url)
    }

    pub fn in_dir(dir: &Path, server: &str, url: &str) -> Self {
        // The name keeps the file findable; the URL hash keeps a server that
        // moved (or a reused name) from picking up another server's tokens.
        let safe: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let digest = Sha256::digest(url.as_bytes());
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            path: dir.join(format!("{safe}-{hash}.json")),
            server: server.to_owned(),
            url: url.to_owned(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's contents; `None` when there is none. A file owned by
    /// another user, writable by others, a symlink or not a regular file is
    /// refused; one others may only read is made 0600 (with a warning,
    /// since its tokens may have leaked).
    pub fn read(&self) -> Result<Option<TokenFile>, OAuthError> {
        let refused = |e: secure_file::UnsafeFile| OAuthError::Store {
            path: self.path.clone(),
            message: format!(
                "{e}; or remove it and run `codemcp auth login {}`",
                self.server
            ),
        };
        let opened =
            secure_file::open_trusted(&self.path, &TOKEN_RULES, fs::OpenOptions::new().read(true));
        let file = match opened {
            Ok(file) => file,
            Err(e) if e.is_missing() => return Ok(None),
            Err(e) => return Err(refused(e)),
        };
        self.make_private(&file)?;
        let bytes = secure_file::read_opened(file, &self.path, &TOKEN_RULES).map_err(refused)?;
        let file: TokenFile = serde_json::from_slice(&bytes).map_err(|e| OAuthError::Store {
            path: self.path.clone(),
            message: format!(
                "is not a codemcp token file ({e}); delete it with `codemcp auth logout {}`",
                self.server
            ),
        })?;
        Ok(Some(file))
    }

    fn make_private(&self, file: &fs::File) -> Result<(), OAuthError> {
        let meta = file
            .metadata()
            .map_err(|e| self.failed("cannot read", &e))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|e| self.failed("cannot chmod 600", &e))?;
            tracing::warn!(
                target: "codemcp::oauth",
                path = %self.path.display(),
                "token file was mode {mode:o}, readable by other users; made it 0600. \
                 If others could log in here, treat the token as leaked: `codemcp auth logout {0}` \
                 and `codemcp auth login {0}`",
                self.server
            );
        }
        Ok(())
    }

    /// Writes the whole file anew, 0600, through a temporary file and a rename.
    pub fn write(&self, file: &TokenFile) -> Result<(), OAuthError> {
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| self.failed("cannot create the directory of", &e))?;
        let text = serde_json::to_vec_pretty(file).map_err(|e| OAuthError::Store {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        let temp = self
            .path
            .with_extension(format!("tmp-{}", std::process::id()));
        let written = (|| {
            let _ = fs::remove_file(&temp);
            let mut out = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            out.write_all(&text)?;
            out.sync_all()?;
            fs::rename(&temp, &self.path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written.map_err(|e| self.failed("cannot write", &e))
    }

    /// Deletes the file; whether there was one.
    pub fn remove(&self) -> Result<bool, OAuthError> {
        let _ = fs::remove_file(self.path.with_extension("lock"));
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.failed("cannot delete", &e)),
        }
    }

    /// Reads, changes and writes the file, holding this process's lock.
    async fn update(&self, change: impl FnOnce(&mut TokenFile)) -> Result<(), OAuthError> {
        let _held = self.lock.lock().await;
        let mut file = self.read()?.unwrap_or_else(|| TokenFile {
            server: self.server.clone(),
            url: self.url.clone(),
            ..TokenFile::default()
        });
        change(&mut file);
        self.write(&file)
    }

    pub async fn set_client_secret(&self, secret: Option<String>) -> Result<(), OAuthError> {
        self.update(|file| file.client_secret = secret).await
    }

    fn failed(&self, what: &str, e: &io::Error) -> OAuthError {
        OAuthError::Store {
            path: self.path.clone(),
            message: format!("{what} it: {e}"),
        }
    }
}

fn store_error(e: OAuthError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let file = self.read().map_err(store_error)?;
        Ok(file.and_then(|f| f.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|file| {
            file.credentials = Some(credentials);
            file.refresh_rejected = false;
        })
        .await
        .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|file| file.credentials = None)
            .await
            .map_err(store_error)
    }

    /// Keeps the client registration but drops the dead tokens, so status
    /// and the gateway say "log in again" instead of retrying them. Tokens
    /// another process saved meanwhile are left alone.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let access = |c: &StoredCredentials| {
            c.token_response
                .as_ref()
                .map(|t| t.access_token().secret().clone())
        };
        let dead = access(rejected);
        self.update(|file| {
            if let Some(credentials) = file.credentials.as_mut()
                && access(credentials) == dead
            {
                credentials.token_response = None;
                file.refresh_rejected = true;
            }
        })
        .await
        .map_err(store_error)
    }

    /// An exclusive lock on `<file>.lock` held across rmcp's load, refresh
    /// and save, so gateways sharing a login (one per MCP client) do not both
    /// spend the same rotating refresh token.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.path.with_extension("lock");
        let locked = tokio::task::spawn_blocking(move || -> io::Result<fs::File> {
            if let Some(dir) = path.parent() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
            }
            let file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)?;
            file.lock()?;
            Ok(file)
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(|e| AuthError::CredentialStoreError(format!("cannot lock the token file: {e}")))?;
        Ok(Some(CredentialRefreshGuard::new(locked)))
    }
}

#[cfg(test)]
mod tests;
