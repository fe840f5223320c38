//! The image a Docker spawner runs, built on its first need.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::Docker;
use parking_lot::Mutex;

use super::build;
use crate::Sources;

/// How long a run waits for an image build it started or found under way
/// before it is told to try again (the build goes on).
const BUILD_WAIT: Duration = Duration::from_secs(20);

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
