//! Who started this gateway: the parent process's command line from /proc,
//! so `codemcp instances` can tell the gateway of one client from another's.

/// The parent's command line (arguments joined by spaces), else its name,
/// else its pid.
#[must_use]
pub fn parent_command() -> String {
    let ppid = std::os::unix::process::parent_id();
    let cmdline = std::fs::read(format!("/proc/{ppid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    if !args.is_empty() {
        return format!("{} (pid {ppid})", args.join(" "));
    }
    match std::fs::read_to_string(format!("/proc/{ppid}/comm")) {
        Ok(name) => format!("{} (pid {ppid})", name.trim()),
        Err(_) => format!("pid {ppid}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parent_of_the_test_is_named() {
        let parent = super::parent_command();
        let ppid = std::os::unix::process::parent_id();
        assert!(parent.ends_with(&format!("pid {ppid})")), "{parent}");
    }
}
