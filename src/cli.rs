//! The `codemcp` command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::settings::OutputFormat;
use crate::config::{self, Fallback, Isolation, MontyPlacement, Settings};
use crate::exec::monty::pool::{PoolEngine, find_worker_binary};
use crate::exec::monty::{MontyEngine, MontyLimits};
use crate::exec::router::Router;
use crate::exec::worker::{HostWorkers, WorkerEngine, WorkerLimits, find_python};
use crate::exec::{Engine, RunControl, RunRequest, SessionId, ToolHost};
use crate::server::{self, HttpAccess, Shared};
use crate::upstream::Catalog;

#[derive(Debug, Parser)]
#[command(
    name = "codemcp",
    version,
    about = "One MCP tool, execute_python, over all your MCP servers"
)]
pub struct Cli {
    /// Upstream servers file (default: $CODEMCP_CONFIG, then ~/.config/codemcp/mcp.json)
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP (stdio unless --http is given)
    Serve {
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:3388
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
    /// Run one snippet against the configured upstreams and print what it returns
    Exec {
        /// Python code
        code: String,
    },
    /// Print the execute_python description and the SDK type stub
    Sdk,
    /// Report each upstream (connected, tools, handshake time) and the engines
    Check,
}

/// Parses the command line, runs it, and maps failures to an exit code.
pub async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("codemcp: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, String> {
    let settings = Settings::from_env().map_err(|e| e.to_string())?;
    let path = config::resolve_path(cli.config.as_deref());
    let upstreams = config::load(&path).map_err(|e| e.to_string())?;
    let catalog = Catalog::connect(&upstreams, settings.tool_timeout).await;
    match cli.command.unwrap_or(Command::Serve { http: None }) {
        Command::Serve { http: None } => {
            let engine = engine(&settings, MontyPlacement::InProcess).await?;
            let shared = Shared::new(
                catalog,
                engine,
                settings.description_budget,
                settings.output,
            );
            server::serve_stdio(shared)
                .await
                .map_err(|e| e.to_string())?;
        }
        Command::Serve { http: Some(addr) } => {
            let engine = engine(&settings, MontyPlacement::Pool).await?;
            let shared = Shared::new(
                catalog,
                engine,
                settings.description_budget,
                settings.output,
            );
            let access = HttpAccess {
                allowed_hosts: settings.allowed_hosts.clone(),
                allowed_origins: settings.allowed_origins.clone(),
                token: settings.http_token.clone(),
            };
            let shutdown = CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            server::serve_http(shared, addr, access, shutdown)
                .await
                .map_err(|e| e.to_string())?;
        }
        Command::Exec { code } => {
            let engine = engine(&settings, MontyPlacement::InProcess).await?;
            return Ok(exec_once(catalog, engine.as_ref(), code, settings.output).await);
        }
        Command::Sdk => {
            let sdk = catalog.sdk();
            println!("{}", sdk.description(settings.description_budget));
            println!("\n# ---- {} ----\n", server::SDK_URI);
            println!("{}", sdk.stub());
        }
        Command::Check => check(&catalog, &settings, &path).await,
    }
    Ok(ExitCode::SUCCESS)
}

fn limits(settings: &Settings) -> MontyLimits {
    MontyLimits {
        exec_timeout: settings.exec_timeout,
        max_output_bytes: settings.max_output_bytes,
        max_result_bytes: settings.max_result_bytes,
        max_source_bytes: settings.max_source_bytes,
        max_tool_calls: settings.max_tool_calls,
        max_recursion_depth: settings.max_recursion_depth,
        max_sleep_total: settings.max_sleep_total,
        memory_limit: settings.monty_mem_limit,
        session_idle: settings.session_idle,
        max_sessions: settings.max_sessions,
    }
}

/// The engine `CODEMCP_ISOLATION` asks for: Monty (in the placement
/// `CODEMCP_MONTY` asks for, else `default`) with its fallback, or CPython only.
async fn engine(settings: &Settings, default: MontyPlacement) -> Result<Box<dyn Engine>, String> {
    let engine: Box<dyn Engine> = match settings.isolation {
        Isolation::Monty => {
            let monty = monty_engine(settings, default).await?;
            let (fallback, hint) = match settings.fallback {
                Fallback::Host => (Some(host_workers(settings).await?), String::new()),
                Fallback::Docker => return Err("CODEMCP_FALLBACK=docker: the Docker worker is not available in this build yet; use CODEMCP_FALLBACK=host (trusted agents only) or none".into()),
                Fallback::Auto => (None, "No CPython fallback is enabled: to run such code in full CPython, start codemcp with CODEMCP_FALLBACK=host (trusted agents only: no sandbox).".to_owned()),
                Fallback::None => (None, "The CPython fallback is disabled (CODEMCP_FALLBACK=none).".to_owned()),
            };
            Box::new(Router::new(monty, fallback, hint))
        }
        Isolation::HostSystem => Box::new(HostWorkers(host_workers(settings).await?)),
        Isolation::Docker => return Err("CODEMCP_ISOLATION=DOCKER: the Docker worker is not available in this build yet; use MONTY (default) or HOST_SYSTEM (trusted agents only)".into()),
    };
    tracing::info!(target: "codemcp", engine = %engine.describe(), "engine ready");
    Ok(engine)
}

async fn host_workers(settings: &Settings) -> Result<std::sync::Arc<WorkerEngine>, String> {
    let limits = WorkerLimits {
        exec_timeout: settings.exec_timeout,
        max_output_bytes: settings.max_output_bytes,
        max_result_bytes: settings.max_result_bytes,
        max_source_bytes: settings.max_source_bytes,
        max_tool_calls: settings.max_tool_calls,
        session_idle: settings.session_idle,
        max_sessions: settings.max_sessions,
    };
    WorkerEngine::start_host(limits, find_python(settings.python.as_deref()))
        .await
        .map_err(|e| e.to_string())
}

/// The Monty engine in the placement `CODEMCP_MONTY` asks for, else `default`.
async fn monty_engine(
    settings: &Settings,
    default: MontyPlacement,
) -> Result<Box<dyn Engine>, String> {
    let engine: Box<dyn Engine> = match settings.monty_placement.unwrap_or(default) {
        MontyPlacement::InProcess => Box::new(MontyEngine::new(limits(settings))),
        MontyPlacement::Pool => {
            let binary =
                find_worker_binary(settings.monty_bin.as_deref()).map_err(|e| e.to_string())?;
            let pool = PoolEngine::start(limits(settings), binary, settings.monty_workers)
                .await
                .map_err(|e| e.to_string())?;
            Box::new(pool)
        }
    };
    Ok(engine)
}

async fn exec_once(
    catalog: Catalog,
    engine: &dyn Engine,
    code: String,
    output: OutputFormat,
) -> ExitCode {
    let host: Arc<dyn ToolHost> = Arc::new(catalog);
    let execution = engine
        .run(
            SessionId::next(),
            RunRequest {
                code,
                timeout: None,
            },
            host,
            RunControl::default(),
        )
        .await;
    print!("{}", server::render(&execution, output));
    if execution.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

async fn check(catalog: &Catalog, settings: &Settings, path: &config::ConfigPath) {
    match path.path() {
        Some(p) => println!(
            "config: {}{}",
            p.display(),
            if p.exists() {
                ""
            } else {
                " (not found: no upstreams)"
            }
        ),
        None => println!("config: none (HOME is not set)"),
    }
    for status in catalog.statuses() {
        let handshake = status
            .handshake_ms
            .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
        match &status.error {
            None => println!(
                "  {:<20} connected  {:>4} tools  handshake {handshake}",
                status.name, status.tools
            ),
            Some(e) => println!("  {:<20} FAILED     {e}", status.name),
        }
    }
    for skipped in catalog.skipped() {
        println!("  {:<20} skipped    {}", skipped.name, skipped.reason);
    }
    let placement = match settings.monty_placement {
        Some(MontyPlacement::InProcess) => "in-process (CODEMCP_MONTY=inprocess)",
        Some(MontyPlacement::Pool) => "worker pool (CODEMCP_MONTY=pool)",
        None => "in-process for stdio, worker pool for serve --http (CODEMCP_MONTY unset)",
    };
    println!(
        "engine: monty, {placement}; memory {} MiB, run limit {} ms",
        settings.monty_mem_limit >> 20,
        settings.exec_timeout.as_millis()
    );
    match find_worker_binary(settings.monty_bin.as_deref()) {
        Ok(binary) => match worker_binary_runs(&binary).await {
            Ok(()) => println!("monty worker binary: {} (usable)", binary.display()),
            Err(e) => println!(
                "monty worker binary: {} (NOT usable: {e})",
                binary.display()
            ),
        },
        Err(e) => println!("monty worker binary: not found; pool mode needs it: {e}"),
    }
    let fallback = match (settings.isolation, settings.fallback) {
        (Isolation::HostSystem, _) => {
            "every run in CPython on the host (CODEMCP_ISOLATION=HOST_SYSTEM; no sandbox)"
        }
        (Isolation::Docker, _) => "CODEMCP_ISOLATION=DOCKER is not available in this build",
        (_, Fallback::Host) => {
            "escalates to CPython on the host (CODEMCP_FALLBACK=host; no sandbox)"
        }
        (_, Fallback::Docker) => "CODEMCP_FALLBACK=docker is not available in this build",
        (_, Fallback::Auto | Fallback::None) => {
            "none (set CODEMCP_FALLBACK=host to enable CPython on the host)"
        }
    };
    println!("cpython fallback: {fallback}");
}

/// Runs the worker binary once, bounded, to see that it works.
async fn worker_binary_runs(binary: &std::path::Path) -> Result<(), String> {
    let run = tokio::process::Command::new(binary)
        .args(["-c", "1 + 1"])
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(10), run).await {
        Ok(Ok(output)) if output.status.success() => Ok(()),
        Ok(Ok(output)) => Err(format!("exited with {}", output.status)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("did not finish within 10 s".into()),
    }
}
