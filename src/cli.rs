//! The `codemcp` command line.
#![allow(clippy::print_stdout)] // a command: its output is for the terminal, not the stdio transport

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::admin::{self, protocol::Request};
use crate::assemble::{self, Transport};
use crate::config::settings::OutputFormat;
use crate::config::settings::values::Rejected;
use crate::config::{self, ConfigError, Fallback, Isolation, MontyPlacement, Settings};
use crate::exec::monty::pool::find_worker_binary;
use crate::exec::store::Owner;
use crate::exec::worker::docker;
use crate::exec::{Executor, RunControl, RunRequest, ToolHost};
use crate::policy::Decision;
use crate::principals::{self, Principals};
use crate::server::{
    self, Authority, CallContext, GatewayState, GuardedTools, HttpAccess, Identity,
};
use crate::upstream::{Catalog, UpstreamLimits};

#[derive(Debug, Parser)]
#[command(
    name = "codemcp",
    version = crate::exec::monty::pool::worker_binary::version_line(),
    about = "One MCP tool, execute_python, over all your MCP servers",
    after_help = "Logs go to stderr; CODEMCP_LOG sets what they show, as a tracing filter \
                  (default: info,rmcp=warn; e.g. CODEMCP_LOG=codemcp::audit=info,codemcp::timing=trace)."
)]
pub struct Cli {
    /// Upstream servers file (default: $CODEMCP_CONFIG, then ~/.config/codemcp/mcp.json)
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Limits and switches; each flag also reads the `CODEMCP_*` variable
    /// shown with it, and wins over it.
    #[command(flatten)]
    pub settings: Settings,
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
        /// A name for this gateway in `codemcp instances`, for `-i LABEL`
        #[arg(long, value_name = "NAME")]
        label: Option<String>,
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
    /// Manage the principals of a shared HTTP gateway (the CODEMCP_HTTP_TOKENS file)
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Show the MCP servers of your other clients that codemcp's config lacks; --write adds them
    Import {
        /// Only this client (default: every one found)
        #[arg(long, value_enum, value_name = "CLIENT")]
        from: Option<crate::clients::Client>,
        /// Add them to the config file (a backup first; comments are kept)
        #[arg(long)]
        write: bool,
    },
    /// Point CLIENT at codemcp instead of its own server list (a backup first)
    Install {
        #[arg(value_enum)]
        client: crate::clients::Client,
        /// Put back the file as it was before install
        #[arg(long)]
        undo: bool,
    },
    /// List this user's running gateways (pid, transport, config file, what started it)
    Instances,
    /// List the upstream servers of a running gateway
    List {
        #[command(flatten)]
        target: admin::commands::Target,
    },
    /// Connect a configured server in a running gateway
    Enable {
        /// The server's name in the config file
        name: String,
        #[command(flatten)]
        switch: admin::commands::Switch,
    },
    /// Disconnect a server in a running gateway
    Disable {
        /// The server's name in the config file
        name: String,
        #[command(flatten)]
        switch: admin::commands::Switch,
    },
    /// Make a running gateway read its config file again (saving the file does the same)
    Reload {
        #[command(flatten)]
        target: admin::commands::Target,
    },
    /// Log in to remote servers that use OAuth (login NAME, status, logout NAME)
    Auth {
        #[command(subcommand)]
        action: crate::upstream::oauth::AuthAction,
    },
    /// Saved helpers of a principal in the session store (list, show, remove, export, import)
    Helpers {
        #[command(subcommand)]
        action: crate::helpers::cli::HelpersAction,
    },
    /// Prepare an optional part ahead of time (`setup docker`: build the worker image)
    Setup {
        #[command(subcommand)]
        what: SetupTarget,
    },
    /// Serve as a Monty worker of the pool on stdin/stdout (pool placement
    /// starts the binary itself this way; monty-pool fixes the word `subprocess`)
    #[command(name = "subprocess", alias = "monty-worker", hide = true)]
    MontyWorker,
}

#[derive(Debug, clap::Subcommand)]
pub enum SetupTarget {
    /// Build the CPython worker image (CODEMCP_DOCKER_IMAGE) from the recipe
    /// this binary carries: pinned Debian packages and the websockets wheel,
    /// no registry. Needs a running Docker engine.
    Docker {
        /// Build even when the image is current
        #[arg(long)]
        rebuild: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum TokenAction {
    /// Add principal NAME with a new random token; the token is printed once, only its hash is kept
    Add { name: String },
    /// Remove principal NAME (its token stops working within a second)
    Remove { name: String },
    /// List the principals
    List,
}

/// Parses the command line, or exits with clap's message (or ours, for a
/// bad `CODEMCP_*` value).
pub fn parse() -> Result<Cli, ExitCode> {
    match Cli::try_parse() {
        Ok(cli) => Ok(cli),
        Err(err) => match bad_env(&err) {
            // Named as it was set: the variable, its value, what it should be.
            Some(bad) => {
                eprintln!("codemcp: {bad}");
                Err(ExitCode::from(2))
            }
            None => err.exit(),
        },
    }
}

impl Cli {
    /// Whether this command serves one stdio client: its requests, the
    /// upstream I/O and the hand-offs to interpreter threads then run on
    /// one runtime thread, which spares every message a wake-up of a
    /// second thread (a shared HTTP gateway keeps a thread per core).
    pub fn is_monty_worker(&self) -> bool {
        matches!(&self.command, Some(Command::MontyWorker))
    }

    pub fn serves_one_client(&self) -> bool {
        !matches!(&self.command, Some(Command::Serve { http: Some(_), .. }))
    }
}

/// Runs a parsed command line and maps failures to an exit code.
pub async fn main(cli: Cli) -> ExitCode {
    match run(cli).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("codemcp: {message}");
            ExitCode::from(2)
        }
    }
}

/// The setting behind `err` when the rejected value is its `CODEMCP_*`
/// variable's; `None` when the value came from the flag (clap's own message
/// names the flag then) or `err` is about something else.
fn bad_env(err: &clap::Error) -> Option<ConfigError> {
    let rejected = Rejected::from_clap(err)?;
    // The value itself tells: clap checks the variable even when the flag
    // comes after the subcommand, so "was the flag given" would not.
    let from_env = std::env::var_os(&rejected.var)
        .is_some_and(|value| value.to_string_lossy() == rejected.value.as_str());
    from_env.then(|| rejected.into())
}

/// The commands that need no upstream servers: done here, or `None`.
async fn without_upstreams(
    cli: &Cli,
    path: &config::ConfigPath,
) -> Option<Result<ExitCode, String>> {
    let settings = &cli.settings;
    let command = cli.command.as_ref()?;
    if let Some(done) = running_gateway(command).await {
        return Some(done);
    }
    Some(match command {
        Command::Token { action } => tokens(action, settings.http.http_tokens.as_deref()),
        Command::Helpers { action } => crate::helpers::cli::run(action, settings).await,
        Command::Import { from, write } => crate::clients::import::run(path, *from, *write),
        Command::Install { client, undo } => crate::clients::install::run(path, *client, *undo),
        Command::Setup {
            what: SetupTarget::Docker { rebuild },
        } => setup_docker(settings, *rebuild).await,
        _ => return None,
    })
}

/// How the catalog treats its upstream servers, from the settings.
fn upstream_limits(settings: &Settings) -> UpstreamLimits {
    UpstreamLimits {
        tool_timeout: settings.upstream.tool_timeout,
        max_message: settings.upstream.max_tool_result_bytes,
        policy_default: settings.authority.policy_default,
        startup_wait: settings.upstream.startup_wait,
        startup_concurrency: settings.upstream.startup_concurrency,
        lazy_idle: settings.upstream.lazy_idle,
        state_dir: Some(crate::exec::store::state_dir()),
    }
}

async fn run(cli: Cli) -> Result<ExitCode, String> {
    let path = config::resolve_path(cli.config.as_deref());
    if let Some(done) = without_upstreams(&cli, &path).await {
        return done;
    }
    let settings = cli.settings;
    let upstreams = config::load(&path).map_err(|e| e.to_string())?;
    if let Some(Command::Auth { action }) = &cli.command {
        return crate::upstream::oauth::run_command(action, &upstreams).await;
    }
    let limits = upstream_limits(&settings);
    // Serving answers `initialize` at once and lets upstreams join as they
    // come; one-shots need them all, so they wait (each up to its timeout).
    let catalog = match &cli.command {
        None | Some(Command::Serve { .. }) => Catalog::start(&upstreams, limits),
        Some(_) => Catalog::connect(&upstreams, limits).await,
    };
    let wait = settings.upstream.startup_wait;
    let running = |catalog: &Catalog, transport: String, label: Option<String>| {
        admin::Running::start(
            catalog.clone(),
            &path,
            upstreams.clone(),
            wait,
            transport,
            label,
        )
    };
    match cli.command.unwrap_or(Command::Serve {
        http: None,
        label: None,
    }) {
        Command::Serve { http: None, label } => {
            let admin = running(&catalog, "stdio".to_owned(), label);
            admin::signals::exit_on_signal(admin.socket_file());
            let executor = assemble::build(&settings, Transport::Stdio)
                .await
                .map_err(|e| e.to_string())?;
            let shared = GatewayState::new(
                catalog,
                executor,
                settings.description_budget,
                settings.output,
                Authority::from_settings(&settings).map_err(|e| e.to_string())?,
            );
            let served = server::serve_stdio(shared.clone()).await;
            shared.executor.shutdown().await;
            served.map_err(|e| e.to_string())?;
        }
        Command::Serve {
            http: Some(addr),
            label,
        } => {
            let _admin = running(&catalog, format!("http {addr}"), label);
            let executor = assemble::build(&settings, Transport::Http)
                .await
                .map_err(|e| e.to_string())?;
            let shared = GatewayState::new(
                catalog,
                executor,
                settings.description_budget,
                settings.output,
                Authority::from_settings(&settings).map_err(|e| e.to_string())?,
            );
            let access = HttpAccess {
                allowed_hosts: settings.http.allowed_hosts.clone(),
                allowed_origins: settings.http.allowed_origins.clone(),
                token: settings.http.http_token.clone(),
                principals: load_principals(&settings, &shared.catalog)?,
                healthz_open: settings.http.healthz_open,
                limits: server::HttpLimits::from_settings(&settings),
            };
            let shutdown = CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                admin::signals::terminated().await;
                stop.cancel();
            });
            let served = server::serve_http(shared.clone(), addr, access, shutdown).await;
            shared.executor.shutdown().await;
            served.map_err(|e| e.to_string())?;
        }
        Command::Exec { code } => {
            let executor = assemble::build(&settings, Transport::Stdio)
                .await
                .map_err(|e| e.to_string())?;
            let code = exec_once(
                catalog,
                &executor,
                Authority::from_settings(&settings).map_err(|e| e.to_string())?,
                code,
                settings.output,
            )
            .await;
            executor.shutdown().await;
            return Ok(code);
        }
        Command::Sdk => {
            let sdk = catalog.sdk();
            println!("{}", sdk.description(settings.description_budget));
            println!("\n# ---- {} ----\n", server::SDK_URI);
            println!("{}", sdk.stub());
        }
        Command::Check => check(&catalog, &settings, &path).await,
        Command::Token { .. }
        | Command::Import { .. }
        | Command::Install { .. }
        | Command::Instances
        | Command::List { .. }
        | Command::Enable { .. }
        | Command::Disable { .. }
        | Command::Reload { .. }
        | Command::Setup { .. }
        | Command::Auth { .. }
        | Command::Helpers { .. }
        | Command::MontyWorker => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands that act on a running gateway; `None` for the others.
async fn running_gateway(command: &Command) -> Option<Result<ExitCode, String>> {
    use admin::commands::send;
    Some(match command {
        Command::Instances => admin::commands::instances().await,
        Command::List { target } => send(target, Request::List).await,
        Command::Enable { name, switch } => {
            let (name, make_default) = (name.clone(), switch.make_default);
            send(&switch.target, Request::Enable { name, make_default }).await
        }
        Command::Disable { name, switch } => {
            let (name, make_default) = (name.clone(), switch.make_default);
            send(&switch.target, Request::Disable { name, make_default }).await
        }
        Command::Reload { target } => send(target, Request::Reload).await,
        _ => return None,
    })
}

async fn exec_once(
    catalog: Catalog,
    executor: &Executor,
    authority: Authority,
    code: String,
    output: OutputFormat,
) -> ExitCode {
    // The same policy as for an agent; nobody can be asked, so `ask` is denied.
    let identity = Identity {
        owner: Owner::anonymous(),
        label: "cli".to_owned(),
        principal: None,
    };
    let context = CallContext::new(identity, None, server::Asker::Nobody, Default::default());
    let host: Arc<dyn ToolHost> =
        Arc::new(GuardedTools::new(catalog, Arc::new(authority), context));
    let request = RunRequest {
        code,
        timeout: None,
        session: None,
    };
    let execution = executor
        .run(Owner::anonymous(), request, host, RunControl::default())
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
            None if status.connecting => println!("  {:<20} still connecting", status.name),
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
    print_policies(catalog, settings);
    let placement = match settings.monty.monty_placement {
        Some(MontyPlacement::InProcess) => "in-process (CODEMCP_MONTY=inprocess)",
        Some(MontyPlacement::Pool) => "worker pool (CODEMCP_MONTY=pool)",
        None => "in-process for stdio, worker pool for serve --http (CODEMCP_MONTY unset)",
    };
    println!(
        "engine: monty, {placement}; memory {} MiB, run limit {} ms",
        settings.monty.monty_mem_limit >> 20,
        settings.limits.exec_timeout.as_millis()
    );
    print_monty_worker(settings).await;
    let sources = crate::exec::worker::image::Sources {
        debian_mirror: settings.cpython.debian_mirror.clone(),
        pypi_files: settings.cpython.pypi_files.clone(),
    };
    let status = docker::status(&settings.cpython.docker_image, &sources).await;
    match &status.engine {
        Ok(version) => println!("docker engine: {version} (answers)"),
        Err(e) => println!("docker engine: NOT usable: {e}"),
    }
    match &status.image {
        Some(Ok(image)) => println!("docker image: {image}"),
        Some(Err(missing)) if status.image_missing => println!("docker image: {missing}"),
        Some(Err(e)) => println!("docker image: NOT usable: {e}"),
        None => println!(
            "docker image: {} (not checked: no engine)",
            settings.cpython.docker_image
        ),
    }
    print_python_versions(settings).await;
    // A missing image is built on the first escalation.
    let docker_usable = matches!(status.image, Some(Ok(_))) || status.image_missing;
    let fallback = match (settings.cpython.isolation, settings.cpython.fallback) {
        (Isolation::HostSystem, _) => {
            "every run in CPython on the host (CODEMCP_ISOLATION=HOST_SYSTEM; no sandbox)"
                .to_owned()
        }
        (Isolation::Docker, _) => format!(
            "every run in CPython in a Docker container (CODEMCP_ISOLATION=DOCKER){}",
            if docker_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (_, Fallback::Host) => {
            "escalates to CPython on the host (CODEMCP_FALLBACK=host; no sandbox)".to_owned()
        }
        (_, Fallback::Docker) => format!(
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=docker){}",
            if docker_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (_, Fallback::Auto) if docker_usable => {
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=auto: the engine answers)"
                .to_owned()
        }
        (_, Fallback::Auto) => {
            "none (CODEMCP_FALLBACK=auto found no usable Docker: see above)".to_owned()
        }
        (_, Fallback::None) => "none (CODEMCP_FALLBACK=none)".to_owned(),
    };
    println!("cpython fallback: {fallback}");
}

/// `codemcp setup docker`: builds the worker image unless it is current.
async fn setup_docker(settings: &Settings, rebuild: bool) -> Result<ExitCode, String> {
    let sources = crate::exec::worker::image::Sources {
        debian_mirror: settings.cpython.debian_mirror.clone(),
        pypi_files: settings.cpython.pypi_files.clone(),
    };
    let done = crate::exec::worker::image::setup::setup_docker(
        &settings.cpython.docker_image,
        &sources,
        rebuild,
        crate::exec::worker::BOOTSTRAP,
    )
    .await?;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}

/// Monty's CPython target beside the host workers' actual CPython (the
/// image's is on the `docker image` line), so a mismatch is seen.
async fn print_python_versions(settings: &Settings) {
    let target = crate::exec::worker::MONTY_CPYTHON;
    println!("python: Monty follows CPython {target}");
    let python = crate::exec::worker::find_python(settings.cpython.python.as_deref());
    match crate::exec::worker::host_python_version(&python).await {
        Ok(version) => {
            let same = version == target || version.starts_with(&format!("{target}."));
            println!(
                "host worker python: {} (CPython {version}{})",
                python.display(),
                if same {
                    ""
                } else {
                    "; differs from Monty's: answers may change when a run escalates"
                }
            );
        }
        Err(e) => println!("host worker python: NOT usable: {e}"),
    }
}

/// Every tool's effective policy, grouped by decision, per server.
fn print_policies(catalog: &Catalog, settings: &Settings) {
    println!(
        "policy (default for unannotated tools: {}, CODEMCP_POLICY_DEFAULT):",
        settings.authority.policy_default
    );
    for (server, tools) in catalog.policies() {
        for decision in [Decision::Allow, Decision::Ask, Decision::Deny] {
            let names: Vec<&str> = tools
                .iter()
                .filter(|(_, d)| *d == decision)
                .map(|(name, _)| name.as_str())
                .collect();
            if !names.is_empty() {
                println!("  {server:<20} {decision:<5}  {}", names.join(", "));
            }
        }
    }
    match &settings.authority.audit_log {
        Some(path) => println!("audit log: {}", path.display()),
        None => println!("audit log: the codemcp::audit log target only (CODEMCP_AUDIT_LOG unset)"),
    }
}

/// Runs the worker binary once, bounded, to see that it works.
/// Which worker pool placement starts, and whether it runs.
async fn print_monty_worker(settings: &Settings) {
    use crate::exec::monty::pool::worker_binary;
    let configured = settings.monty.monty_bin.as_deref();
    let binary = match find_worker_binary(configured) {
        Ok(binary) => binary,
        Err(e) => return println!("monty worker: NOT found: {e}"),
    };
    let which = match configured {
        Some(path) => format!("{} (CODEMCP_MONTY_BIN)", path.display()),
        None if worker_binary::SELF_WORKER => {
            "codemcp itself (`codemcp subprocess`; CODEMCP_MONTY_BIN unset)".to_owned()
        }
        None => format!(
            "{} (found; this build is not its own worker)",
            binary.display()
        ),
    };
    match worker_binary::probe(&binary).await {
        Ok(version) => println!("monty worker: {which}, Monty {version} (usable)"),
        Err(e) => println!("monty worker: {which} (NOT usable: {e})"),
    }
}

/// `codemcp token …`: edits the principals file (`CODEMCP_HTTP_TOKENS`, else
/// the default path next to the config file).
fn tokens(action: &TokenAction, configured: Option<&Path>) -> Result<ExitCode, String> {
    let path = configured
        .map(Path::to_path_buf)
        .or_else(principals::default_path)
        .ok_or("set CODEMCP_HTTP_TOKENS to the principals file's path")?;
    match action {
        TokenAction::Add { name } => {
            let token = principals::add_token(&path, name).map_err(|e| e.to_string())?;
            println!("{token}");
            eprintln!(
                "codemcp: added principal '{name}' to {}; the token above is shown only this once. \
                 Serve with CODEMCP_HTTP_TOKENS={} and have the client send 'Authorization: Bearer <token>'.",
                path.display(),
                path.display()
            );
        }
        TokenAction::Remove { name } => {
            principals::remove_token(&path, name).map_err(|e| e.to_string())?;
            eprintln!(
                "codemcp: removed principal '{name}' from {}",
                path.display()
            );
        }
        TokenAction::List => {
            let loaded = Principals::load(&path).map_err(|e| e.to_string())?;
            for name in loaded.names() {
                println!("{name}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The principals file of `serve --http`, if one is set; a policy override
/// naming a server the gateway does not have is worth a warning (a typo).
fn load_principals(
    settings: &Settings,
    catalog: &Catalog,
) -> Result<Option<Arc<Principals>>, String> {
    let Some(path) = settings.http.http_tokens.as_deref() else {
        return Ok(None);
    };
    let loaded = Principals::load(path).map_err(|e| e.to_string())?;
    let servers: Vec<String> = catalog.statuses().into_iter().map(|s| s.name).collect();
    for name in loaded.names() {
        for server in loaded.unknown_servers(&name, &servers) {
            tracing::warn!(target: "codemcp::config", principal = %name, %server, "a principal's policy names a server the gateway does not have");
        }
    }
    tracing::info!(target: "codemcp::server", path = %path.display(), principals = loaded.names().len(), "principals loaded");
    Ok(Some(Arc::new(loaded)))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;

    /// Parses `args` with the environment ignored.
    fn parse(args: &[&str]) -> Cli {
        let matches = Cli::command()
            .mut_args(|arg| arg.env(None))
            .try_get_matches_from(args)
            .unwrap_or_else(|err| panic!("{args:?}: {err}"));
        Cli::from_arg_matches(&matches).expect("matches fit Cli")
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn settings_flags_go_before_or_after_the_subcommand() {
        let cli = parse(&[
            "codemcp",
            "--max-tool-calls=7",
            "exec",
            "--max-sessions",
            "3",
            "print(1)",
        ]);
        assert_eq!(cli.settings.limits.max_tool_calls, 7);
        assert_eq!(cli.settings.sessions.max_sessions, 3);
        assert!(matches!(cli.command, Some(Command::Exec { code }) if code == "print(1)"));
        let cli = parse(&["codemcp", "serve", "--fallback", "HOST"]);
        assert_eq!(cli.settings.cpython.fallback, Fallback::Host);
        assert_eq!(parse(&["codemcp"]).settings, Settings::default());
    }
}
