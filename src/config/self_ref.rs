//! The self-reference guard: a server entry whose command is codemcp itself
//! would make a gateway proxy itself, which starts another gateway that
//! proxies itself, and so on. Such entries are skipped, at `codemcp import`
//! and when the config is loaded.

use std::path::{Path, PathBuf};

use super::{SkippedServer, Transport, UpstreamConfig};

/// Why a self-launching entry is skipped, in words for the user.
pub const SELF_REFERENCE: &str = "launches codemcp itself (a gateway never proxies itself)";

/// The codemcp binaries on this machine: the running one and the one
/// `codemcp` on `PATH` names, both with symlinks resolved.
#[derive(Debug, Clone, Default)]
pub struct SelfBinaries {
    paths: Vec<PathBuf>,
}

impl SelfBinaries {
    /// Looks both up; either may be missing (then it matches nothing).
    #[must_use]
    pub fn detect() -> Self {
        let running = std::env::current_exe().ok();
        let on_path = which::which("codemcp").ok();
        let paths = running
            .into_iter()
            .chain(on_path)
            .filter_map(|path| path.canonicalize().ok())
            .collect();
        Self { paths }
    }

    /// Whether `command` (as a server entry writes it, already expanded)
    /// starts one of these binaries. A bare name is looked up on `PATH`; a
    /// relative path is taken from `cwd` (the entry's, else ours).
    #[must_use]
    pub fn launches_codemcp(&self, command: &str, cwd: Option<&Path>) -> bool {
        if self.paths.is_empty() || command.trim().is_empty() {
            return false;
        }
        let path = Path::new(command);
        let resolved = if path.components().count() > 1 || path.is_absolute() {
            match cwd {
                Some(dir) => Some(dir.join(path)),
                None => Some(path.to_path_buf()),
            }
        } else {
            which::which(command).ok()
        };
        resolved
            .and_then(|path| path.canonicalize().ok())
            .is_some_and(|path| self.paths.contains(&path))
    }
}

/// Moves every server that launches codemcp itself from `config.servers`
/// to `config.skipped`, keeping both sorted by name.
pub(crate) fn skip_self_references(config: &mut UpstreamConfig, guard: &SelfBinaries) {
    let (own, others): (Vec<_>, Vec<_>) = std::mem::take(&mut config.servers)
        .into_iter()
        .partition(|server| match &server.transport {
            Transport::Stdio { command, cwd, .. } => {
                guard.launches_codemcp(command, cwd.as_deref())
            }
            Transport::Http { .. } => false,
        });
    config.servers = others;
    if own.is_empty() {
        return;
    }
    config
        .skipped
        .extend(own.into_iter().map(|server| SkippedServer {
            name: server.name,
            reason: SELF_REFERENCE.to_owned(),
        }));
    config.skipped.sort_by(|a, b| a.name.cmp(&b.name));
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_to_the_running_binary_is_codemcp_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = std::env::current_exe().expect("the test binary has a path");
        let link = dir.path().join("codemcp");
        std::os::unix::fs::symlink(&exe, &link).expect("symlink");
        let guard = SelfBinaries::detect();
        assert!(guard.launches_codemcp(&link.to_string_lossy(), None));
        assert!(guard.launches_codemcp("./codemcp", Some(dir.path())));
        assert!(!guard.launches_codemcp("/bin/sh", None));
        assert!(!guard.launches_codemcp("sh", None));
        assert!(!guard.launches_codemcp("/nonexistent/codemcp", None));
    }
}
