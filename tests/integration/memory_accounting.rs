//! The allocator that feeds Monty's memory counter: every byte charged to a
//! session is refunded when its objects are freed, on whatever thread.
//! This test binary installs the same global allocator as the codemcp binary
//! (`main.rs`). The counter is process-wide and the rest of the suite runs
//! Monty in this process too (`analysis.rs`), so each test here runs in a
//! child process of this binary that runs only it (`alone`).

use std::time::Duration;

use codemcp_exec::monty::memory::total_live_bytes;
use codemcp_exec::monty::{MontyEngine, MontyLimits};
use codemcp_exec::{Engine, Run, RunControl, SessionId};

use crate::support;

/// Runs `memory_accounting::measured::NAME` alone in a child process.
fn alone(name: &str) {
    support::run_alone(
        &format!("memory_accounting::measured::{name}"),
        &format!("MEASURED {name}"),
    );
}

#[test]
fn ten_thousand_runs_leave_the_counter_where_it_started() {
    alone("ten_thousand_runs_leave_the_counter_where_it_started");
}

#[test]
fn a_session_is_charged_for_what_it_keeps_and_refunded_when_dropped() {
    alone("a_session_is_charged_for_what_it_keeps_and_refunded_when_dropped");
}

#[test]
fn the_budget_stops_growth_inside_the_run() {
    alone("the_budget_stops_growth_inside_the_run");
}

fn limits(memory_limit: usize) -> MontyLimits {
    MontyLimits {
        exec_timeout: Duration::from_secs(10),
        max_output_bytes: 1 << 20,
        max_result_bytes: 1 << 20,
        max_tool_calls: 100,
        max_recursion_depth: 200,
        max_sleep_total: Duration::from_secs(1),
        memory_limit,
        session_idle: Duration::from_secs(60),
        max_sessions: 64,
    }
}

fn request(code: &str) -> Run {
    Run::new(code.to_owned(), Duration::from_secs(10))
}

/// The measurements, each run by `alone` in a process of its own; elsewhere
/// they return at once.
mod measured {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ten_thousand_runs_leave_the_counter_where_it_started() {
        if !support::in_child() {
            return;
        }
        let engine = MontyEngine::new(limits(256 << 20));
        let host = support::no_tools();
        // One run first, so one-time lazy statics are not counted as a leak.
        engine
            .run(
                SessionId::next(),
                request("1"),
                host.clone(),
                RunControl::default(),
            )
            .await;
        let before = total_live_bytes();
        let code = "d = {str(i): [i] * 3 for i in range(50)}\nprint(len(d))\nsorted(d)[:3]";
        for i in 0..10_000 {
            let session = SessionId::next();
            let ran = engine
                .run(session, request(code), host.clone(), RunControl::default())
                .await;
            assert!(ran.error.is_none(), "run {i}: {:?}", ran.error);
            engine.end_session(session);
        }
        let after = total_live_bytes();
        assert_eq!(
            after,
            before,
            "accounted bytes drifted by {}",
            after as i64 - before as i64
        );
        println!("MEASURED ten_thousand_runs_leave_the_counter_where_it_started");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_is_charged_for_what_it_keeps_and_refunded_when_dropped() {
        if !support::in_child() {
            return;
        }
        let engine = MontyEngine::new(limits(256 << 20));
        let host = support::no_tools();
        let session = SessionId::next();
        engine
            .run(session, request("1"), host.clone(), RunControl::default())
            .await;
        let before = total_live_bytes();
        let ran = engine
            .run(
                session,
                request("big = 'x' * (8 * 1024 * 1024)"),
                host.clone(),
                RunControl::default(),
            )
            .await;
        assert!(ran.error.is_none(), "{:?}", ran.error);
        let holding = total_live_bytes();
        assert!(
            holding >= before + (8 << 20),
            "the 8 MiB string is charged: {before} -> {holding}"
        );
        engine.end_session(session);
        assert!(
            total_live_bytes() <= before,
            "dropping the session refunds it"
        );
        println!("MEASURED a_session_is_charged_for_what_it_keeps_and_refunded_when_dropped");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_budget_stops_growth_inside_the_run() {
        if !support::in_child() {
            return;
        }
        let engine = MontyEngine::new(limits(32 << 20));
        let host = support::no_tools();
        let ran = engine
            .run(
                SessionId::next(),
                request("l = []\nwhile True:\n    l.append('x' * 10000)"),
                host,
                RunControl::default(),
            )
            .await;
        let error = ran.error.expect("MemoryError");
        assert_eq!(error.exc_type, "MemoryError");
        assert!(error.session_reset);
        println!("MEASURED the_budget_stops_growth_inside_the_run");
    }
}
