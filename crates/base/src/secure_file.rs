//! Files that hold secrets or decide who may do what (the principals file,
//! `session.key`, OAuth tokens, the audit log's directory) and the client
//! configs `import` reads: trusted only when nobody else could have written
//! them, and read only when they are regular files of a bounded size.
//!
//! Every open is `O_NONBLOCK` and checked with `fstat` on the descriptor
//! itself, so a FIFO or a device put in a file's place is refused at once
//! instead of blocking the gateway or feeding it bytes forever, and the file
//! checked is the file read (no window between a check and the open).

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Who may own a trusted file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The effective user only: files codemcp creates itself.
    Me,
    /// The effective user or root: read-only config an administrator may own.
    MeOrRoot,
    /// Anyone: input that grants nothing (a client config `import` reads).
    Anyone,
}

/// What a file must be to be trusted.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// What the file is, for messages ("the principals file").
    pub what: &'static str,
    /// Larger files are refused unread.
    pub max_bytes: u64,
    /// Follow a symlink at the path (checking its target); when `false` a
    /// symlink is refused, for files codemcp creates itself.
    pub follow_symlink: bool,
    pub owner: Owner,
    /// Refuse a file writable by group or others.
    pub private_writes: bool,
}

/// Why a file was not trusted. Each message says how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnsafeFile {
    #[error("{what} {path} does not exist")]
    Missing { what: &'static str, path: PathBuf },
    #[error(
        "{what} {path} is a symlink; refusing to follow it (codemcp never creates one there). \
         Replace it with the file itself, or remove it"
    )]
    Symlink { what: &'static str, path: PathBuf },
    #[error(
        "{what} {path} is {kind}, not a regular file; refusing to read it. \
         Replace it with a regular file, or remove it"
    )]
    NotRegular {
        what: &'static str,
        path: PathBuf,
        kind: &'static str,
    },
    #[error(
        "{what} {path} is writable by group or others (mode {mode:03o}), so another user could \
         have changed it; refusing to trust it. Check its contents, then `chmod {fix} {path}`"
    )]
    Writable {
        what: &'static str,
        path: PathBuf,
        mode: u32,
        fix: &'static str,
    },
    #[error(
        "{what} {path} is owned by uid {owner}, not by you (uid {me}){root}; refusing to trust it. \
         Check its contents, then `chown {me} {path}`, or remove it"
    )]
    NotOwned {
        what: &'static str,
        path: PathBuf,
        owner: u32,
        me: u32,
        root: &'static str,
    },
    #[error(
        "{what} {path} has {len} bytes, more than the {max} allowed; refusing to read it. \
         Is it the right file?"
    )]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        len: u64,
        max: u64,
    },
    #[error("cannot open {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl UnsafeFile {
    /// The file is simply not there (callers often create it then).
    #[must_use]
    pub fn is_missing(&self) -> bool {
        matches!(self, UnsafeFile::Missing { .. })
    }

    fn io(rules: &Rules, path: &Path, source: io::Error) -> Self {
        let what = rules.what;
        let path = path.to_owned();
        if source.kind() == io::ErrorKind::NotFound {
            return UnsafeFile::Missing { what, path };
        }
        // O_NOFOLLOW on a symlink fails with ELOOP.
        if source.raw_os_error() == Some(libc::ELOOP)
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
        {
            return UnsafeFile::Symlink { what, path };
        }
        UnsafeFile::Io { what, path, source }
    }
}

/// Logs why `path` was refused (a missing file is not a refusal).
fn refused(error: UnsafeFile) -> UnsafeFile {
    if !error.is_missing() {
        tracing::error!(target: "codemcp::files", "{error}");
    }
    error
}

/// The whole of the file at `path`, when `rules` trust it.
///
/// # Errors
/// The file is missing, unsafe by `rules` (logged), too large, or unreadable.
pub fn read_trusted(path: &Path, rules: &Rules) -> Result<Vec<u8>, UnsafeFile> {
    let file = open_trusted(path, rules, OpenOptions::new().read(true))?;
    read_opened(file, path, rules)
}

/// The whole of `file` (opened by [`open_trusted`]), at most `rules.max_bytes`.
///
/// # Errors
/// The file is larger than the bound, or a read fails.
pub fn read_opened(file: File, path: &Path, rules: &Rules) -> Result<Vec<u8>, UnsafeFile> {
    let mut bytes = Vec::new();
    // Read one byte past the bound: a file that grew since fstat is caught too.
    file.take(rules.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| refused(UnsafeFile::io(rules, path, source)))?;
    let len = bytes.len() as u64;
    if len > rules.max_bytes {
        return Err(refused(UnsafeFile::TooLarge {
            what: rules.what,
            path: path.to_owned(),
            len,
            max: rules.max_bytes,
        }));
    }
    Ok(bytes)
}

/// [`read_trusted`] as UTF-8 text.
///
/// # Errors
/// As [`read_trusted`], or the file is not UTF-8.
pub fn read_trusted_text(path: &Path, rules: &Rules) -> Result<String, UnsafeFile> {
    text(read_trusted(path, rules)?, path, rules)
}

/// `bytes` as UTF-8 text.
///
/// # Errors
/// The bytes are not UTF-8.
pub fn text(bytes: Vec<u8>, path: &Path, rules: &Rules) -> Result<String, UnsafeFile> {
    String::from_utf8(bytes).map_err(|e| {
        refused(UnsafeFile::Io {
            what: rules.what,
            path: path.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        })
    })
}

/// Opens `path` with `options` (never blocking, never following a symlink
/// unless `rules` say so) and checks the opened file against `rules`.
///
/// # Errors
/// The file is missing, unsafe by `rules` (logged), or cannot be opened.
pub fn open_trusted(
    path: &Path,
    rules: &Rules,
    options: &mut OpenOptions,
) -> Result<File, UnsafeFile> {
    let mut flags = libc::O_NONBLOCK;
    if !rules.follow_symlink {
        flags |= libc::O_NOFOLLOW;
    }
    let file = options
        .custom_flags(flags)
        .open(path)
        .map_err(|source| refused(UnsafeFile::io(rules, path, source)))?;
    let meta = file
        .metadata()
        .map_err(|source| refused(UnsafeFile::io(rules, path, source)))?;
    check(path, rules, &meta).map_err(refused)?;
    Ok(file)
}

fn check(path: &Path, rules: &Rules, meta: &Metadata) -> Result<(), UnsafeFile> {
    let what = rules.what;
    if !meta.file_type().is_file() {
        return Err(UnsafeFile::NotRegular {
            what,
            path: path.to_owned(),
            kind: kind(meta),
        });
    }
    check_owner_and_mode(path, rules, meta, "600")?;
    if meta.len() > rules.max_bytes {
        return Err(UnsafeFile::TooLarge {
            what,
            path: path.to_owned(),
            len: meta.len(),
            max: rules.max_bytes,
        });
    }
    Ok(())
}

fn check_owner_and_mode(
    path: &Path,
    rules: &Rules,
    meta: &Metadata,
    fix: &'static str,
) -> Result<(), UnsafeFile> {
    let me = nix::unistd::geteuid().as_raw();
    let owner = meta.uid();
    let owner_ok = match rules.owner {
        Owner::Me => owner == me,
        Owner::MeOrRoot => owner == me || owner == 0,
        Owner::Anyone => true,
    };
    if !owner_ok {
        return Err(UnsafeFile::NotOwned {
            what: rules.what,
            path: path.to_owned(),
            owner,
            me,
            root: if rules.owner == Owner::MeOrRoot {
                " or root"
            } else {
                ""
            },
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if rules.private_writes && mode & 0o022 != 0 {
        return Err(UnsafeFile::Writable {
            what: rules.what,
            path: path.to_owned(),
            mode,
            fix,
        });
    }
    Ok(())
}

/// Checks that the directory `dir` could not have been changed by another
/// user: a directory owned by you or root, not writable by group or others
/// unless sticky (as `/tmp` is: there nobody else can replace your files).
///
/// # Errors
/// The directory is unsafe (logged) or cannot be examined.
pub fn check_dir(dir: &Path, what: &'static str) -> Result<(), UnsafeFile> {
    let rules = Rules {
        what,
        max_bytes: u64::MAX,
        follow_symlink: true,
        owner: Owner::MeOrRoot,
        private_writes: false,
    };
    let meta =
        std::fs::metadata(dir).map_err(|source| refused(UnsafeFile::io(&rules, dir, source)))?;
    if !meta.is_dir() {
        return Err(refused(UnsafeFile::NotRegular {
            what,
            path: dir.to_owned(),
            kind: kind(&meta),
        }));
    }
    let sticky = meta.permissions().mode() & 0o1000 != 0;
    let rules = Rules {
        private_writes: !sticky,
        ..rules
    };
    check_owner_and_mode(dir, &rules, &meta, "go-w").map_err(refused)
}

/// What a non-regular file is, for messages.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests;
