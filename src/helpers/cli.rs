//! `codemcp helpers list|show|remove|export|import`: one principal's saved
//! helpers in the configured session store (the file store unless
//! `CODEMCP_SESSION_STORE` names another), and the operator's shared ones.
#![allow(clippy::print_stdout)] // a command: its answers go to stdout

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::Helpers;
use super::record::Library;
use crate::config::Settings;
use codemcp_store::Owner;

#[derive(Debug, Subcommand)]
pub enum HelpersAction {
    /// List the principal's helpers and the shared ones
    List {
        #[command(flatten)]
        whose: Whose,
    },
    /// Print one helper's source (and its previous version's)
    Show {
        name: String,
        #[command(flatten)]
        whose: Whose,
    },
    /// Delete one of the principal's helpers
    Remove {
        name: String,
        #[command(flatten)]
        whose: Whose,
    },
    /// Print the principal's helpers as JSON (for `import`)
    Export {
        #[command(flatten)]
        whose: Whose,
    },
    /// Add the helpers of a JSON file written by `export` (each one a new version)
    Import {
        file: std::path::PathBuf,
        #[command(flatten)]
        whose: Whose,
    },
}

/// Whose helpers: a principal of `CODEMCP_HTTP_TOKENS`, a bearer token, or
/// (neither) the local user's (stdio, or HTTP without a token).
#[derive(Debug, Clone, Args)]
pub struct Whose {
    /// A principal's name (`codemcp token list`)
    #[arg(long, value_name = "NAME", conflicts_with = "token")]
    principal: Option<String>,
    /// The bearer token its client presents (`CODEMCP_HTTP_TOKEN`'s callers)
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

impl Whose {
    fn owner(&self) -> Owner {
        match (&self.principal, &self.token) {
            (Some(name), _) => Owner::of_principal(name),
            (None, token) => Owner::of_token(token.as_deref()),
        }
    }
}

/// Runs one `codemcp helpers` command on the helpers in `spec` (the store
/// an HTTP gateway with these settings keeps them in).
///
/// # Errors
/// The store cannot be opened or read, or the helper is unknown.
pub async fn run(
    action: &HelpersAction,
    settings: &Settings,
    spec: &codemcp_store::StoreSpec,
    key: codemcp_store::SealKey,
) -> Result<ExitCode, String> {
    let helpers = Helpers::from_settings(settings, spec, key).map_err(|e| e.to_string())?;
    let store = helpers.store();
    match action {
        HelpersAction::List { whose } => {
            let library = store
                .load(&whose.owner())
                .await
                .map_err(|e| e.to_string())?;
            for (name, versions) in &library.helpers {
                let h = &versions.current;
                println!(
                    "{name:<24} v{:<3} {}  {}",
                    h.version,
                    h.signature,
                    h.summary()
                );
            }
            for (name, h) in helpers.shared().iter() {
                println!("{name:<24} shared {}  {}", h.signature, h.summary());
            }
        }
        HelpersAction::Show { name, whose } => {
            let library = store
                .load(&whose.owner())
                .await
                .map_err(|e| e.to_string())?;
            let shared = helpers.shared();
            match (library.helpers.get(name), shared.get(name)) {
                (Some(versions), _) => {
                    println!(
                        "# {name} v{}\n{}",
                        versions.current.version, versions.current.source
                    );
                    if let Some(previous) = &versions.previous {
                        println!("# previous: v{}\n{}", previous.version, previous.source);
                    }
                }
                (None, Some(h)) => println!("# {name} (shared)\n{}", h.source),
                (None, None) => return Err(format!("no helper named '{name}'")),
            }
        }
        HelpersAction::Remove { name, whose } => {
            let removed = store
                .update(&whose.owner(), |library| {
                    library.helpers.remove(name).ok_or(())
                })
                .await
                .map_err(|e| e.to_string())?;
            if removed.is_err() {
                return Err(format!("no helper named '{name}'"));
            }
            println!("removed {name}");
        }
        HelpersAction::Export { whose } => {
            let library = store
                .load(&whose.owner())
                .await
                .map_err(|e| e.to_string())?;
            let text = serde_json::to_string_pretty(&library).map_err(|e| e.to_string())?;
            println!("{text}");
        }
        HelpersAction::Import { file, whose } => {
            let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let imported =
                Library::from_bytes(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let count = imported.helpers.len();
            store
                .update(&whose.owner(), |library| {
                    for versions in imported.helpers.into_values() {
                        library.put(versions.current);
                    }
                    Ok::<(), ()>(())
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|()| "import failed".to_owned())?;
            println!("imported {count} helpers");
        }
    }
    Ok(ExitCode::SUCCESS)
}
