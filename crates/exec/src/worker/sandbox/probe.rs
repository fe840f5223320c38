//! Can a sandbox be made here, and if not, what is missing: for
//! `CODEMCP_FALLBACK=auto`, `codemcp check` and the start of the placement.
//! Never a reason to run unsandboxed: a sandbox that cannot be made is
//! reported unavailable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// How long one trial sandbox may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the sandbox placement cannot run here, with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error("the sandbox placement is Linux only (bubblewrap)")]
    NotLinux,
    #[error(
        "bubblewrap is not installed: install it from the distribution (`apt-get install bubblewrap`, `dnf install bubblewrap`), or name it with CODEMCP_BWRAP"
    )]
    NoBwrap,
    #[error(
        "bubblewrap cannot make a user namespace: unprivileged user namespaces are disabled ({0}); enable them (`sysctl -w kernel.unprivileged_userns_clone=1`, `user.max_user_namespaces` above 0, or on Ubuntu 24.04 an AppArmor profile for bwrap), or install bwrap setuid"
    )]
    NoUserNamespaces(String),
    #[error(
        "the sandbox's CPython root file system is missing ({0}): `codemcp setup sandbox` makes it"
    )]
    NoRootfs(String),
    #[error("bubblewrap failed: {0}")]
    Broken(String),
}

/// What `codemcp check` reports about the sandbox placement.
#[derive(Debug, Clone)]
pub struct SandboxStatus {
    /// bwrap's version and that it can make namespaces here, or what is missing.
    pub bwrap: Result<String, Missing>,
    /// The CPython in the root file system, or what is missing.
    pub rootfs: Result<String, Missing>,
}

impl SandboxStatus {
    /// Escalation can use the sandbox (the root file system may still need
    /// making, which `setup sandbox` does).
    pub fn usable(&self) -> bool {
        self.bwrap.is_ok() && self.rootfs.is_ok()
    }
}

/// `CODEMCP_BWRAP`, else `bwrap` on `PATH`, else the distribution's place.
pub fn find_bwrap(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return path.is_file().then(|| path.to_owned());
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("bwrap"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/bin/bwrap")])
        .find(|p| p.is_file())
}

/// bwrap's version once a trial sandbox with every namespace new worked.
pub async fn bwrap_works(bwrap: &Path) -> Result<String, Missing> {
    if !cfg!(target_os = "linux") {
        return Err(Missing::NotLinux);
    }
    let version = run(Command::new(bwrap).arg("--version"))
        .await
        .map_err(|e| Missing::Broken(format!("{}: {e}", bwrap.display())))?;
    // The host's root, read-only, in fresh namespaces: bwrap itself is there.
    let mut trial = Command::new(bwrap);
    trial
        .args(["--unshare-all", "--unshare-user", "--disable-userns"])
        .args(["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"])
        .args(["--die-with-parent", "--cap-drop", "ALL", "--"])
        .arg(bwrap)
        .arg("--version");
    match run(&mut trial).await {
        Ok(_) => Ok(version.trim().to_owned()),
        Err(e) if userns_refused(&e) => Err(Missing::NoUserNamespaces(userns_settings())),
        Err(e) => Err(Missing::Broken(e)),
    }
}

/// Both, and the CPython the root file system runs inside a sandbox.
pub async fn usable(bwrap: &Path, rootfs: &Path) -> Result<String, Missing> {
    let version = bwrap_works(bwrap).await?;
    let python = rootfs_python(bwrap, rootfs).await?;
    Ok(format!("{version}, CPython {python}"))
}

/// The CPython version inside the root file system, with websockets.
pub async fn rootfs_python(bwrap: &Path, rootfs: &Path) -> Result<String, Missing> {
    if !super::rootfs_present(rootfs) {
        return Err(Missing::NoRootfs(format!(
            "no {}",
            rootfs.join("usr/bin/python3").display()
        )));
    }
    let mut trial = Command::new(bwrap);
    trial
        .args(["--unshare-all", "--unshare-user", "--disable-userns"])
        .args(["--uid", "65534", "--gid", "65534"])
        .arg("--ro-bind")
        .arg(rootfs)
        .arg("/")
        .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
        .args(["--die-with-parent", "--cap-drop", "ALL", "--clearenv", "--"])
        .args(["/usr/bin/python3", "-c"])
        .arg("import sys, websockets.asyncio.client; print(sys.version.split()[0])");
    run(&mut trial)
        .await
        .map(|v| v.trim().to_owned())
        .map_err(|e| Missing::NoRootfs(format!("{}: {e}", rootfs.display())))
}

/// Everything at once, for `codemcp check`.
pub async fn status(configured: Option<&Path>, rootfs: &Path) -> SandboxStatus {
    let Some(bwrap) = find_bwrap(configured) else {
        let missing = if cfg!(target_os = "linux") {
            Missing::NoBwrap
        } else {
            Missing::NotLinux
        };
        return SandboxStatus {
            bwrap: Err(missing.clone()),
            rootfs: Err(missing),
        };
    };
    let works = bwrap_works(&bwrap).await;
    let rootfs = match &works {
        Ok(_) => rootfs_python(&bwrap, rootfs).await,
        Err(e) => Err(e.clone()),
    };
    SandboxStatus {
        bwrap: works.map(|v| format!("{v} at {}", bwrap.display())),
        rootfs,
    }
}

/// Stdout of a command that must succeed within `PROBE_TIMEOUT`, else why not.
async fn run(command: &mut Command) -> Result<String, String> {
    command
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    match tokio::time::timeout(PROBE_TIMEOUT, command.output()).await {
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(Ok(out)) => Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
    }
}

/// bwrap's messages when the kernel refuses it a user namespace.
fn userns_refused(stderr: &str) -> bool {
    [
        "user namespace",
        "uid map",
        "No permissions to creating new namespace",
        "Operation not permitted",
        "setting up uid map",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// The kernel settings that decide it, as this machine has them.
fn userns_settings() -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|v| v.trim().to_owned());
    let mut seen = Vec::new();
    for (name, path) in [
        (
            "kernel.unprivileged_userns_clone",
            "/proc/sys/kernel/unprivileged_userns_clone",
        ),
        (
            "user.max_user_namespaces",
            "/proc/sys/user/max_user_namespaces",
        ),
        (
            "kernel.apparmor_restrict_unprivileged_userns",
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ),
    ] {
        if let Some(value) = read(path) {
            seen.push(format!("{name}={value}"));
        }
    }
    if seen.is_empty() {
        "the kernel refused".to_owned()
    } else {
        seen.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_user_namespace_is_told_apart() {
        assert!(userns_refused(
            "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces."
        ));
        assert!(userns_refused(
            "bwrap: setting up uid map: Permission denied"
        ));
        assert!(!userns_refused(
            "bwrap: execvp /nope: No such file or directory"
        ));
    }

    #[test]
    fn every_missing_piece_names_its_fix() {
        assert!(
            Missing::NoBwrap
                .to_string()
                .contains("apt-get install bubblewrap")
        );
        assert!(
            Missing::NoRootfs("x".into())
                .to_string()
                .contains("codemcp setup sandbox")
        );
        assert!(
            Missing::NoUserNamespaces("user.max_user_namespaces=0".into())
                .to_string()
                .contains("unprivileged user namespaces are disabled")
        );
    }
}
