//! Where runs go once the in-process engine retires (see `runaway.rs`): a
//! Monty worker pool, started on first need.

use super::{MontyEngine, pool};

/// Where runs go once the in-process engine retires (see `runaway.rs`): a
/// Monty worker pool, started on first need.
pub(super) struct Spare {
    binary: std::path::PathBuf,
    workers: usize,
    pool: tokio::sync::OnceCell<Option<pool::PoolEngine>>,
}

impl MontyEngine {
    /// Lets runs move to a Monty worker pool (the `monty` binary at `binary`)
    /// once this engine retires, instead of being refused.
    pub fn with_spare_pool(mut self, binary: std::path::PathBuf, workers: usize) -> Self {
        self.spare = Some(Spare {
            binary,
            workers,
            pool: tokio::sync::OnceCell::new(),
        });
        self
    }

    pub fn has_spare_pool(&self) -> bool {
        self.spare.is_some()
    }

    /// The spare pool, if a run has already started it.
    pub(super) fn started_spare(&self) -> Option<&pool::PoolEngine> {
        self.spare.as_ref()?.pool.get()?.as_ref()
    }

    pub(super) async fn spare_pool(&self) -> Option<&pool::PoolEngine> {
        let spare = self.spare.as_ref()?;
        let started = spare.pool.get_or_init(|| async {
            let started =
                pool::PoolEngine::start(self.limits.clone(), spare.binary.clone(), spare.workers).await;
            match started {
                Ok(pool) => {
                    tracing::warn!(target: "codemcp::exec", "in-process runs now go to Monty worker processes");
                    Some(pool)
                }
                Err(e) => {
                    tracing::error!(target: "codemcp::exec", error = %e, "the spare Monty worker pool did not start");
                    None
                }
            }
        });
        started.await.as_ref()
    }
}
