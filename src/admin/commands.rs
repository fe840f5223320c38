//! `codemcp instances`, `list`, `enable`, `disable`, `reload`: what they
//! print. Results go to stdout; refusals come back as `Err` for `cli` to
//! print and exit non-zero.
#![allow(clippy::print_stdout)] // a command: its output is for the terminal, not the stdio transport

use std::process::ExitCode;

use super::client;
use super::protocol::{Change, Listing, Reply, Request};
use crate::upstream::Reconfigured;

/// Which running gateway a command is for.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Target {
    /// The gateway's pid or label (`serve --label`); needed only when several run
    #[arg(short = 'i', long = "instance", value_name = "PID|LABEL")]
    pub instance: Option<String>,
}

/// `enable` / `disable` options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Switch {
    #[command(flatten)]
    pub target: Target,
    /// Also write it into the config file (comments and formatting kept; FILE.codemcp-backup first)
    #[arg(long)]
    pub make_default: bool,
}

/// `codemcp instances`.
///
/// # Errors
/// When the runtime directory is not private to this user.
pub async fn instances() -> Result<ExitCode, String> {
    let found = client::discover().await.map_err(|e| e.to_string())?;
    if found.is_empty() {
        eprintln!("codemcp: no running gateways");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<8} {:<12} {:<22} {:<40} LAUNCHED BY",
        "PID", "LABEL", "TRANSPORT", "CONFIG"
    );
    for f in &found {
        match &f.info {
            Ok(info) => println!(
                "{:<8} {:<12} {:<22} {:<40} {}",
                info.pid,
                info.label.as_deref().unwrap_or("-"),
                info.transport,
                info.config.as_deref().unwrap_or("-"),
                info.launcher
            ),
            Err(e) => println!("{:<8} ({e})", f.pid),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends `request` to the gateway `target` picks and prints the answer.
///
/// # Errors
/// No such gateway, several, or the gateway refused (with its reason).
pub async fn send(target: &Target, request: Request) -> Result<ExitCode, String> {
    let found = client::pick(target.instance.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    let reply = client::request(&found, &request)
        .await
        .map_err(|e| e.to_string())?;
    match reply {
        Reply::List(listing) => print_listing(&listing),
        Reply::Changed(change) => print_change(found.pid, &request, &change),
        Reply::Info(info) => println!("{} {}", info.pid, info.transport),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_change(pid: u32, request: &Request, change: &Change) {
    match request {
        Request::Enable { name, .. } => println!("gateway {pid}: enabled '{name}'"),
        Request::Disable { name, .. } => println!("gateway {pid}: disabled '{name}'"),
        _ => println!("gateway {pid}: config reloaded"),
    }
    println!("{}", summary(&change.done));
    if let Some(saved) = &change.saved {
        println!("wrote {} (previous version: {})", saved.path, saved.backup);
    }
    print_listing(&change.listing);
}

fn summary(done: &Reconfigured) -> String {
    if done.is_empty() {
        return "no server changed".to_owned();
    }
    let parts: Vec<String> = [
        ("connected", &done.added),
        ("disconnected", &done.removed),
        ("reconnected", &done.reconnected),
        ("policy updated", &done.repoliced),
    ]
    .iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(what, names)| format!("{what}: {}", names.join(", ")))
    .collect();
    parts.join("; ")
}

fn print_listing(listing: &Listing) {
    println!("config: {}", listing.config.as_deref().unwrap_or("none"));
    if let Some(error) = &listing.config_error {
        println!("config error: {error}");
    }
    for server in &listing.servers {
        let tools = match server.state.as_str() {
            "connected" => format!("{:>4} tools", server.tools),
            _ => String::new(),
        };
        let note = server.note.as_deref().unwrap_or("");
        println!(
            "  {:<20} {:<10} {tools:<10} {note}",
            server.name, server.state
        );
    }
}
