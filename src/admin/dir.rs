//! Where the admin sockets live: `$XDG_RUNTIME_DIR/codemcp/`, else
//! `<temp dir>/codemcp-<uid>/`; either is a 0700 directory of our own user,
//! and one owned by someone else or writable by others is refused.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::AdminError;

/// The directory the sockets of this user's gateways are in.
#[must_use]
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir.join("codemcp"),
        _ => std::env::temp_dir().join(format!("codemcp-{}", euid())),
    }
}

/// The socket of gateway `pid`.
#[must_use]
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// The pid a socket file is named for.
#[must_use]
pub fn pid_of(path: &Path) -> Option<u32> {
    if path.extension()? != "sock" {
        return None;
    }
    path.file_stem()?.to_str()?.parse().ok()
}

/// Creates `dir` (0700) if missing, then checks it is private to us.
///
/// # Errors
/// [`AdminError::RuntimeDir`] when it cannot be made or is not private.
pub fn ensure_private(dir: &Path) -> Result<(), AdminError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(refused(dir, &format!("cannot create it: {e}"))),
    }
    check_private(dir)
}

/// Checks that `dir` is a real directory (no symlink) owned by us and
/// writable by nobody else, so no other user can plant or swap a socket.
///
/// # Errors
/// [`AdminError::RuntimeDir`] naming what is wrong.
pub fn check_private(dir: &Path) -> Result<(), AdminError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| refused(dir, &e.to_string()))?;
    if !meta.file_type().is_dir() {
        return Err(refused(dir, "not a directory"));
    }
    if meta.uid() != euid() {
        return Err(refused(
            dir,
            &format!("owned by uid {}, not by you (uid {})", meta.uid(), euid()),
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(refused(
            dir,
            &format!("mode {mode:o} lets others write to it (chmod 700 it)"),
        ));
    }
    Ok(())
}

fn refused(dir: &Path, message: &str) -> AdminError {
    AdminError::RuntimeDir {
        path: dir.to_owned(),
        message: message.to_owned(),
    }
}

/// Our effective uid.
#[must_use]
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_dir_others_can_write_is_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let dir = base.path().join("codemcp");
        ensure_private(&dir).expect("a new dir is private");
        let mode = std::fs::metadata(&dir).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = ensure_private(&dir).expect_err("world-writable dir refused");
        assert!(err.to_string().contains("lets others write"), "{err}");
    }

    #[test]
    fn a_symlinked_runtime_dir_is_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let real = base.path().join("real");
        std::fs::create_dir(&real).expect("mkdir");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let err = check_private(&link).expect_err("symlink refused");
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn socket_names_carry_the_pid() {
        let dir = Path::new("/run/user/1/codemcp");
        assert_eq!(pid_of(&socket_path(dir, 42)), Some(42));
        assert_eq!(pid_of(Path::new("/x/42.json")), None);
        assert_eq!(pid_of(Path::new("/x/abc.sock")), None);
    }
}
