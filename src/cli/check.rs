//! `codemcp check`: each upstream (connected, tools, handshake time), the
//! policies, and whether each engine can run here.

use crate::config::{self, Fallback, Isolation, MontyPlacement, Settings};
use crate::upstream::Catalog;
use codemcp_exec::worker::docker;
use codemcp_sdk::policy::Decision;

/// Prints what `codemcp check` reports, section by section.
pub(super) async fn check(catalog: &Catalog, settings: &Settings, path: &config::ConfigPath) {
    match path.path() {
        Some(p) => println!(
            "config: {}{}",
            p.display(),
            if p.exists() {
                ""
            } else {
                " (not found: no upstreams)"
            }
        ),
        None => println!("config: none (HOME is not set)"),
    }
    for status in catalog.statuses() {
        let handshake = status
            .handshake_ms
            .map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
        match &status.error {
            None if status.connecting => println!("  {:<20} still connecting", status.name),
            None => println!(
                "  {:<20} connected  {:>4} tools  handshake {handshake}",
                status.name, status.tools
            ),
            Some(e) => println!("  {:<20} FAILED     {e}", status.name),
        }
    }
    for skipped in catalog.skipped() {
        println!("  {:<20} skipped    {}", skipped.name, skipped.reason);
    }
    print_policies(catalog, settings);
    let placement = match settings.monty.monty_placement {
        Some(MontyPlacement::InProcess) => "in-process (CODEMCP_MONTY=inprocess)",
        Some(MontyPlacement::Pool) => "worker pool (CODEMCP_MONTY=pool)",
        None => "in-process for stdio, worker pool for serve --http (CODEMCP_MONTY unset)",
    };
    println!(
        "engine: monty, {placement}; memory {} MiB, run limit {} ms",
        settings.monty.monty_mem_limit >> 20,
        settings.limits.exec_timeout.as_millis()
    );
    print_monty_worker(settings).await;
    let sources = codemcp_image::Sources {
        debian_mirror: settings.cpython.debian_mirror.clone(),
        pypi_files: settings.cpython.pypi_files.clone(),
    };
    let status = docker::status(&settings.cpython.docker_image, &sources).await;
    match &status.engine {
        Ok(version) => println!("docker engine: {version} (answers)"),
        Err(e) => println!("docker engine: NOT usable: {e}"),
    }
    match &status.image {
        Some(Ok(image)) => println!("docker image: {image}"),
        Some(Err(missing)) if status.image_missing => println!("docker image: {missing}"),
        Some(Err(e)) => println!("docker image: NOT usable: {e}"),
        None => println!(
            "docker image: {} (not checked: no engine)",
            settings.cpython.docker_image
        ),
    }
    print_python_versions(settings).await;
    let sandbox_usable = print_sandbox(settings).await;
    // A missing image is built on the first escalation.
    let docker_usable = matches!(status.image, Some(Ok(_))) || status.image_missing;
    let fallback = match (settings.cpython.isolation, settings.cpython.fallback) {
        (Isolation::HostSystem, _) => {
            "every run in CPython on the host (CODEMCP_ISOLATION=HOST_SYSTEM; no sandbox)"
                .to_owned()
        }
        (Isolation::Sandbox, _) => format!(
            "every run in CPython in a bubblewrap sandbox (CODEMCP_ISOLATION=SANDBOX){}",
            if sandbox_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (Isolation::Docker, _) => format!(
            "every run in CPython in a Docker container (CODEMCP_ISOLATION=DOCKER){}",
            if docker_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (_, Fallback::Host) => {
            "escalates to CPython on the host, UNSANDBOXED (CODEMCP_FALLBACK=host-unsandboxed: trusted agents only)".to_owned()
        }
        (_, Fallback::Sandbox) => format!(
            "escalates to CPython in bubblewrap sandboxes (CODEMCP_FALLBACK=sandbox){}",
            if sandbox_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (_, Fallback::Docker) => format!(
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=docker){}",
            if docker_usable {
                ""
            } else {
                ": NOT usable, see above"
            }
        ),
        (_, Fallback::Auto) if docker_usable => {
            "escalates to CPython in Docker containers (CODEMCP_FALLBACK=auto: the engine answers)"
                .to_owned()
        }
        (_, Fallback::Auto) if sandbox_usable => {
            "escalates to CPython in bubblewrap sandboxes (CODEMCP_FALLBACK=auto: no usable Docker engine; the sandbox works here)"
                .to_owned()
        }
        (_, Fallback::Auto) => {
            "none (CODEMCP_FALLBACK=auto found neither a usable Docker nor a sandbox: see above; never the unsandboxed host)".to_owned()
        }
        (_, Fallback::None) => "none (CODEMCP_FALLBACK=none)".to_owned(),
    };
    println!("cpython fallback: {fallback}");
}

/// The bubblewrap placement: what works and what is missing; whether
/// escalation can use it.
async fn print_sandbox(settings: &Settings) -> bool {
    use codemcp_exec::worker::sandbox;
    let rootfs = crate::assemble::sandbox_rootfs_path(&settings.cpython);
    let status = sandbox::status(settings.cpython.bwrap.as_deref(), &rootfs).await;
    match &status.bwrap {
        Ok(version) => println!("sandbox: {version} (Linux only; makes every namespace new here)"),
        Err(missing) => println!("sandbox: NOT usable: {missing}"),
    }
    match &status.rootfs {
        Ok(python) => println!("sandbox root: {} (CPython {python})", rootfs.display()),
        Err(missing) if status.bwrap.is_ok() => println!("sandbox root: {missing}"),
        Err(_) => {}
    }
    status.usable()
}

/// Monty's CPython target beside the host workers' actual CPython (the
/// image's is on the `docker image` line), so a mismatch is seen.
async fn print_python_versions(settings: &Settings) {
    let target = codemcp_exec::worker::MONTY_CPYTHON;
    println!("python: Monty follows CPython {target}");
    let python = codemcp_exec::worker::find_python(settings.cpython.python.as_deref());
    match codemcp_exec::worker::host_python_version(&python).await {
        Ok(version) => {
            let same = version == target || version.starts_with(&format!("{target}."));
            println!(
                "host worker python: {} (CPython {version}{})",
                python.display(),
                if same {
                    ""
                } else {
                    "; differs from Monty's: answers may change when a run escalates"
                }
            );
        }
        Err(e) => println!("host worker python: NOT usable: {e}"),
    }
}

/// Every tool's effective policy, grouped by decision, per server.
fn print_policies(catalog: &Catalog, settings: &Settings) {
    println!(
        "policy (default for unannotated tools: {}, CODEMCP_POLICY_DEFAULT):",
        settings.authority.policy_default
    );
    for (server, tools) in catalog.policies() {
        for decision in [Decision::Allow, Decision::Ask, Decision::Deny] {
            let names: Vec<&str> = tools
                .iter()
                .filter(|(_, d)| *d == decision)
                .map(|(name, _)| name.as_str())
                .collect();
            if !names.is_empty() {
                println!("  {server:<20} {decision:<5}  {}", names.join(", "));
            }
        }
    }
    match &settings.authority.audit_log {
        Some(path) => println!("audit log: {}", path.display()),
        None => println!("audit log: the codemcp::audit log target only (CODEMCP_AUDIT_LOG unset)"),
    }
}

/// Which worker pool placement starts (built in, configured, installed
/// beside codemcp or on PATH, provisioned, or missing), and its Monty: it
/// runs once, bounded, to see that it works. Nothing is downloaded here.
async fn print_monty_worker(settings: &Settings) {
    use codemcp_exec::monty::pool::{PoolStartError, worker_binary};
    let configured = settings.monty.monty_bin.as_deref();
    let worker = match worker_binary::choose(configured, None).await {
        Ok(worker) => worker,
        Err(PoolStartError::NoBinary { looked }) => {
            return println!(
                "monty worker: missing ({looked}); the first `serve --http` provisions the pinned one, or now: `codemcp setup pool`"
            );
        }
        Err(e) => return println!("monty worker: NOT usable: {e}"),
    };
    let which = worker.to_string();
    match worker_binary::probe(&worker.binary).await {
        Ok(version) => println!("monty worker: {which}, Monty {version} (usable)"),
        Err(e) => println!("monty worker: {which} (NOT usable: {e})"),
    }
}
