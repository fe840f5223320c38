//! Workers in a bubblewrap sandbox on the host (`cpython-sandbox`;
//! `CODEMCP_FALLBACK=sandbox`, or `auto` without a Docker engine). Linux only.
//!
//! The same CPython 3.14 and worker as the Docker image: the image's pinned
//! .debs and wheel, unpacked once into a read-only root file system
//! (`codemcp setup sandbox`). Each worker gets:
//!
//! - every namespace new (user, mount, pid, network, ipc, uts, cgroup): no
//!   network interface but its own loopback, no abstract socket of the
//!   host, no other process; new user namespaces refused inside;
//! - no capabilities, `no_new_privs`, a seccomp filter (`seccomp.rs`);
//! - the root file system read-only, a bounded `/tmp` and `/dev/shm`;
//! - memory, processes, CPU and file size bounded (`limits.rs`);
//! - death with the gateway: bwrap gets SIGKILL when the gateway dies, and
//!   its sandbox with it (`--die-with-parent`);
//! - its control channel as a socket handed in (one end of a socketpair as
//!   fd 3): no listener, on no network, that any other process could dial.
//!   The worker still presents its token, as over TCP.
//!
//! A gateway running as root starts bwrap as uid 65534, so the sandbox's user
//! is nobody on the host too (as in Docker), when the root file system is
//! reachable by nobody; otherwise the sandbox's uid 65534 maps to root's uid,
//! with no capability anywhere.

mod etc;
mod limits;
pub mod probe;
pub mod root;
mod seccomp;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::process::{Child, Command};

pub use self::limits::{Bounds, CgroupRoot};
use super::WorkerError;
use super::spawn::{Dial, Exit, Launched, Reach, Spawner};

pub const SANDBOX_ENGINE: &str = "cpython-sandbox";
/// The descriptors the worker finds its control socket and bwrap its
/// seccomp program on.
const CONTROL_FD: i32 = 3;
const SECCOMP_FD: i32 = 4;
/// Where the root file system keeps the worker (as in the image).
const BAKED_BOOTSTRAP: &str = "opt/codemcp/bootstrap.py";
/// How long a run waits for the root file system being made.
const ROOT_WAIT: Duration = Duration::from_secs(20);
/// The user the worker runs as, inside and (for a root gateway) outside.
const NOBODY: u32 = 65534;

/// Where a sandbox's root file system comes from.
#[derive(Debug, Clone)]
pub enum RootSource {
    /// Made from the worker image's recipe on first need (codemcp-image).
    Recipe(codemcp_image::Sources),
    /// A tree the operator names (`CODEMCP_SANDBOX_ROOTFS`).
    Given(PathBuf),
}

/// What a sandboxed worker needs: bwrap, the root file system, the bounds.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
    pub root: RootSource,
    pub bounds: Bounds,
}

/// What depends on the root file system, ready once it is.
struct Prepared {
    root: root::Root,
    /// `python3 -u ...`: the tree's worker when it is this build's, else `-c`.
    command: Vec<String>,
    /// Start bwrap as uid 65534 (the gateway is root).
    as_nobody: bool,
    /// The sandbox's `/etc`: the root file system's, plus hosts and hostname.
    etc: etc::Etc,
}

type Preparing = Shared<BoxFuture<'static, Result<Arc<Prepared>, String>>>;

/// Starts sandboxed workers.
pub(super) struct SandboxSpawner {
    config: SandboxConfig,
    seccomp: Vec<u8>,
    cgroups: Option<CgroupRoot>,
    version: String,
    prepared: Preparing,
}

impl SandboxSpawner {
    /// Checks that bwrap can make a sandbox here and finds the cgroup place;
    /// the root file system is made (or checked) in the background, and the
    /// first worker waits for it.
    pub async fn prepare(
        config: SandboxConfig,
        bootstrap: &'static str,
    ) -> Result<Self, WorkerError> {
        let version = probe::bwrap_works(&config.bwrap)
            .await
            .map_err(|e| WorkerError::Sandbox(e.to_string()))?;
        let cgroups = match CgroupRoot::find() {
            Ok(root) => {
                limits::reap_stale(&root);
                Some(root)
            }
            Err(why) => {
                tracing::info!(target: "codemcp::worker", "sandboxed workers get no cgroup ({why}); their resource limits still bound memory, processes, CPU time and file size");
                None
            }
        };
        let (bwrap, source) = (config.bwrap.clone(), config.root.clone());
        let prepared: Preparing =
            async move { prepare_root(&bwrap, &source, bootstrap).await.map(Arc::new) }
                .boxed()
                .shared();
        // Driven now, so it is ready (or failed) before the first escalation.
        tokio::spawn(prepared.clone());
        Ok(Self {
            seccomp: seccomp::compiled(),
            cgroups,
            version,
            prepared,
            config,
        })
    }

    /// The root file system, waiting for it at most `ROOT_WAIT`.
    async fn ready(&self) -> Result<Arc<Prepared>, WorkerError> {
        match tokio::time::timeout(ROOT_WAIT, self.prepared.clone()).await {
            Ok(Ok(prepared)) => Ok(prepared),
            Ok(Err(e)) => Err(WorkerError::Sandbox(e)),
            Err(_) => Err(WorkerError::Sandbox(format!(
                "its CPython root file system is still being made (the first sandboxed escalation on this machine downloads the worker image's pinned packages; `codemcp setup sandbox` does it ahead of time); run this again shortly (waited {} s)",
                ROOT_WAIT.as_secs()
            ))),
        }
    }

    fn command(&self, prepared: &Prepared, dial: &Dial<'_>) -> Command {
        let b = &self.config.bounds;
        let mut command = Command::new(&self.config.bwrap);
        let tmp = b.tmp_bytes.to_string();
        command
            .args(["--unshare-all", "--unshare-user", "--disable-userns"])
            .args(["--uid", "65534", "--gid", "65534"])
            .args(["--hostname", "codemcp-worker"])
            .arg("--ro-bind")
            .arg(&prepared.root.tree)
            .arg("/")
            .args(prepared.etc.args())
            .args(["--proc", "/proc", "--dev", "/dev"])
            .args([
                "--size",
                &tmp,
                "--tmpfs",
                "/dev/shm",
                "--remount-ro",
                "/dev",
            ])
            .args(["--size", &tmp, "--tmpfs", "/tmp", "--chdir", "/tmp"])
            // The worker is the namespace's init, as in Docker: signals it has
            // no handler for (SIGKILL from inside too) do not reach it.
            .args(["--as-pid-1", "--new-session", "--die-with-parent"])
            .args(["--cap-drop", "ALL"])
            .args(["--seccomp", &SECCOMP_FD.to_string()])
            .arg("--clearenv");
        let env = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME", "/tmp".to_owned()),
            ("PYTHONDONTWRITEBYTECODE", "1".to_owned()),
            ("PYTHONUNBUFFERED", "1".to_owned()),
            // One malloc arena per thread would reserve 64 MiB of address
            // space each, which the address-space limit counts.
            ("MALLOC_ARENA_MAX", "2".to_owned()),
            ("CODEMCP_CONTROL_URL", dial.url.to_owned()),
            ("CODEMCP_CONTROL_FD", CONTROL_FD.to_string()),
            ("CODEMCP_WORKER_TOKEN", dial.token.to_owned()),
            ("CODEMCP_WORKER_NPROC", b.pids.to_string()),
        ];
        if let Some(pycache) = &prepared.root.pycache {
            command.args(root::opt_args(&prepared.root.tree));
            command
                .arg("--ro-bind")
                .arg(pycache)
                .arg(root::PYCACHE_IN_SANDBOX);
            command.args(["--remount-ro", "/opt"]);
            command.args(["--setenv", "PYTHONPYCACHEPREFIX", root::PYCACHE_IN_SANDBOX]);
        }
        for (name, value) in env {
            command.args(["--setenv", name, &value]);
        }
        command
            .arg("--")
            .args(&prepared.command)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        command
    }

    fn launch(&self, prepared: &Prepared, dial: &Dial<'_>) -> Result<Jailed, WorkerError> {
        let failed = |what: &str, e: std::io::Error| WorkerError::Start(format!("{what}: {e}"));
        let (ours, theirs) = UnixStream::pair().map_err(|e| failed("a control socket", e))?;
        let program = seccomp_pipe(&self.seccomp).map_err(|e| failed("the seccomp program", e))?;
        let cgroup = self.cgroups.as_ref().and_then(|root| {
            limits::Cgroup::new(root, &self.config.bounds)
                .inspect_err(|e| tracing::warn!(target: "codemcp::worker", error = %e, "could not make a cgroup for a sandboxed worker; its resource limits still hold"))
                .ok()
        });
        let mut command = self.command(prepared, dial);
        let setup = ChildSetup {
            rlimits: limits::rlimits(&self.config.bounds, cgroup.is_some()),
            cgroup_fds: cgroup
                .as_ref()
                .map(limits::Cgroup::procs_fds)
                .unwrap_or_default(),
            control: theirs.as_raw_fd(),
            seccomp: program.as_raw_fd(),
            as_nobody: prepared.as_nobody,
        };
        // SAFETY: `ChildSetup::run` makes only async-signal-safe calls.
        unsafe {
            command.pre_exec(move || setup.run());
        }
        codemcp_base::process::die_with_parent(&mut command);
        let child = command
            .spawn()
            .map_err(|e| failed(&self.config.bwrap.display().to_string(), e))?;
        // The child holds its copies now.
        drop((theirs, program));
        ours.set_nonblocking(true)
            .map_err(|e| failed("the control socket", e))?;
        let stream =
            tokio::net::UnixStream::from_std(ours).map_err(|e| failed("the control socket", e))?;
        dial.control.admit_handed_in(stream);
        Ok(Jailed {
            child,
            _cgroup: cgroup,
            _counted: codemcp_base::metrics::container(),
        })
    }
}

/// What the forked child does before it becomes bwrap.
struct ChildSetup {
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    cgroup_fds: Vec<i32>,
    control: i32,
    seccomp: i32,
    as_nobody: bool,
}

impl ChildSetup {
    fn run(&self) -> std::io::Result<()> {
        limits::join(&self.cgroup_fds)?;
        limits::apply(&self.rlimits)?;
        // Above any descriptor number first, so neither lands on the other.
        let control = dup_above(self.control)?;
        let seccomp = dup_above(self.seccomp)?;
        dup_to(control, CONTROL_FD)?;
        dup_to(seccomp, SECCOMP_FD)?;
        // Nothing else the gateway holds open (inherited from whoever
        // started it, say) goes into the sandbox. Before Linux 5.9 there is no
        // close_range; the descriptors are close-on-exec then, as Rust opens them.
        // SAFETY: closes descriptors of the child only.
        unsafe {
            libc::syscall(libc::SYS_close_range, SECCOMP_FD + 1, u32::MAX, 0);
        }
        if self.as_nobody {
            // SAFETY: plain credential calls on the child itself.
            unsafe {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(NOBODY, NOBODY, NOBODY) != 0
                    || libc::setresuid(NOBODY, NOBODY, NOBODY) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}

fn dup_above(fd: i32) -> std::io::Result<i32> {
    // SAFETY: duplicates a descriptor the child holds.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(new)
}

/// `dup2`, which leaves the copy open across exec.
fn dup_to(fd: i32, to: i32) -> std::io::Result<()> {
    // SAFETY: as above.
    if unsafe { libc::dup2(fd, to) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A pipe holding the program, its write end closed: bwrap reads to the end.
fn seccomp_pipe(program: &[u8]) -> std::io::Result<OwnedFd> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two descriptors, which are then owned here.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just opened and belong to nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Far below a pipe's 64 KiB buffer, so this cannot block.
    let mut writer = std::fs::File::from(write);
    std::io::Write::write_all(&mut writer, program)?;
    Ok(read)
}

/// Whether every directory down to `path` lets anyone through (so bwrap
/// started as uid 65534 can reach it).
fn reachable_by_all(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

#[async_trait::async_trait]
impl Spawner for SandboxSpawner {
    fn engine(&self) -> &'static str {
        SANDBOX_ENGINE
    }

    fn describe(&self) -> String {
        let b = &self.config.bounds;
        format!(
            "cpython in bubblewrap sandboxes ({}, root {}; {} MiB, {} processes, {} CPU s, /tmp {} MiB{}; no network, seccomp, control over a socket handed in)",
            self.version,
            match &self.config.root {
                RootSource::Recipe(_) => "the worker image's recipe".to_owned(),
                RootSource::Given(tree) => tree.display().to_string(),
            },
            b.memory_bytes >> 20,
            b.pids,
            b.cpu_seconds,
            b.tmp_bytes >> 20,
            self.cgroups
                .as_ref()
                .map(|c| format!(", {}", c.describe()))
                .unwrap_or_default()
        )
    }

    fn reach(&self) -> Reach {
        Reach::HandedIn
    }

    async fn spawn(&self, dial: Dial<'_>) -> Result<Box<dyn Launched>, WorkerError> {
        let prepared = self.ready().await?;
        Ok(Box::new(self.launch(&prepared, &dial)?))
    }

    fn memory_limit(&self) -> Option<String> {
        Some(format!(
            "{} MiB, CODEMCP_DOCKER_MEMORY",
            self.config.bounds.memory_bytes >> 20
        ))
    }
}

/// A running sandbox: bwrap and everything under it. Dropping it kills
/// bwrap, which takes its whole pid namespace along.
struct Jailed {
    child: Child,
    _cgroup: Option<limits::Cgroup>,
    _counted: codemcp_base::metrics::Held,
}

#[async_trait::async_trait]
impl Launched for Jailed {
    async fn exited(&mut self) -> Exit {
        super::spawn::exit_of(self.child.wait().await, true)
    }

    fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

/// The status of the sandbox placement, for `codemcp check` and `auto`.
pub use self::probe::{Missing, SandboxStatus, status};

/// Whether `rootfs` could serve: for `check` before it exists.
pub fn rootfs_present(rootfs: &Path) -> bool {
    rootfs.join("usr/bin/python3").exists()
}

/// The tree, its bytecode, and what depends on them.
async fn prepare_root(
    bwrap: &Path,
    source: &RootSource,
    bootstrap: &'static str,
) -> Result<Prepared, String> {
    let root = match source {
        RootSource::Recipe(sources) => root::made(bwrap, sources, bootstrap).await?,
        RootSource::Given(tree) => root::given(bwrap, tree).await,
    };
    // A tree made from the recipe was checked against its manifest; one the
    // operator names is tried once (a clear error rather than workers that
    // never dial in).
    if let RootSource::Given(_) = source {
        probe::rootfs_python(bwrap, &root.tree)
            .await
            .map_err(|e| e.to_string())?;
    }
    let baked = std::fs::read(root.tree.join(BAKED_BOOTSTRAP)).ok();
    let mut command = vec!["/usr/bin/python3".to_owned(), "-u".to_owned()];
    if baked.as_deref() == Some(bootstrap.as_bytes()) {
        command.push(format!("/{BAKED_BOOTSTRAP}"));
    } else {
        tracing::info!(target: "codemcp::worker", tree = %root.tree.display(), "the sandbox's worker code differs from this build's; passing it on the command line");
        command.extend(["-c".to_owned(), bootstrap.to_owned()]);
    }
    let is_root = nix::unistd::geteuid().is_root();
    let as_nobody = is_root
        && reachable_by_all(&root.tree)
        && root.pycache.as_deref().is_none_or(reachable_by_all);
    if is_root && !as_nobody {
        tracing::warn!(target: "codemcp::worker", tree = %root.tree.display(), "the sandbox's root file system is not reachable by uid 65534: sandboxes run under root's uid (with no capability)");
    }
    let etc = etc::Etc::new(&root.tree).map_err(|e| format!("the sandbox's /etc: {e}"))?;
    tracing::info!(target: "codemcp::worker", tree = %root.tree.display(), bytecode = root.pycache.is_some(), "the sandbox's root file system is ready");
    Ok(Prepared {
        root,
        command,
        as_nobody,
        etc,
    })
}
