//! Putting a directory in place atomically: made under a temporary name
//! beside its final one (`.tmp-<pid>-...`), then renamed; one that fails a
//! check is renamed aside (`.bad-<pid>-...`) before it is removed, so no
//! reader ever sees half of one. Temporaries of processes that died are
//! removed by the next maker.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A directory being assembled; removed on drop unless renamed into place.
pub struct Temporary {
    pub path: PathBuf,
    armed: bool,
}

impl Temporary {
    pub fn new(parent: &Path) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!(".tmp-{}-", std::process::id()))
            .tempdir_in(parent)?;
        Ok(Self {
            path: dir.keep(),
            armed: true,
        })
    }

    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if self.armed {
            let _ = remove_tree(&self.path);
        }
    }
}

/// Temporary trees of processes that died while making one.
pub fn remove_stale_temporaries(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(".tmp-")
            .or_else(|| name.strip_prefix(".bad-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = remove_tree(&entry.path());
        }
    }
}

/// Moves a tree that failed its check out of the way (a reader that
/// already holds it keeps its files), then removes it.
pub fn discard(home: &Path) -> std::io::Result<()> {
    let Some(parent) = home.parent() else {
        return remove_tree(home);
    };
    let aside = tempfile::Builder::new()
        .prefix(&format!(".bad-{}-", std::process::id()))
        .tempdir_in(parent)?
        .keep();
    match std::fs::rename(home, aside.join("tree")) {
        Ok(()) => remove_tree(&aside),
        // Another process moved it first.
        Err(_) if !home.exists() => remove_tree(&aside),
        Err(e) => {
            let _ = remove_tree(&aside);
            Err(e)
        }
    }
}

/// `rm -rf`, giving directories back their write permission first.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    fn writable(dir: &Path) {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    writable(&entry.path());
                }
            }
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            writable(path);
            std::fs::remove_dir_all(path)
        }
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}
