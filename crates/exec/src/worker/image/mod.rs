//! The CPython worker image, built by the binary itself with no registry:
//! `codemcp setup docker`, or the first Docker escalation that finds the
//! image missing. The recipe (`recipe.rs`) pins every input by SHA-256;
//! `fetch.rs` downloads into a cache; `unpack.rs` turns the .debs into a root
//! file system; `build.rs` has the engine build and try the image.
//!
//! An image made by the former `scripts/build-worker-image.sh` carries the
//! same labels and is accepted the same way.

mod build;
mod fetch;
pub mod recipe;
pub mod setup;
mod unpack;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::errors::Error as DockerApiError;
use parking_lot::Mutex;

pub use build::build;
pub use fetch::FetchError;
pub use unpack::UnpackError;

/// Labels every worker image carries (the former script's names).
pub const BOOTSTRAP_LABEL: &str = "codemcp.bootstrap.sha256";
pub const RECIPE_LABEL: &str = "codemcp.recipe.sha256";
pub const PYTHON_LABEL: &str = "codemcp.python";
pub const WEBSOCKETS_LABEL: &str = "codemcp.websockets";
pub const DEBS_LABEL: &str = "codemcp.debs";
/// How long a run waits for an image build it started or found under way
/// before it is told to try again (the build goes on).
const BUILD_WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error(
        "the worker image recipe has no packages for this machine ({0}); build an image elsewhere and name it with CODEMCP_DOCKER_IMAGE"
    )]
    NoRecipe(&'static str),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    #[error("the Docker engine: {0}")]
    Engine(String),
    #[error("the image build failed: {0}")]
    Build(String),
    #[error("the built image failed its check: {0}")]
    Check(String),
}

/// Where the image's inputs come from (`CODEMCP_DEBIAN_MIRROR`, `CODEMCP_PYPI_FILES`).
#[derive(Debug, Clone)]
pub struct Sources {
    pub debian_mirror: String,
    pub pypi_files: String,
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            debian_mirror: recipe::DEBIAN_MIRROR.to_owned(),
            pypi_files: recipe::PYPI_FILES.to_owned(),
        }
    }
}

/// Where verified downloads are kept: `$XDG_CACHE_HOME/codemcp/worker-image`
/// (`~/.cache/...`), else under the state directory.
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .map(|d| d.join("codemcp"))
        .unwrap_or_else(|| crate::store::state_dir().join("cache"))
        .join("worker-image")
}

/// The labels an image built now from this binary's recipe carries.
pub fn labels(recipe: &recipe::Recipe, bootstrap_sha256: &str) -> HashMap<String, String> {
    HashMap::from([
        (BOOTSTRAP_LABEL.to_owned(), bootstrap_sha256.to_owned()),
        (RECIPE_LABEL.to_owned(), recipe::recipe_sha256(recipe)),
        (PYTHON_LABEL.to_owned(), recipe::PYTHON_VERSION.to_owned()),
        (WEBSOCKETS_LABEL.to_owned(), recipe::WEBSOCKETS.to_owned()),
        (DEBS_LABEL.to_owned(), recipe::deb_versions(recipe)),
    ])
}

/// What the engine holds under the image's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Missing,
    /// Present; its labels (empty when it has none).
    Present(HashMap<String, String>),
}

pub async fn inspect(docker: &Docker, image: &str) -> Result<Found, ImageError> {
    match docker.inspect_image(image).await {
        Ok(inspect) => Ok(Found::Present(
            inspect.config.and_then(|c| c.labels).unwrap_or_default(),
        )),
        Err(DockerApiError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(Found::Missing),
        Err(e) => Err(ImageError::Engine(format!("inspecting {image}: {e}"))),
    }
}

/// Whether an image with `labels` is what this binary would build now:
/// `None` when it is, else why not.
pub fn stale_because(labels: &HashMap<String, String>, bootstrap_sha256: &str) -> Option<String> {
    let Some(recipe) = recipe::for_this_machine() else {
        return Some("this machine has no recipe".into());
    };
    let mut why = Vec::new();
    if labels.get(BOOTSTRAP_LABEL).map(String::as_str) != Some(bootstrap_sha256) {
        why.push("its worker code differs from this build's");
    }
    if labels.get(RECIPE_LABEL) != Some(&recipe::recipe_sha256(recipe)) {
        why.push("it was built from another recipe");
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// How many of the recipe's downloads the cache holds, of how many.
pub fn cached_downloads(sources: &Sources) -> (usize, usize) {
    let Some(recipe) = recipe::for_this_machine() else {
        return (0, 0);
    };
    let items = build::pinned(recipe, sources);
    let cache = cache_dir();
    let cached = items.iter().filter(|i| fetch::is_cached(&cache, i)).count();
    (cached, items.len())
}

/// A build under way by any process on this machine, as its progress file
/// says: `(pid, what it is doing)`.
pub fn build_in_progress() -> Option<(u32, String)> {
    build::progress_elsewhere(&cache_dir())
}

/// The image a Docker spawner runs, built the first time it is needed when
/// it was missing. One build at a time; it runs on its own task, so a run
/// that stops waiting does not stop it.
pub struct OnDemand {
    docker: Docker,
    image: String,
    sources: Sources,
    bootstrap: &'static str,
    state: Mutex<State>,
}

enum State {
    Ready,
    Missing,
    Building {
        since: Instant,
        done: tokio::sync::watch::Receiver<Option<Result<(), String>>>,
    },
}

impl OnDemand {
    pub fn new(
        docker: Docker,
        image: String,
        present: bool,
        sources: Sources,
        bootstrap: &'static str,
    ) -> Arc<Self> {
        Arc::new(Self {
            docker,
            image,
            sources,
            bootstrap,
            state: Mutex::new(if present {
                State::Ready
            } else {
                State::Missing
            }),
        })
    }

    /// Ok once the image exists: at once when it did, else after building it
    /// (or finding the build under way), waiting at most `BUILD_WAIT`.
    pub async fn ready(self: &Arc<Self>) -> Result<(), String> {
        let (since, mut done) = {
            let mut state = self.state.lock();
            match &*state {
                State::Ready => return Ok(()),
                State::Building { since, done } => (*since, done.clone()),
                State::Missing => {
                    let (tx, rx) = tokio::sync::watch::channel(None);
                    let since = Instant::now();
                    *state = State::Building {
                        since,
                        done: rx.clone(),
                    };
                    let me = self.clone();
                    tokio::spawn(async move {
                        let result = me.build_now().await;
                        *me.state.lock() = match result {
                            Ok(()) => State::Ready,
                            Err(_) => State::Missing, // the next escalation tries again
                        };
                        let _ = tx.send(Some(result));
                    });
                    (since, rx)
                }
            }
        };
        let waited = tokio::time::timeout(BUILD_WAIT, done.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(result)) => result
                .clone()
                .unwrap_or_else(|| Err("the build stopped".into())),
            Ok(Err(_)) => Err("the image build stopped".into()),
            Err(_) => Err(format!(
                "the worker image {} is being built (the first Docker escalation on this engine: about a minute, started {} s ago; progress on the gateway's stderr and in `codemcp check`); run this again shortly",
                self.image,
                since.elapsed().as_secs()
            )),
        }
    }

    async fn build_now(&self) -> Result<(), String> {
        tracing::info!(target: "codemcp::worker", image = %self.image, "the worker image is missing: building it (about a minute; `codemcp setup docker` does this ahead of time)");
        match build(&self.docker, &self.image, &self.sources, self.bootstrap).await {
            Ok(built) => {
                tracing::info!(target: "codemcp::worker", image = %self.image, "{built}");
                Ok(())
            }
            Err(e) => {
                tracing::error!(target: "codemcp::worker", image = %self.image, error = %e, "could not build the worker image");
                Err(format!(
                    "the worker image {} is missing and building it failed: {e}; retry with `codemcp setup docker`",
                    self.image
                ))
            }
        }
    }
}
