//! The codemcp binary over stdio, driven by a real MCP client (rmcp), and the
//! processes it leaves behind.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{DESCRIPTION_BUDGET, Ran, STARTUP_WAIT_MS, Setup, bin, dep, monty_bin, unpack};

/// A CPython with `websockets` for host workers (scripts/install-worker-python.sh).
pub fn worker_python() -> PathBuf {
    dep("CODEMCP_PYTHON", ".deps/worker-python/bin/python")
}

impl Setup {
    /// Starts `codemcp` over stdio with extra environment variables.
    pub async fn stdio(&self, env: &[(&str, &str)]) -> Client {
        let watcher = Watcher::default();
        let config = self.config();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let command = tokio::process::Command::new(bin()).configure(|c| {
            c.arg("--config")
                .arg(&config)
                .env("CODEMCP_MONTY_BIN", monty_bin())
                .env("CODEMCP_PYTHON", worker_python())
                // Monty-only verdicts unless a test asks for a fallback.
                .env("CODEMCP_FALLBACK", "none")
                .env("CODEMCP_STARTUP_WAIT_MS", STARTUP_WAIT_MS)
                .env("CODEMCP_DESCRIPTION_BUDGET", DESCRIPTION_BUDGET)
                // Remembered catalogs (and other state) per test, not in $HOME.
                .env("XDG_STATE_HOME", config.with_file_name("state"))
                .envs(env)
                .env("CODEMCP_LOG", "warn");
        });
        let transport = TokioChildProcess::new(command).expect("spawn codemcp");
        let pid = transport.id();
        let service = watcher
            .serve(transport)
            .await
            .expect("MCP handshake with codemcp");
        Client { service, pid }
    }
}

/// Our test client: records `notifications/tools/list_changed` and progress.
#[derive(Clone, Default)]
pub struct Watcher {
    pub changed: Arc<Notify>,
    pub progress: Arc<std::sync::Mutex<Vec<f64>>>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(params.progress);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemcp-tests", "0"),
        )
    }
}

/// A gateway over stdio: the MCP session and the gateway's pid.
pub struct Client {
    pub service: RunningService<RoleClient, Watcher>,
    pub pid: Option<u32>,
}

impl Client {
    pub async fn exec(&self, code: &str) -> Ran {
        self.exec_args(json!({"code": code})).await
    }

    pub async fn exec_args(&self, args: Value) -> Ran {
        let args = args.as_object().cloned().unwrap_or_default();
        let result = self
            .service
            .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
            .await
            .expect("tools/call execute_python");
        unpack(result)
    }
}

/// Whether `pid` is a live (not zombie) process.
pub fn process_alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status.lines().any(|l| {
            l.starts_with("State:") && (l.contains("Z (zombie)") || l.contains("X (dead)"))
        }),
        Err(_) => false,
    }
}
