//! Writing a user's config file in place, for every command that edits one
//! (`--make-default`, `import --write`, `install`): a byte-for-byte backup
//! first, then the new text swapped in whole.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the backup of `path` goes: `FILE.codemcp-backup` beside it.
#[must_use]
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".codemcp-backup");
    PathBuf::from(name)
}

/// Copies `path` to [`backup_path`], byte for byte.
///
/// # Errors
/// When the copy fails; the error names the backup's path.
pub fn back_up(path: &Path) -> Result<PathBuf, (PathBuf, std::io::Error)> {
    let backup = backup_path(path);
    match std::fs::copy(path, &backup) {
        Ok(_) => Ok(backup),
        Err(e) => Err((backup, e)),
    }
}

/// Replaces `path` with `text` at once (a temporary file beside it, renamed
/// over it), so a crash leaves the old file or the new one, never half of
/// one. A symlink (dotfiles) is followed, not replaced. The new file keeps
/// the old one's permissions; a file that did not exist is created readable
/// by its owner only, since config entries may hold literal secrets.
///
/// # Errors
/// When the directory cannot be created or written.
pub fn replace_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path).ok();
    let path = target.as_deref().unwrap_or(path);
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // tempfile creates the file 0600.
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(temp.path(), meta.permissions())?;
    }
    temp.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replacing_keeps_permissions_follows_symlinks_and_backs_up_byte_for_byte() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{ /* old */ }").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");

        let backup = back_up(&link).expect("backup");
        replace_atomically(&link, "{}").expect("replace");

        assert_eq!(
            std::fs::read_to_string(&backup).expect("read"),
            "{ /* old */ }"
        );
        assert!(std::fs::symlink_metadata(&link).expect("meta").is_symlink());
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "{}");
        let mode = std::fs::metadata(&real).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn a_new_file_is_private_to_its_owner() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sub").join("mcp.json");
        replace_atomically(&path, "{}").expect("create");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
