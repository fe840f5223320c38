//! The root file system a sandbox mounts, and its compiled bytecode.
//!
//! The tree is codemcp-image's ([`codemcp_image::rootfs::python_root`]): the
//! worker image's pinned .debs and wheel, unpacked once and verified against
//! its manifest each time it is reused. It carries no `.pyc` files and is
//! mounted read-only, so each new worker would compile asyncio and
//! websockets again (about 0.3 s). So the bytecode is compiled once, by the
//! tree's own CPython inside a sandbox whose only writable place is a
//! directory beside the tree, and mounted read-only at `/pycache`
//! (`PYTHONPYCACHEPREFIX`) in every worker.
//!
//! A root gateway keeps both under `/var/lib/codemcp` (its home is closed to
//! uid 65534, which bwrap runs as); anyone else in the data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// How long compiling the bytecode may take (about 5 s on 2 loaded cores).
const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);
/// Where the bytecode is mounted inside the sandbox: beside the worker in
/// `/opt`, which the sandbox re-makes as a small read-only tmpfs since the
/// tree has no such directory to mount on.
pub const PYCACHE_IN_SANDBOX: &str = "/opt/pycache";

/// A root file system ready to mount.
#[derive(Debug, Clone)]
pub struct Root {
    pub tree: PathBuf,
    /// Compiled bytecode for the tree, when it could be made.
    pub pycache: Option<PathBuf>,
}

/// Where codemcp keeps data a sandbox mounts.
pub fn data_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        PathBuf::from("/var/lib/codemcp")
    } else {
        codemcp_image::data_dir()
    }
}

/// Where the recipe's tree for `bootstrap` is or will be: codemcp-image's
/// layout (`<data>/python-root/<key prefix>/root`), for `codemcp check`.
pub fn recipe_tree(bootstrap: &str) -> Option<PathBuf> {
    let recipe = codemcp_image::recipe::for_this_machine()?;
    let key = codemcp_image::rootfs::root_key(recipe, bootstrap);
    Some(
        data_dir()
            .join("python-root")
            .join(key.get(..16)?)
            .join("root"),
    )
}

/// The recipe's tree for `bootstrap`, made (downloads, unpacking) when it is
/// not there yet, with its bytecode.
pub async fn made(
    bwrap: &Path,
    sources: &codemcp_image::Sources,
    bootstrap: &str,
) -> Result<Root, String> {
    let recipe = codemcp_image::recipe::for_this_machine().ok_or_else(|| {
        format!(
            "the worker image recipe has no packages for this machine ({})",
            std::env::consts::ARCH
        )
    })?;
    let root = codemcp_image::rootfs::python_root_in(
        &data_dir(),
        &codemcp_image::cache_dir(),
        recipe,
        sources,
        bootstrap,
        codemcp_image::rootfs::Verify::Quick,
    )
    .await
    .map_err(|e| e.to_string())?;
    if root.made {
        tracing::info!(target: "codemcp::worker", tree = %root.root.display(), "made the sandbox's CPython root file system");
    }
    let pycache = bytecode(bwrap, &root.root).await;
    Ok(Root {
        tree: root.root,
        pycache,
    })
}

/// A tree named by `CODEMCP_SANDBOX_ROOTFS`, as it is, with bytecode.
pub async fn given(bwrap: &Path, tree: &Path) -> Root {
    Root {
        tree: tree.to_owned(),
        pycache: bytecode(bwrap, tree).await,
    }
}

/// The bytecode directory beside `tree` (`<tree>.pycache`), compiled now
/// if missing; `None` (and a log line) when that fails: workers then start
/// slower, nothing else.
async fn bytecode(bwrap: &Path, tree: &Path) -> Option<PathBuf> {
    let name = tree.file_name()?.to_string_lossy().into_owned();
    let done = tree.with_file_name(format!("{name}.pycache"));
    if done.is_dir() {
        return Some(done);
    }
    let work = tree.with_file_name(format!("{name}.pycache.{}", std::process::id()));
    match compile(bwrap, tree, &work).await {
        Ok(()) => match std::fs::rename(&work, &done) {
            Ok(()) => Some(done),
            // Another gateway finished first: theirs is as good.
            Err(_) if done.is_dir() => {
                let _ = std::fs::remove_dir_all(&work);
                Some(done)
            }
            Err(e) => {
                tracing::warn!(target: "codemcp::worker", error = %e, "could not keep the sandbox's compiled bytecode");
                let _ = std::fs::remove_dir_all(&work);
                None
            }
        },
        Err(e) => {
            tracing::warn!(target: "codemcp::worker", error = %e, "could not compile the sandbox's bytecode; workers start slower");
            let _ = std::fs::remove_dir_all(&work);
            None
        }
    }
}

/// Runs `compileall` with the tree's own CPython, in a sandbox that can
/// write only to `work`.
async fn compile(bwrap: &Path, tree: &Path, work: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(work).map_err(|e| e.to_string())?;
    // Readable by everyone: bwrap may run as uid 65534.
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let mut command = Command::new(bwrap);
    command
        .args(["--unshare-all", "--unshare-user", "--disable-userns"])
        .arg("--ro-bind")
        .arg(tree)
        .arg("/")
        .args(opt_args(tree))
        .arg("--bind")
        .arg(work)
        .arg(PYCACHE_IN_SANDBOX)
        .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
        .args(["--die-with-parent", "--cap-drop", "ALL", "--clearenv"])
        .args(["--setenv", "PYTHONPYCACHEPREFIX", PYCACHE_IN_SANDBOX, "--"])
        .args(["/usr/bin/python3", "-m", "compileall", "-q", "-j", "0"])
        .args([
            "/usr/lib/python3.14",
            "/usr/local/lib/python3.14/dist-packages",
            "/opt/codemcp",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(COMPILE_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("compileall took over {} s", COMPILE_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    // A few test modules of the standard library do not compile (as in the
    // image build): compileall then exits 1 but compiled all the rest.
    let asyncio = work.join("usr/lib/python3.14/asyncio");
    if asyncio.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "compileall: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A tmpfs at `/opt` holding the tree's `/opt/codemcp` (the worker), so the
/// bytecode can be mounted beside it.
pub fn opt_args(tree: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = ["--size", "65536", "--tmpfs", "/opt"]
        .map(Into::into)
        .to_vec();
    let worker = tree.join("opt/codemcp");
    if worker.is_dir() {
        args.extend([
            "--ro-bind".into(),
            worker.into_os_string(),
            "/opt/codemcp".into(),
        ]);
    }
    args
}
