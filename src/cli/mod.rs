//! The `codemcp` command line: `Cli` and `Command`, and the dispatch of a
//! parsed command. One file per command or group: `serve.rs` (stdio and
//! HTTP), `exec.rs` (one snippet), `sdk.rs`, `check.rs`, `tokens.rs`
//! (principals), `setup.rs` (the worker image, the pool worker); the commands that act on a
//! running gateway are `crate::admin`'s.
#![allow(clippy::print_stdout)] // commands: their output is for the terminal, not the stdio transport

mod check;
mod exec;
mod sdk;
mod serve;
mod setup;
mod tokens;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use self::setup::SetupTarget;
pub use self::tokens::TokenAction;
use crate::admin::{self, protocol::Request};
use crate::config::settings::values::Rejected;
use crate::config::{self, ConfigError, Settings};
use crate::upstream::{Catalog, UpstreamLimits};

#[derive(Debug, Parser)]
#[command(
    name = "codemcp",
    version = codemcp_exec::monty::pool::worker_binary::version_line(),
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
    /// Prepare an optional part ahead of time (`setup docker`: build the worker
    /// image; `setup pool`: provision the Monty pool worker)
    Setup {
        #[command(subcommand)]
        what: SetupTarget,
    },
    /// Serve as a Monty worker of the pool on stdin/stdout (pool placement
    /// starts the binary itself this way; monty-pool fixes the word `subprocess`)
    #[command(name = "subprocess", alias = "monty-worker", hide = true)]
    MontyWorker,
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
        Command::Token { action } => tokens::tokens(action, settings.http.http_tokens.as_deref()),
        Command::Helpers { action } => helpers(action, settings).await,
        Command::Import { from, write } => crate::clients::import::run(path, *from, *write),
        Command::Install { client, undo } => crate::clients::install::run(path, *client, *undo),
        Command::Setup {
            what: SetupTarget::Docker { rebuild },
        } => setup::setup_docker(settings, *rebuild).await,
        Command::Setup {
            what: SetupTarget::Pool,
        } => setup::setup_pool(settings).await,
        Command::Setup {
            what: SetupTarget::Sandbox,
        } => setup::setup_sandbox(settings).await,
        _ => return None,
    })
}

/// `codemcp helpers …` on the store where an HTTP gateway with these
/// settings keeps its sessions and helpers.
async fn helpers(
    action: &crate::helpers::cli::HelpersAction,
    settings: &Settings,
) -> Result<ExitCode, String> {
    let (spec, key) =
        crate::assemble::store_spec_and_key(settings, crate::assemble::Transport::Http)
            .map_err(|e| e.to_string())?;
    crate::helpers::cli::run(action, settings, &spec, key).await
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
        state_dir: Some(codemcp_store::state_dir()),
        description_budget: settings.description_budget,
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
        None | Some(Command::Serve { .. }) => Catalog::prepare(&upstreams, limits),
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
            serve::stdio(&settings, catalog, admin).await?;
        }
        Command::Serve {
            http: Some(addr),
            label,
        } => {
            let admin = running(&catalog, format!("http {addr}"), label);
            serve::http(&settings, catalog, addr, admin).await?;
        }
        Command::Exec { code } => return exec::exec(&settings, catalog, code).await,
        Command::Sdk => sdk::sdk(&catalog, &settings),
        Command::Check => check::check(&catalog, &settings, &path).await,
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::config::Fallback;

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
