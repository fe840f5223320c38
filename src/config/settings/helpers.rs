//! Settings of saved helpers (`save_helper`, see `crate::helpers`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::Decision;
use super::values::{Expected, Lenient, count, decision, path, size};

/// Functions agents save for their later sessions, and the operator's shared ones.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
#[command(next_help_heading = "Saved helpers")]
pub struct HelperSettings {
    /// Whether `save_helper` keeps a function: `allow`, `ask` (a human
    /// approves each save) or `deny`. Unset: `ask` when the client can be
    /// asked, else `allow`.
    #[arg(long = "helpers-save", env = "CODEMCP_HELPERS_SAVE")]
    #[arg(value_name = "POLICY", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(save_policy))]
    pub helpers_save: std::option::Option<Decision>,
    /// The most helpers one principal may keep.
    #[arg(long = "helpers-max-count", env = "CODEMCP_HELPERS_MAX_COUNT")]
    #[arg(value_name = "N", default_value = "100")]
    #[arg(global = true, value_parser = Lenient::new(count::<usize>))]
    pub helpers_max_count: usize,
    /// The largest source of one helper (its function, the functions it
    /// calls and its imports).
    #[arg(long = "helpers-max-bytes", env = "CODEMCP_HELPERS_MAX_BYTES")]
    #[arg(value_name = "SIZE", default_value = "64KiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub helpers_max_bytes: usize,
    /// The largest record of one principal's helpers (previous versions included).
    #[arg(
        long = "helpers-max-total-bytes",
        env = "CODEMCP_HELPERS_MAX_TOTAL_BYTES"
    )]
    #[arg(value_name = "SIZE", default_value = "1MiB")]
    #[arg(global = true, value_parser = Lenient::new(size))]
    pub helpers_max_total_bytes: usize,
    /// A principal's helpers neither used nor changed for this long are
    /// gone; 0 keeps them until deleted.
    #[arg(long = "helpers-idle-secs", env = "CODEMCP_HELPERS_IDLE_SECS")]
    #[arg(value_name = "SECS", default_value = "0")]
    #[arg(global = true, value_parser = Lenient::new(idle_secs))]
    pub helpers_idle: std::option::Option<Duration>,
    /// A directory of `.py` files, each defining the function its name
    /// names: helpers the operator publishes to every principal (read at
    /// start and on reload).
    #[arg(long = "helpers-dir", env = "CODEMCP_HELPERS_DIR")]
    #[arg(value_name = "DIR", default_value = "", hide_default_value = true)]
    #[arg(global = true, value_parser = Lenient::new(path))]
    pub helpers_dir: std::option::Option<PathBuf>,
}

/// `None` when unset: decided by whether the client can be asked.
fn save_policy(text: &str) -> Result<Option<Decision>, Expected> {
    if text.is_empty() || text.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    decision(text).map(Some)
}

/// `None` for 0: never.
fn idle_secs(text: &str) -> Result<Option<Duration>, Expected> {
    let secs: u64 = text
        .parse()
        .map_err(|_| Expected("a whole number of seconds (0: never)".to_owned()))?;
    Ok((secs > 0).then(|| Duration::from_secs(secs.min(100 * 365 * 24 * 3600))))
}
