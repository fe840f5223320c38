//! `codemcp setup docker` and the image line of `codemcp check`.

use bollard::Docker;

use super::{Found, build, inspect, stale_because};
use crate::{Sources, cache_dir};

/// Builds `image` on the engine `docker` (`version` names it) unless it is
/// already what this binary would build (or `rebuild`); returns what was
/// done. Starting the engine is the operator's.
pub async fn setup_docker(
    docker: &Docker,
    version: &str,
    image: &str,
    sources: &Sources,
    rebuild: bool,
    bootstrap: &'static str,
) -> Result<String, String> {
    let bootstrap_sha = crate::sha256_hex(bootstrap.as_bytes());
    match inspect(docker, image).await.map_err(|e| e.to_string())? {
        Found::Present(labels) if !rebuild => match stale_because(&labels, &bootstrap_sha) {
            None => return Ok(format!("{image} is up to date ({version})")),
            Some(why) => {
                tracing::info!(target: "codemcp::worker", image, "rebuilding: {why}");
            }
        },
        Found::Present(_) => {}
        Found::Missing => {
            tracing::info!(target: "codemcp::worker", image, "building the worker image ({version})");
        }
    }
    let built = build(docker, image, sources, bootstrap)
        .await
        .map_err(|e| format!("building {image}: {e}"))?;
    Ok(built.to_string())
}

/// The `docker image:` line of `codemcp check` for an engine that answers:
/// `Ok` when the image is usable as it is.
pub fn describe(
    image: &str,
    found: &Found,
    bootstrap_sha: &str,
    sources: &Sources,
) -> Result<String, String> {
    match found {
        Found::Present(labels) => {
            let python = labels.get(super::PYTHON_LABEL).map_or_else(
                || "CPython version unknown (no codemcp.python label)".to_owned(),
                |v| format!("CPython {v}"),
            );
            Ok(match stale_because(labels, bootstrap_sha) {
                None => {
                    format!("{image} ({python}; current: this binary's recipe and worker code)")
                }
                Some(why) => format!(
                    "{image} ({python}; usable, but {why}; `codemcp setup docker` rebuilds it)"
                ),
            })
        }
        Found::Missing => {
            let (cached, total) = super::cached_downloads(sources);
            let under_way = match super::build_in_progress() {
                Some((pid, what)) => format!("; being built now by pid {pid}: {what}"),
                None => String::new(),
            };
            Err(format!(
                "{image} is missing{under_way}: the first Docker escalation builds it (about a minute; {cached} of {total} pinned downloads already in {}), or build it now with `codemcp setup docker`",
                cache_dir().display()
            ))
        }
    }
}
