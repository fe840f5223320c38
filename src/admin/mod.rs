//! Changing a running gateway from the command line.
//!
//! Every serving `codemcp` process listens on its own Unix socket,
//! `<runtime dir>/<pid>.sock` (see [`dir`]), mode 0600, removed at exit. The
//! CLI (`codemcp instances`, `list`, `enable`, `disable`, `reload`) finds the
//! sockets, refuses one its user does not own, and sends one JSON request per
//! line ([`protocol`]); the gateway refuses a peer of another uid
//! (`SO_PEERCRED`) and answers through its [`Control`], which also reloads the
//! config file when it is saved ([`watch`]).

pub mod client;
pub mod commands;
mod control;
pub mod dir;
mod launcher;
pub mod protocol;
mod server;
pub mod signals;
mod watch;

pub use self::control::Control;
pub use self::server::{AdminSocket, listen};
pub use self::watch::{ConfigWatch, watch_config};

use std::path::{Path, PathBuf};

/// Why an admin request could not be made or served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    #[error("runtime directory {path}: {message}")]
    RuntimeDir { path: PathBuf, message: String },
    #[error("admin socket {path}: {source}")]
    Socket {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing admin socket {path}: it belongs to uid {owner}, not to you (uid {you}); \
         only the user who started a gateway may change it"
    )]
    Foreign { path: PathBuf, owner: u32, you: u32 },
    #[error("no running codemcp gateway of yours was found (looked in {0})")]
    NoGateway(PathBuf),
    #[error("{count} codemcp gateways are running; pick one with -i PID or -i LABEL:\n{list}")]
    Several { count: usize, list: String },
    #[error("no running gateway has pid or label '{wanted}'; running:\n{list}")]
    NotFound { wanted: String, list: String },
    #[error("gateway {pid}: {message}")]
    Protocol { pid: u32, message: String },
    #[error("{0}")]
    Refused(String),
    #[error("cannot watch the config file {path}: {message}")]
    Watch { path: PathBuf, message: String },
}

/// The admin side of one serving gateway: its [`Control`], socket and
/// config watch. Dropping it removes the socket.
pub struct Running {
    pub control: std::sync::Arc<Control>,
    socket: Option<AdminSocket>,
    _watch: Option<ConfigWatch>,
}

impl Running {
    /// Starts the socket and the config watch for a gateway serving
    /// `catalog`, read from `path` as `file`. Neither is needed to serve MCP,
    /// so a failure is logged and the gateway goes on without it.
    pub fn start(
        catalog: crate::upstream::Catalog,
        path: &crate::config::ConfigPath,
        file: crate::config::UpstreamConfig,
        wait: std::time::Duration,
        transport: String,
        label: Option<String>,
    ) -> Self {
        let path = absolute(path);
        let info = protocol::InstanceInfo {
            pid: std::process::id(),
            transport,
            config: path.path().map(|p| p.display().to_string()),
            launcher: launcher::parent_command(),
            label,
        };
        let control = std::sync::Arc::new(Control::new(catalog, path.clone(), file, wait, info));
        let socket = listen(control.clone())
            .inspect_err(|e| tracing::warn!(target: "codemcp::admin", error = %e, "no admin socket: codemcp list/enable/disable/reload cannot reach this gateway"))
            .ok();
        // No directory (the default path, never created): nothing to watch.
        let watchable = path.path().filter(|f| f.parent().is_some_and(Path::is_dir));
        let watch = watchable.and_then(|file| {
            watch_config(file, std::sync::Arc::downgrade(&control))
                .inspect_err(|e| tracing::warn!(target: "codemcp::admin", error = %e, "config changes need codemcp reload"))
                .ok()
        });
        Self {
            control,
            socket,
            _watch: watch,
        }
    }

    /// The socket file, for removal on a signal.
    pub fn socket_file(&self) -> Option<server::SocketFile> {
        self.socket.as_ref().map(|s| s.file().clone())
    }
}

/// `path` made absolute, so `instances` shows where it is and the watch
/// does not depend on the working directory.
fn absolute(path: &crate::config::ConfigPath) -> crate::config::ConfigPath {
    use crate::config::ConfigPath;
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    match path {
        ConfigPath::Explicit { path, from } => ConfigPath::Explicit {
            path: abs(path),
            from: *from,
        },
        ConfigPath::Default(path) => ConfigPath::Default(abs(path)),
        ConfigPath::Unavailable => ConfigPath::Unavailable,
    }
}
