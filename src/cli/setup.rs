//! `codemcp setup`: prepares an optional part ahead of time.

use std::process::ExitCode;

use crate::config::Settings;

/// How long the engine may take to answer `setup docker`.
const ENGINE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

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
    /// Provision the Monty pool worker `serve --http` runs, when this build
    /// is not its own worker and none is configured or installed: the pinned
    /// pydantic-monty-runtime wheel of this Monty, checked by SHA-256 and
    /// unpacked into the data directory (CODEMCP_PYPI_FILES: from where).
    Pool,
    /// Make the bubblewrap sandbox's CPython root file system (the worker
    /// image's pinned packages, unpacked and verified into the data
    /// directory) and check that a sandbox runs it. Linux only; needs
    /// bubblewrap (`apt-get install bubblewrap`).
    Sandbox,
}

/// `codemcp setup docker`: builds the worker image unless it is current.
pub(super) async fn setup_docker(settings: &Settings, rebuild: bool) -> Result<ExitCode, String> {
    let sources = codemcp_image::Sources {
        debian_mirror: settings.cpython.debian_mirror.clone(),
        pypi_files: settings.cpython.pypi_files.clone(),
    };
    let (docker, version) = codemcp_exec::worker::docker::connect(ENGINE_WAIT)
        .await
        .map_err(|e| e.to_string())?;
    let done = codemcp_image::docker::setup_docker(
        &docker,
        &version,
        &settings.cpython.docker_image,
        &sources,
        rebuild,
        codemcp_exec::worker::BOOTSTRAP,
    )
    .await?;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}

/// `codemcp setup pool`: makes sure pool placement has a worker (provisions
/// the pinned one unless another is configured, built in or installed),
/// runs `1 + 1` on it, and says which it is.
pub(super) async fn setup_pool(settings: &Settings) -> Result<ExitCode, String> {
    use codemcp_exec::monty::pool::worker_binary;
    let worker = worker_binary::choose(
        settings.monty.monty_bin.as_deref(),
        Some(&settings.cpython.pypi_files),
    )
    .await
    .map_err(|e| e.to_string())?;
    let version = worker_binary::probe(&worker.binary).await?;
    // The path last: scripts/install-monty-worker.sh takes what follows ": ".
    println!(
        "monty worker (Monty {version}), {}: {}",
        worker.source.describe(),
        worker.binary.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `codemcp setup sandbox`: makes (or verifies) the root file system and
/// tries one sandbox on it.
pub(super) async fn setup_sandbox(settings: &Settings) -> Result<ExitCode, String> {
    let done = crate::assemble::prepare_sandbox(&settings.cpython).await?;
    println!("{done}");
    Ok(ExitCode::SUCCESS)
}
