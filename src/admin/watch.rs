//! Saving the config file reloads it, as `codemcp reload` would. The file's
//! directory is watched (not the file), so editors that save by writing a
//! new file and renaming it over the old one are seen too; bursts of events
//! are debounced into one reload.

use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::Duration;

use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::mpsc;

use super::{AdminError, Control};

/// Events closer together than this become one reload.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// Watching stops when this is dropped.
pub struct ConfigWatch {
    _debouncer: Debouncer<notify_debouncer_full::notify::RecommendedWatcher, RecommendedCache>,
}

/// Reloads `control` whenever `file` is written, created, renamed or removed.
/// A symlinked file is watched at both ends (a dotfiles checkout).
///
/// # Errors
/// [`AdminError::Watch`] when no directory could be watched.
pub fn watch_config(file: &Path, control: Weak<Control>) -> Result<ConfigWatch, AdminError> {
    let failed = |message: String| AdminError::Watch {
        path: file.to_owned(),
        message,
    };
    let mut targets = vec![file.to_owned()];
    if let Ok(real) = std::fs::canonicalize(file)
        && real != file
    {
        targets.push(real);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let wanted = targets.clone();
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        let touched = match result {
            Ok(events) => events.iter().any(|e| {
                e.paths
                    .iter()
                    .any(|p| wanted.iter().any(|t| same_file(p, t)))
            }),
            Err(errors) => {
                for e in errors {
                    tracing::warn!(target: "codemcp::admin", error = %e, "config watch error");
                }
                false
            }
        };
        if touched {
            let _ = tx.send(());
        }
    })
    .map_err(|e| failed(e.to_string()))?;
    let mut watched = 0;
    for dir in targets.iter().filter_map(|t| t.parent()) {
        match debouncer.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => watched += 1,
            Err(e) => {
                tracing::debug!(target: "codemcp::admin", dir = %dir.display(), error = %e, "cannot watch")
            }
        }
    }
    if watched == 0 {
        return Err(failed("its directory cannot be watched".into()));
    }
    tracing::info!(target: "codemcp::admin", path = %file.display(), "watching the config file");
    tokio::spawn(reload_on_save(rx, control, file.to_owned()));
    Ok(ConfigWatch {
        _debouncer: debouncer,
    })
}

fn same_file(event: &Path, target: &Path) -> bool {
    event == target
        || (event.file_name() == target.file_name() && event.parent() == target.parent())
}

async fn reload_on_save(
    mut saves: mpsc::UnboundedReceiver<()>,
    control: Weak<Control>,
    path: PathBuf,
) {
    while saves.recv().await.is_some() {
        // Saves that came in while a reload ran are one more reload.
        while saves.try_recv().is_ok() {}
        let Some(control) = control.upgrade() else {
            return;
        };
        tracing::info!(target: "codemcp::admin", path = %path.display(), "config file saved; reloading");
        // A refusal is logged by `reload` itself.
        let _ = control.reload().await;
    }
}
