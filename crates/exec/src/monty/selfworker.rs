//! `codemcp subprocess`: the binary serving as its own monty-pool worker, so
//! pool placement (the default for `serve --http`) needs nothing installed
//! beside codemcp. monty-pool starts a worker as `<binary> subprocess` with an
//! empty environment and speaks monty-proto over its stdin and stdout; the
//! protocol state machine is monty-proto's own `Child` (its `worker` feature,
//! the code the PyPI `monty` worker runs), and this is the stdio shell around
//! it, as the PyPI worker's `subprocess` mode is.
//!
//! A parent treats a worker that exits without a `FatalError` frame as
//! crashed, so stack overflows and a passed memory limit need no frame.

use std::io;
use std::process::ExitCode;
use std::thread;

use monty_proto::worker::{Child, EventSink, HandleOutcome, fatal_error_event, protocol_violation};
use monty_proto::{FrameError, FrameReader, pb, write_frame};
use monty_types::memory_limit_with_headroom;

use super::whole_process;

/// The subcommand monty-pool runs a worker with (its argv is fixed).
pub const SUBCOMMAND: &str = "subprocess";

/// BSD `sysexits.h` "remote error in protocol": the frame stream is broken.
const EX_PROTOCOL: u8 = 76;
/// Exit code when stdout broke: the parent is gone.
const PARENT_GONE: u8 = 3;
/// Exit code after the worker announced a `FatalError` (such as a parent
/// speaking a protocol version it does not serve).
const FATAL: u8 = 4;
/// The interpreter's stack, as in the PyPI worker, so the two workers stop
/// deep recursion alike (reserved, not committed).
const WORKER_STACK: usize = 16 << 20;

/// Serves the pool protocol on stdin/stdout until EOF, `Shutdown` or a fatal
/// error. Call before anything else runs Monty in this process.
pub fn serve() -> ExitCode {
    whole_process::start_counting();
    name_process();
    let worker = thread::Builder::new()
        .name("monty-worker".to_owned())
        .stack_size(WORKER_STACK)
        .spawn(serve_stdio);
    match worker {
        // A panic already wrote its `FatalError` frame (see the hook).
        Ok(worker) => worker.join().unwrap_or(ExitCode::from(101)),
        Err(e) => {
            eprintln!("codemcp subprocess: cannot start the worker thread: {e}");
            ExitCode::from(2)
        }
    }
}

/// `ps`, `pgrep monty` and the operator's scripts see the worker by the name
/// the PyPI worker has (its command line is `/proc/self/exe subprocess`).
fn name_process() {
    // SAFETY: PR_SET_NAME only reads a NUL-terminated string (cut at 16 bytes).
    let _ = unsafe { libc::prctl(libc::PR_SET_NAME, c"monty".as_ptr()) };
}

fn serve_stdio() -> ExitCode {
    install_panic_hook();
    let mut reader = FrameReader::new(io::stdin().lock());
    let mut child = Child::default();
    let mut sink = StdoutSink;
    loop {
        match reader.read::<pb::ParentRequest>() {
            Ok(Some(request)) => {
                let outcome = child.handle(request, &mut sink);
                arm_memory_limit(&child);
                match outcome {
                    Ok(HandleOutcome::Continue) => {}
                    Ok(HandleOutcome::Shutdown) => return ExitCode::SUCCESS,
                    Ok(HandleOutcome::Fatal) => return ExitCode::from(FATAL),
                    // Refused before any byte was written: the stream is in
                    // sync and the parent can read why.
                    Err(FrameError::FrameTooLarge { len, max }) => {
                        let why =
                            format!("response frame of {len} bytes exceeds maximum of {max} bytes");
                        fatal(&child, &mut sink, &why);
                        return ExitCode::from(EX_PROTOCOL);
                    }
                    Err(_) => return ExitCode::from(PARENT_GONE),
                }
            }
            // The parent closed stdin at a frame boundary.
            Ok(None) => return ExitCode::SUCCESS,
            // A whole frame whose payload did not decode: still in sync.
            Err(FrameError::Decode(err)) => {
                let answer = protocol_violation(&format!("malformed request: {err}"));
                if sink.send(&answer).is_err() {
                    return ExitCode::from(PARENT_GONE);
                }
            }
            Err(err) => {
                fatal(
                    &child,
                    &mut sink,
                    &format!("malformed request frame: {err}"),
                );
                return ExitCode::from(EX_PROTOCOL);
            }
        }
    }
}

/// The hard limit follows the session the child holds after each request (a
/// `Configure`, a `Load` of a dump, a `Reset`), read from the child rather
/// than the request so a refused request changes nothing.
fn arm_memory_limit(child: &Child) {
    let budget = child.session_budget();
    whole_process::arm(memory_limit_with_headroom(
        budget.max_memory,
        budget.type_check,
    ));
}

/// Framed events on stdout, which carries nothing else in this mode.
struct StdoutSink;

impl EventSink for StdoutSink {
    fn send(&mut self, event: &pb::ChildEvent) -> Result<(), FrameError> {
        write_frame(&mut io::stdout(), event)
    }
}

fn fatal(child: &Child, sink: &mut impl EventSink, message: &str) {
    eprintln!("codemcp subprocess: fatal: {message}");
    let _ = sink.send(&child.fatal_event(message));
}

/// A panic leaves a parseable `FatalError` frame before the default report.
fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let event = fatal_error_event(&format!("worker panicked: {info}"));
        let _ = write_frame(&mut io::stdout(), &event);
        default_hook(info);
    }));
}
