//! Who may use a shared HTTP gateway: principals, each a name, the SHA-256 of
//! its bearer token, and optional policy overrides (`CODEMCP_HTTP_TOKENS`).
//!
//! The file is JSON:
//! `{"principals": {"NAME": {"sha256": "<hex>", "policy": {"<server>": {"<tool or glob>": "allow"|"ask"|"deny"}}}}}`.
//! Tokens are never stored, only their digests; `codemcp token add NAME`
//! mints one. The gateway re-reads the file when it changes, so a new token
//! works without a restart.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parking_lot::Mutex;
use serde::de::{self, Deserializer, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::upstream::Catalog;
use codemcp_base::secure_file;
use codemcp_sdk::Sdk;
use codemcp_sdk::policy::Overrides;
use codemcp_store::Owner;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrincipalsError {
    #[error("cannot read the principals file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Unsafe (writable by others, owned by another user, not a regular
    /// file, too large); the message says how to fix it.
    #[error(transparent)]
    Unsafe(#[from] codemcp_base::secure_file::UnsafeFile),
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot write the principals file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{0}' is not a principal name: use 1 to 64 letters, digits, '.', '_' or '-'")]
    BadName(String),
    #[error(
        "principal '{name}' already exists in {path}; remove it first (codemcp token remove {name})"
    )]
    Exists { name: String, path: PathBuf },
    #[error("no principal '{name}' in {path}")]
    Unknown { name: String, path: PathBuf },
}

/// One caller of a shared gateway.
pub struct Principal {
    pub name: String,
    digest: [u8; 32],
    pub overrides: Overrides,
    /// The SDK this principal sees, and the catalog generation it was built from.
    view: Mutex<Option<(u64, Arc<Sdk>)>>,
}

impl Principal {
    /// Sessions belong to the principal, not to one token: a rotated token
    /// keeps its principal's sessions.
    pub fn owner(&self) -> Owner {
        Owner::of_principal(&self.name)
    }

    /// The SDK with this principal's denied tools left out.
    pub fn sdk(&self, catalog: &Catalog) -> Arc<Sdk> {
        if self.overrides.is_empty() {
            return catalog.sdk();
        }
        let generation = catalog.generation();
        let mut view = self.view.lock();
        match &*view {
            Some((built, sdk)) if *built == generation => sdk.clone(),
            _ => {
                let sdk = catalog.sdk_with(&self.overrides);
                *view = Some((generation, sdk.clone()));
                sdk
            }
        }
    }
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("name", &self.name)
            .finish()
    }
}

/// The principals file, re-read when it changes.
pub struct Principals {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

struct Loaded {
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
    list: Vec<Arc<Principal>>,
}

impl std::fmt::Debug for Principals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principals")
            .field("path", &self.path)
            .finish()
    }
}

/// How often a request may look whether the file changed.
const RECHECK: Duration = Duration::from_secs(1);

impl Principals {
    /// # Errors
    /// The file cannot be read or is not a valid principals file.
    pub fn load(path: &Path) -> Result<Self, PrincipalsError> {
        let list = read_file(path)?;
        Ok(Self {
            path: path.to_owned(),
            loaded: Mutex::new(Loaded {
                stamp: stamp(path),
                checked: Instant::now(),
                list,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn names(&self) -> Vec<String> {
        self.current().iter().map(|p| p.name.clone()).collect()
    }

    /// The servers `name`'s overrides name that are not among `servers`.
    pub fn unknown_servers(&self, name: &str, servers: &[String]) -> Vec<String> {
        self.current()
            .iter()
            .filter(|p| p.name == name)
            .flat_map(|p| p.overrides.servers().map(str::to_owned).collect::<Vec<_>>())
            .filter(|server| !servers.contains(server))
            .collect()
    }

    /// The principal whose token this is. Every digest is compared, in
    /// constant time, so timing tells nothing about which one matched.
    pub fn authenticate(&self, token: &str) -> Option<Arc<Principal>> {
        let digest = token_digest(token);
        let mut found = None;
        for principal in self.current() {
            if codemcp_base::secret::constant_time_eq(&principal.digest, &digest) {
                found = Some(principal);
            }
        }
        found
    }

    /// The list, re-read first when the file changed. A file that became
    /// invalid keeps the last good list (and says so in the log).
    fn current(&self) -> Vec<Arc<Principal>> {
        let mut loaded = self.loaded.lock();
        if loaded.checked.elapsed() >= RECHECK {
            loaded.checked = Instant::now();
            let now = stamp(&self.path);
            if now != loaded.stamp {
                loaded.stamp = now;
                match read_file(&self.path) {
                    Ok(list) => {
                        tracing::info!(target: "codemcp::server", path = %self.path.display(), principals = list.len(), "principals file reloaded");
                        loaded.list = list;
                    }
                    Err(e) => {
                        tracing::warn!(target: "codemcp::server", error = %e, "principals file not reloaded; keeping the previous principals");
                    }
                }
            }
        }
        loaded.list.clone()
    }
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBody {
    principals: std::collections::BTreeMap<String, Entry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    sha256: Hex32,
    #[serde(default)]
    policy: Overrides,
}

fn read_file(path: &Path) -> Result<Vec<Arc<Principal>>, PrincipalsError> {
    let text = read_trusted(path)?;
    parse(path, &text)
}

/// Who may authenticate is decided by this file, so it is read only when
/// nobody but its owner (you, or root) could have written it or its
/// directory. A symlink is followed: in a directory only you or root can
/// write, the operator put it there.
const FILE_RULES: secure_file::Rules = secure_file::Rules {
    what: "the principals file",
    max_bytes: 4 << 20,
    follow_symlink: true,
    owner: secure_file::Owner::MeOrRoot,
    private_writes: true,
};

fn read_trusted(path: &Path) -> Result<String, PrincipalsError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        match secure_file::check_dir(dir, "the principals file's directory") {
            Err(e) if !e.is_missing() => return Err(e.into()),
            _ => {}
        }
    }
    Ok(secure_file::read_trusted_text(path, &FILE_RULES)?)
}

fn parse(path: &Path, text: &str) -> Result<Vec<Arc<Principal>>, PrincipalsError> {
    let body: FileBody = serde_json::from_str(text).map_err(|e| PrincipalsError::Parse {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    body.principals
        .into_iter()
        .map(|(name, entry)| {
            check_name(&name)?;
            Ok(Arc::new(Principal {
                name,
                digest: entry.sha256.0,
                overrides: entry.policy,
                view: Mutex::new(None),
            }))
        })
        .collect()
}

fn check_name(name: &str) -> Result<(), PrincipalsError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(PrincipalsError::BadName(name.to_owned()))
    }
}

/// A SHA-256 digest in hex, checked as it is read (so an error points at it).
struct Hex32([u8; 32]);

impl<'de> serde::Deserialize<'de> for Hex32 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(Hex32Visitor)
    }
}

struct Hex32Visitor;

impl Visitor<'_> for Hex32Visitor {
    type Value = Hex32;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the SHA-256 of the token as 64 hex digits")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Hex32, E> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 || !bytes.iter().all(u8::is_ascii_hexdigit) {
            return Err(E::custom(
                "\"sha256\" must be the SHA-256 of the token as 64 hex digits",
            ));
        }
        let mut digest = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(E::custom)?;
            digest[i] = u8::from_str_radix(hex, 16).map_err(E::custom)?;
        }
        Ok(Hex32(digest))
    }
}

fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds principal `name` with a new random token to the file at `path`
/// (created 0600 if missing) and returns the token, which is stored nowhere.
///
/// # Errors
/// A bad name, a name already there, or a file that cannot be read or written.
pub fn add_token(path: &Path, name: &str) -> Result<String, PrincipalsError> {
    check_name(name)?;
    let _held = lock(path)?;
    let mut body = read_raw(path)?;
    let principals = principals_object(path, &mut body)?;
    if principals.contains_key(name) {
        return Err(PrincipalsError::Exists {
            name: name.to_owned(),
            path: path.to_owned(),
        });
    }
    let token = URL_SAFE_NO_PAD.encode(codemcp_store::random_bytes::<32>());
    let entry = serde_json::json!({ "sha256": hex(&token_digest(&token)) });
    principals.insert(name.to_owned(), entry);
    write_raw(path, &body)?;
    Ok(token)
}

/// Removes principal `name` from the file at `path`.
///
/// # Errors
/// No such principal, or a file that cannot be read or written.
pub fn remove_token(path: &Path, name: &str) -> Result<(), PrincipalsError> {
    let _held = lock(path)?;
    let mut body = read_raw(path)?;
    let principals = principals_object(path, &mut body)?;
    if principals.remove(name).is_none() {
        return Err(PrincipalsError::Unknown {
            name: name.to_owned(),
            path: path.to_owned(),
        });
    }
    write_raw(path, &body)
}

/// The file as JSON, validated as a principals file; empty when missing.
fn read_raw(path: &Path) -> Result<Value, PrincipalsError> {
    match read_trusted(path) {
        Ok(text) => {
            parse(path, &text)?;
            serde_json::from_str(&text).map_err(|e| PrincipalsError::Parse {
                path: path.to_owned(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })
        }
        Err(PrincipalsError::Unsafe(e)) if e.is_missing() => {
            Ok(serde_json::json!({ "principals": {} }))
        }
        Err(e) => Err(e),
    }
}

/// Holds `FILE.lock` (an exclusive `flock`) while one `token add/remove`
/// reads, changes and writes the file, so parallel runs each see the
/// others' changes instead of overwriting them.
fn lock(path: &Path) -> Result<fs::File, PrincipalsError> {
    let failed = |source| PrincipalsError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(failed)?;
    }
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(PathBuf::from(name))
        .map_err(failed)?;
    file.lock().map_err(failed)?;
    Ok(file)
}

fn principals_object<'a>(
    path: &Path,
    body: &'a mut Value,
) -> Result<&'a mut Map<String, Value>, PrincipalsError> {
    body.get_mut("principals")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| PrincipalsError::Parse {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: "expected {\"principals\": {...}}".into(),
        })
}

/// Writes the whole file anew (0600), through a temporary file of its own
/// (tempfile: a unique name, created 0600) and a rename, so that a gateway
/// reading it never sees half of it.
fn write_raw(path: &Path, body: &Value) -> Result<(), PrincipalsError> {
    let failed = |source| PrincipalsError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let text = serde_json::to_string_pretty(body).map_err(|e| failed(e.into()))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.as_file().sync_all())
        .map_err(failed)?;
    file.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// `$XDG_CONFIG_HOME/codemcp/tokens.json`, else `~/.config/codemcp/tokens.json`.
pub fn default_path() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute());
    let dir = xdg.or_else(|| std::env::home_dir().map(|h| h.join(".config")))?;
    Some(dir.join("codemcp").join("tokens.json"))
}

#[cfg(test)]
mod tests;
