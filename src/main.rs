use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

/// Counts the bytes Monty-executing threads allocate, so Monty's memory limit works.
#[global_allocator]
static ALLOCATOR: codemcp_exec::monty::memory::CountingAllocator =
    codemcp_exec::monty::memory::CountingAllocator;

fn main() -> ExitCode {
    // Logs go to stderr: stdout is the MCP channel in stdio mode.
    let filter =
        EnvFilter::try_from_env("CODEMCP_LOG").unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    codemcp_base::process::return_freed_memory();
    // reqwest (https upstreams, the OTLP exporter) is built without a
    // default TLS provider: installed before any client is built.
    let tls_installed = rustls::crypto::ring::default_provider()
        .install_default()
        .is_ok();
    let telemetry = codemcp::telemetry::Telemetry::init(filter);
    // After logging is set up, so the values are logged.
    codemcp_base::process::raise_open_file_limit();
    if !tls_installed {
        tracing::debug!("a TLS provider was already installed");
    }
    let cli = match codemcp::cli::parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if cli.is_monty_worker() {
        // A worker of this binary's own pool: no runtime, stdout is the protocol.
        return codemcp_exec::monty::pool::worker_binary::serve_as_worker();
    }
    let code = std::thread::Builder::new()
        .name("codemcp".into())
        // The runtime's tasks parse agent code on their own stack when it
        // fits (see `threads::on_big_stack_for`): room for that.
        .stack_size(codemcp_base::threads::RUNTIME_STACK)
        .spawn(move || serve(cli));
    let code = match code {
        // A panic was reported on stderr as it happened.
        Ok(thread) => thread.join().unwrap_or(ExitCode::from(101)),
        Err(e) => {
            eprintln!("codemcp: cannot start the runtime thread: {e}");
            ExitCode::from(2)
        }
    };
    telemetry.shutdown();
    code
}

/// Runs the command on an async runtime: one thread for a command with one
/// client (stdio), a thread per core for a shared HTTP gateway.
fn serve(cli: codemcp::cli::Cli) -> ExitCode {
    let mut builder = if cli.serves_one_client() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.thread_stack_size(codemcp_base::threads::RUNTIME_STACK);
    match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(codemcp::cli::main(cli)),
        Err(e) => {
            eprintln!("codemcp: cannot start the async runtime: {e}");
            ExitCode::from(2)
        }
    }
}
