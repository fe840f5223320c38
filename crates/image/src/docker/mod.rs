//! The CPython worker image, built by the binary itself with no registry:
//! `codemcp setup docker`, or the first Docker escalation that finds the
//! image missing. The recipe (`crate::recipe`) pins every input by SHA-256;
//! `crate::fetch` downloads into a cache; `crate::unpack` turns the .debs
//! into a root file system; `build.rs` has the engine build and try the
//! image; `on_demand.rs` builds it on first need; `setup.rs` is
//! `codemcp setup docker` and the image line of `codemcp check`.
//!
//! An image made by the former `scripts/build-worker-image.sh` carries the
//! same labels and is accepted the same way. The engine connection is the
//! caller's (codemcp-exec's `worker::docker::connect`).

mod build;
mod on_demand;
mod setup;

use std::collections::HashMap;

use bollard::Docker;
use bollard::errors::Error as DockerApiError;

use crate::{ImageError, Sources, cache_dir, fetch, recipe};

pub use build::{Built, build};
pub use on_demand::OnDemand;
pub use setup::{describe, setup_docker};

/// Labels every worker image carries (the former script's names).
pub const BOOTSTRAP_LABEL: &str = "codemcp.bootstrap.sha256";
pub const RECIPE_LABEL: &str = "codemcp.recipe.sha256";
pub const PYTHON_LABEL: &str = "codemcp.python";
pub const WEBSOCKETS_LABEL: &str = "codemcp.websockets";
pub const DEBS_LABEL: &str = "codemcp.debs";
/// The labels an image built now from this binary's recipe carries.
pub fn labels(recipe: &recipe::Recipe, bootstrap_sha256: &str) -> HashMap<String, String> {
    HashMap::from([
        (BOOTSTRAP_LABEL.to_owned(), bootstrap_sha256.to_owned()),
        (RECIPE_LABEL.to_owned(), recipe::recipe_sha256(recipe)),
        (PYTHON_LABEL.to_owned(), recipe::PYTHON_VERSION.to_owned()),
        (
            WEBSOCKETS_LABEL.to_owned(),
            format!("{}=={}", recipe.wheel.name, recipe.wheel.version),
        ),
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
    let items = recipe::downloads(recipe, sources, true);
    let cache = cache_dir();
    let cached = items.iter().filter(|i| fetch::is_cached(&cache, i)).count();
    (cached, items.len())
}

/// A build under way by any process on this machine, as its progress file
/// says: `(pid, what it is doing)`.
pub fn build_in_progress() -> Option<(u32, String)> {
    build::progress_elsewhere(&cache_dir())
}
