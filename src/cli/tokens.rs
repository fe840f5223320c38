//! `codemcp token`: the principals of a shared HTTP gateway (the
//! `CODEMCP_HTTP_TOKENS` file).

use std::path::Path;
use std::process::ExitCode;

use crate::authority::principals::{self, Principals};

#[derive(Debug, clap::Subcommand)]
pub enum TokenAction {
    /// Add principal NAME with a new random token; the token is printed once, only its hash is kept
    Add { name: String },
    /// Remove principal NAME (its token stops working within a second)
    Remove { name: String },
    /// List the principals
    List,
}

/// `codemcp token …`: edits the principals file (`CODEMCP_HTTP_TOKENS`, else
/// the default path next to the config file).
pub(super) fn tokens(action: &TokenAction, configured: Option<&Path>) -> Result<ExitCode, String> {
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
