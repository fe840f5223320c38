//! A run waits for its session's previous run to finish. Cancelled while it
//! waits (the client left, the HTTP session ended), it gives up at once on
//! every engine, and the run it waited for finishes untouched. The CPython
//! engine used to start the cancelled run once its turn came, only to stop it
//! there.

use std::sync::Arc;
use std::time::Duration;

use codemcp_exec::monty::pool::{PoolEngine, find_worker_binary};
use codemcp_exec::monty::{MontyEngine, MontyLimits};
use codemcp_exec::worker::{WorkerEngine, WorkerLimits, find_python};
use codemcp_exec::{Engine, ErrorKind, Execution, Run, RunControl, SessionId};
use tokio_util::sync::CancellationToken;

use crate::support;

/// How long the first run holds the session: long enough that the second
/// run's answer coming first can only mean it gave up while queued.
const HOLD: &str = "import time\ntime.sleep(6)\n'first'";

fn monty_limits() -> MontyLimits {
    MontyLimits {
        exec_timeout: Duration::from_secs(60),
        max_output_bytes: 1 << 20,
        max_result_bytes: 1 << 20,
        max_tool_calls: 10,
        max_recursion_depth: 200,
        max_sleep_total: Duration::from_secs(30),
        memory_limit: 256 << 20,
        session_idle: Duration::from_secs(60),
        max_sessions: 8,
    }
}

fn worker_limits() -> WorkerLimits {
    WorkerLimits {
        exec_timeout: Duration::from_secs(60),
        max_output_bytes: 1 << 20,
        max_result_bytes: 1 << 20,
        max_tool_calls: 10,
        session_idle: Duration::from_secs(60),
        max_sessions: 8,
        max_state_bytes: 16 << 20,
    }
}

fn run_on(
    engine: &Arc<dyn Engine>,
    session: SessionId,
    code: &str,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<Execution> {
    let (engine, code) = (engine.clone(), code.to_owned());
    tokio::spawn(async move {
        let control = RunControl {
            cancel,
            ..RunControl::default()
        };
        let run = Run::new(code, Duration::from_secs(60));
        engine.run(session, run, support::no_tools(), control).await
    })
}

async fn a_queued_run_gives_up_when_cancelled(engine: Arc<dyn Engine>) {
    let session = SessionId::next();
    let first = run_on(&engine, session, HOLD, CancellationToken::new());
    // The first run must hold the session before the second one queues.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cancel = CancellationToken::new();
    let second = run_on(&engine, session, "'second'", cancel.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let second = second.await.expect("the second run's task");
    assert!(
        !first.is_finished(),
        "the cancelled run answered only after the run it queued behind ({})",
        engine.name()
    );
    assert_eq!(
        second.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Cancelled),
        "{second:?}"
    );
    let first = first.await.expect("the first run's task");
    assert!(
        first.error.is_none(),
        "the first run is untouched: {first:?}"
    );
    assert_eq!(first.result, Some(serde_json::json!("first")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_queued_run_gives_up_at_once_in_process() {
    a_queued_run_gives_up_when_cancelled(Arc::new(MontyEngine::new(monty_limits()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_queued_run_gives_up_at_once_in_the_pool() {
    let binary = std::env::var_os("CODEMCP_MONTY_BIN").map(std::path::PathBuf::from);
    let binary = find_worker_binary(binary.as_deref()).expect("CODEMCP_MONTY_BIN");
    let pool = PoolEngine::start(monty_limits(), binary, 1)
        .await
        .expect("a Monty pool");
    a_queued_run_gives_up_when_cancelled(Arc::new(pool)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_queued_run_gives_up_at_once_in_cpython() {
    let python = std::env::var_os("CODEMCP_PYTHON").map(std::path::PathBuf::from);
    let cpython = WorkerEngine::start_host(worker_limits(), find_python(python.as_deref()))
        .await
        .expect("CODEMCP_PYTHON: a host CPython worker");
    a_queued_run_gives_up_when_cancelled(cpython).await;
}
