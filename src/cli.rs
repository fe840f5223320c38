//! The `codemcp` command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::settings::OutputFormat;
use crate::config::{self, Fallback, Isolation, MontyPlacement, Settings};
use crate::exec::monty::pool::{PoolEngine, find_worker_binary};
use crate::exec::monty::{MontyEngine, MontyLimits};
use crate::exec::router::Router;
use crate::exec::worker::docker::{self, DockerConfig};
use crate::exec::worker::{CpythonOnly, WorkerEngine, WorkerError, WorkerLimits, find_python};
use crate::exec::{Engine, RunControl, RunRequest, SessionId, ToolHost};
use crate::server::{self, HttpAccess, Shared};
use crate::upstream::{Catalog, UpstreamLimits};

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
    let limits = UpstreamLimits {
        tool_timeout: settings.tool_timeout,
        max_message: settings.max_tool_result_bytes,
    };
    let catalog = Catalog::connect(&upstreams, limits).await;
    match cli.command.unwrap_or(Command::Serve { http: None }) {
        Command::Serve { http: None } => {
            let (engine, workers) = engine(&settings, MontyPlacement::InProcess).await?;
            let shared = Shared::new(
                catalog,
                engine,
                settings.description_budget,
                settings.output,
            );
            let served = server::serve_stdio(shared).await;
            shutdown(workers).await;
            served.map_err(|e| e.to_string())?;
        }
        Command::Serve { http: Some(addr) } => {
            let (engine, workers) = engine(&settings, MontyPlacement::Pool).await?;
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
            let served = server::serve_http(shared, addr, access, shutdown).await;
            self::shutdown(workers).await;
            served.map_err(|e| e.to_string())?;
        }
        Command::Exec { code } => {
            let (engine, workers) = engine(&settings, MontyPlacement::InProcess).await?;
            let code = exec_once(catalog, engine.as_ref(), code, settings.output).await;
            shutdown(workers).await;
            return Ok(code);
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

/// How long an explicitly chosen Docker engine may take to answer.
const DOCKER_WAIT: Duration = Duration::from_secs(10);
/// How long `CODEMCP_FALLBACK=auto` waits for one before going without.
const DOCKER_AUTO_WAIT: Duration = Duration::from_secs(2);

/// The engine `CODEMCP_ISOLATION` asks for: Monty (in the placement
/// `CODEMCP_MONTY` asks for, else `default`) with its fallback, or CPython
/// only; and the CPython workers, to stop at exit.
async fn engine(
    settings: &Settings,
    default: MontyPlacement,
) -> Result<(Box<dyn Engine>, Option<Arc<WorkerEngine>>), String> {
    let (engine, workers): (Box<dyn Engine>, _) = match settings.isolation {
        Isolation::Monty => {
            let monty = monty_engine(settings, default).await?;
            let (fallback, hint) = match settings.fallback {
                Fallback::Host => (Some(host_workers(settings).await?), String::new()),
                Fallback::Docker => {
                    let workers = docker_workers(settings, DOCKER_WAIT, true)
                        .await
                        .map_err(|e| format!("CODEMCP_FALLBACK=docker: {e}"))?;
                    (Some(workers), String::new())
                }
                Fallback::Auto => match docker_workers(settings, DOCKER_AUTO_WAIT, false).await {
                    Ok(workers) => (Some(workers), String::new()),
                    Err(e) => {
                        tracing::info!(target: "codemcp", reason = %e, "no CPython fallback (CODEMCP_FALLBACK=auto found no usable Docker)");
                        (None, format!("No CPython fallback is enabled: CODEMCP_FALLBACK=auto found no usable Docker: {e}. Or start codemcp with CODEMCP_FALLBACK=host (trusted agents only: no sandbox)."))
                    }
                },
                Fallback::None => (None, "The CPython fallback is disabled (CODEMCP_FALLBACK=none); CODEMCP_FALLBACK=docker (sandboxed) or CODEMCP_FALLBACK=host (trusted agents only: no sandbox) enables one.".to_owned()),
            };
            let workers = fallback.clone();
            let router: Box<dyn Engine> = Box::new(Router::new(monty, fallback, hint));
            (router, workers)
        }
        Isolation::HostSystem => {
            let workers = host_workers(settings).await?;
            (Box::new(CpythonOnly(workers.clone())), Some(workers))
        }
        Isolation::Docker => {
            let workers = docker_workers(settings, DOCKER_WAIT, true)
                .await
                .map_err(|e| format!("CODEMCP_ISOLATION=DOCKER: {e}"))?;
            (Box::new(CpythonOnly(workers.clone())), Some(workers))
        }
    };
    let cpython = workers
        .as_ref()
        .map_or_else(|| "none".to_owned(), |w| w.describe());
    tracing::info!(target: "codemcp", engine = %engine.describe(), %cpython, "engine ready");
    Ok((engine, workers))
}

/// Stops the CPython workers (their containers) before the gateway exits.
async fn shutdown(workers: Option<Arc<WorkerEngine>>) {
    if let Some(workers) = workers {
        workers.shutdown().await;
    }
}

fn worker_limits(settings: &Settings) -> WorkerLimits {
    WorkerLimits {
        exec_timeout: settings.exec_timeout,
        max_output_bytes: settings.max_output_bytes,
        max_result_bytes: settings.max_result_bytes,
        max_source_bytes: settings.max_source_bytes,
        max_tool_calls: settings.max_tool_calls,
        session_idle: settings.worker_idle,
        max_sessions: settings.max_sessions,
    }
}

async fn host_workers(settings: &Settings) -> Result<Arc<WorkerEngine>, String> {
    WorkerEngine::start_host(
        worker_limits(settings),
        find_python(settings.python.as_deref()),
    )
    .await
    .map_err(|e| e.to_string())
}

async fn docker_workers(
    settings: &Settings,
    within: Duration,
    prewarm: bool,
) -> Result<Arc<WorkerEngine>, WorkerError> {
    WorkerEngine::start_docker(
        worker_limits(settings),
        docker_config(settings),
        within,
        prewarm,
    )
    .await
}

fn docker_config(settings: &Settings) -> DockerConfig {
    DockerConfig {
        image: settings.docker_image.clone(),
        memory_bytes: settings.docker_memory as u64,
        pids: settings.docker_pids,
        nano_cpus: settings.docker_nano_cpus,
    }
}

/// The Monty engine in the placement `CODEMCP_MONTY` asks for, else `default`.
async fn monty_engine(
    settings: &Settings,
    default: MontyPlacement,
) -> Result<Box<dyn Engine>, String> {
    let engine: Box<dyn Engine> = match settings.monty_placement.unwrap_or(default) {
        MontyPlacement::InProcess => {
            let engine = MontyEngine::new(limits(settings));
            // Where runs go if runaway runs make the in-process engine retire.
            Box::new(match find_worker_binary(settings.monty_bin.as_deref()) {
                Ok(binary) => engine.with_spare_pool(binary, settings.monty_workers),
                Err(_) => engine,
            })
        }
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
    let status = docker::status(&settings.docker_image).await;
    match &status.engine {
        Ok(version) => println!("docker engine: {version} (answers)"),
        Err(e) => println!("docker engine: NOT usable: {e}"),
    }
    match &status.image {
        Some(Ok(image)) => println!("docker image: {image} (exists)"),
        Some(Err(e)) => println!("docker image: NOT usable: {e}"),
        None => println!(
            "docker image: {} (not checked: no engine)",
            settings.docker_image
        ),
    }
    let docker_usable = matches!(status.image, Some(Ok(_)));
    let fallback = match (settings.isolation, settings.fallback) {
        (Isolation::HostSystem, _) => {
            "every run in CPython on the host (CODEMCP_ISOLATION=HOST_SYSTEM; no sandbox)".to_owned()
        }
        (Isolation::Docker, _) => format!(
            "every run in CPython in a Docker container (CODEMCP_ISOLATION=DOCKER){}",
            if docker_usable { "" } else { ": NOT usable, see above" }
        ),
        (_, Fallback::Host) => {
            "escalates to CPython on the host (CODEMCP_FALLBACK=host; no sandbox)".to_owned()
        }
        (_, Fallback::Docker) => format!(
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=docker){}",
            if docker_usable { "" } else { ": NOT usable, see above" }
        ),
        (_, Fallback::Auto) if docker_usable => {
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=auto: engine and image found)".to_owned()
        }
        (_, Fallback::Auto) => {
            "none (CODEMCP_FALLBACK=auto found no usable Docker: see above)".to_owned()
        }
        (_, Fallback::None) => "none (CODEMCP_FALLBACK=none)".to_owned(),
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
