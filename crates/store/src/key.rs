//! The key that seals session records, and where the gateway keeps state.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::StoreError;
use super::handle::random_bytes;
use codemcp_base::secure_file;

/// Shortest `CODEMCP_SESSION_KEY` accepted: 32 characters, so even a key of
/// letters and digits carries well over 128 bits when chosen at random.
pub const MIN_KEY_CHARS: usize = 32;
const KEY_FILE: &str = "session.key";
const KEY_LEN: usize = 32;

/// The HMAC key for session records. Every gateway sharing a store needs the
/// same one (same `CODEMCP_SESSION_KEY`, or the same key file).
#[derive(Clone)]
pub struct SealKey([u8; KEY_LEN]);

impl SealKey {
    /// The configured key if there is one, else the key file `session.key`
    /// in `state_dir`, created on first use.
    pub fn from_setting(setting: Option<&str>, state_dir: &Path) -> Result<Self, StoreError> {
        match setting {
            Some(text) => Self::from_text(text),
            None => Self::from_file(&state_dir.join(KEY_FILE)),
        }
    }

    /// A key for this process only: sessions sealed with it die with it.
    pub fn ephemeral() -> Self {
        Self(random_bytes())
    }

    /// The raw key, for other MACs under the same key (the saved helpers'
    /// record handles); never logged or sent.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn from_text(text: &str) -> Result<Self, StoreError> {
        let chars = text.chars().count();
        if chars < MIN_KEY_CHARS {
            return Err(StoreError::Config(format!(
                "CODEMCP_SESSION_KEY has {chars} characters; use at least {MIN_KEY_CHARS} \
                 (e.g. the output of `openssl rand -base64 32`)"
            )));
        }
        // Hashing gives every configured key the same shape as a file key.
        let mut hash = Sha256::new();
        hash.update(b"codemcp session key v1\0");
        hash.update(text.as_bytes());
        Ok(Self(hash.finalize().into()))
    }

    fn from_file(path: &Path) -> Result<Self, StoreError> {
        let config = |what: &str, e: io::Error| {
            StoreError::Config(format!("{what} {}: {e}", path.display()))
        };
        if let Some(dir) = path.parent() {
            create_private_dir(dir).map_err(|e| config("cannot create the directory of", e))?;
        }
        match read_key_file(path) {
            Ok(bytes) => return Self::from_file_bytes(path, &bytes),
            Err(e) if e.is_missing() => {}
            Err(e) => return Err(StoreError::Config(e.to_string())),
        }
        match publish_new_key(path) {
            Ok(key) => {
                tracing::info!(path = %path.display(), "created a new session key");
                Ok(Self(key))
            }
            // Another process created it first: use theirs, so both agree.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let bytes = read_key_file(path).map_err(|e| StoreError::Config(e.to_string()))?;
                Self::from_file_bytes(path, &bytes)
            }
            Err(e) => Err(config("cannot create session key", e)),
        }
    }

    fn from_file_bytes(path: &Path, bytes: &[u8]) -> Result<Self, StoreError> {
        let key: [u8; KEY_LEN] = bytes.try_into().map_err(|_| {
            StoreError::Config(format!(
                "session key {} has {} bytes, expected {KEY_LEN}; delete it to start over (existing sessions are lost)",
                path.display(),
                bytes.len()
            ))
        })?;
        if let Ok(meta) = fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %path.display(), "session key is readable by other users; chmod 600 it");
        }
        Ok(Self(key))
    }
}

/// Whoever can write the key can forge session records: it is read only
/// when it is a regular file of yours, not writable by others, and never
/// through a symlink or from a FIFO (which would hang the start).
const KEY_RULES: secure_file::Rules = secure_file::Rules {
    what: "the session key",
    // Bigger than a key, so a wrong size gets its own message below.
    max_bytes: 4096,
    follow_symlink: false,
    owner: secure_file::Owner::Me,
    private_writes: true,
};

fn read_key_file(path: &Path) -> Result<Vec<u8>, secure_file::UnsafeFile> {
    secure_file::read_trusted(path, &KEY_RULES)
}

/// Writes a fresh key next to `path` and links it into place. The link
/// appears complete or not at all, so a process racing us never reads a
/// half-written key; `hard_link` fails with `AlreadyExists` for the loser.
fn publish_new_key(path: &Path) -> io::Result<[u8; KEY_LEN]> {
    let key: [u8; KEY_LEN] = random_bytes();
    let suffix: [u8; 8] = random_bytes();
    let tmp = path.with_extension(format!("tmp-{:016x}", u64::from_le_bytes(suffix)));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&key)?;
        file.sync_all()?;
        fs::hard_link(&tmp, path)
    })();
    let _ = fs::remove_file(&tmp);
    written.map(|()| key)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

pub(crate) fn create_private_dir_for(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => create_private_dir(dir),
        _ => Ok(()),
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// Where the gateway keeps its state: `$XDG_STATE_HOME/codemcp`, else
/// `~/.local/state/codemcp`.
pub fn state_dir() -> PathBuf {
    let xdg = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from);
    // The XDG spec says to ignore relative paths.
    if let Some(dir) = xdg.filter(|d| d.is_absolute()) {
        return dir.join("codemcp");
    }
    match std::env::home_dir() {
        Some(home) => home.join(".local/state/codemcp"),
        None => std::env::temp_dir().join("codemcp-state"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_is_created_0600_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state/codemcp");
        let first = SealKey::from_setting(None, &state).expect("creates");
        let file = state.join(KEY_FILE);
        let mode = fs::metadata(&file).expect("key file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = fs::metadata(&state)
            .expect("state dir")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let again = SealKey::from_setting(None, &state).expect("reads");
        assert_eq!(first.0, again.0);
        let leftovers = fs::read_dir(&state).expect("list").count();
        assert_eq!(leftovers, 1, "only session.key remains");
    }

    #[test]
    fn racing_processes_end_with_one_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().to_path_buf();
        let keys: Vec<[u8; KEY_LEN]> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| SealKey::from_setting(None, &state).expect("key").0))
                .collect();
            racers
                .into_iter()
                .map(|r| r.join().expect("no panic"))
                .collect()
        });
        assert!(
            keys.windows(2).all(|w| w[0] == w[1]),
            "all racers use the same key"
        );
        assert_eq!(fs::read(state.join(KEY_FILE)).expect("file"), keys[0]);
    }

    #[test]
    fn short_key_is_refused() {
        let err = SealKey::from_setting(Some("too-short-a-secret"), Path::new("/nonexistent"))
            .expect_err("short");
        assert!(err.to_string().contains("at least 32"), "{err}");
        let ok = SealKey::from_setting(Some(&"k".repeat(32)), Path::new("/nonexistent"))
            .expect("32 chars");
        assert_ne!(
            ok.0,
            SealKey::from_setting(Some(&"j".repeat(32)), Path::new("/x"))
                .expect("ok")
                .0
        );
    }

    #[test]
    fn corrupt_key_file_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(KEY_FILE), b"short").expect("write");
        let err = SealKey::from_setting(None, dir.path()).expect_err("corrupt");
        assert!(err.to_string().contains("has 5 bytes"), "{err}");
    }
}
