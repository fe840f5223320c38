//! The bubblewrap placement, for the tests that need it: it works here, or
//! the test is skipped with the reason.

use super::bin;

/// Whether the bubblewrap sandbox placement works here (`codemcp setup
/// sandbox` succeeds: bwrap, user namespaces, the root file system, or
/// `CODEMCP_SANDBOX_ROOTFS` names one): else why not. Under `CI=true` it
/// must, so its absence fails the test.
pub fn sandbox_or_skip() -> Result<(), String> {
    let out = std::process::Command::new(bin())
        .args(["setup", "sandbox"])
        .output()
        .map_err(|e| format!("codemcp setup sandbox: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let reason = format!(
        "codemcp setup sandbox: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true needs the sandbox placement: {reason}"
    );
    eprintln!("SKIPPED the sandbox placement: {reason}");
    Err(reason)
}
