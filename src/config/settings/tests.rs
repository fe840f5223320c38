//! Unit tests for the settings: the rules each kind of value follows, read
//! through the flags (the environment is never touched; a variable and its
//! flag share one parser).

use std::time::Duration;

use proptest::prelude::*;

use super::values::{Rejected, parse_size};
use super::*;
use crate::config::ConfigError;

/// Parses `vars` as if each variable were set, through its flag.
fn with(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let command = Settings::command();
    let flags = vars.iter().map(|(var, value)| {
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_env().is_some_and(|env| env == *var))
            .unwrap_or_else(|| panic!("no setting reads {var}"));
        format!(
            "--{}={value}",
            arg.get_long().expect("every setting has a flag")
        )
    });
    Settings::from_flags(flags).map_err(|err| match Rejected::from_clap(&err) {
        Some(rejected) => rejected.into(),
        None => panic!("{vars:?}: not a rejected setting: {err}"),
    })
}

fn ok(vars: &[(&str, &str)]) -> Settings {
    with(vars).unwrap_or_else(|err| panic!("{vars:?} should be accepted: {err}"))
}

fn err(vars: &[(&str, &str)]) -> String {
    match with(vars) {
        Ok(settings) => panic!("{vars:?} should be rejected, got {settings:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn defaults() {
    let s = ok(&[]);
    assert_eq!(s, Settings::default());
    assert_eq!(s.upstream.tool_timeout, Duration::from_secs(60));
    assert_eq!(s.upstream.startup_wait, Duration::from_secs(5));
    assert_eq!(s.limits.exec_timeout, Duration::from_secs(30));
    assert_eq!(s.limits.max_output_bytes, 1 << 20);
    assert_eq!(s.limits.max_result_bytes, 1 << 20);
    assert_eq!(s.upstream.max_tool_result_bytes, 16 << 20);
    assert_eq!(s.limits.max_source_bytes, 256 << 10);
    assert_eq!(s.limits.max_tool_calls, 500);
    assert_eq!(s.limits.max_recursion_depth, 200);
    assert_eq!(s.limits.max_sleep_total, Duration::from_secs(10));
    assert_eq!(s.monty.monty_mem_limit, 256 << 20);
    assert_eq!(s.sessions.session_idle, Duration::from_secs(1800));
    assert_eq!(s.sessions.max_sessions, 64);
    assert_eq!(s.description_budget, 2_048);
    assert_eq!(s.http.http_token, None);
    assert_eq!(s.http.allowed_hosts, ["localhost", "127.0.0.1", "::1"]);
    assert!(s.http.allowed_origins.is_empty());
    assert!(!s.http.healthz_open);
    assert_eq!(s.cpython.docker_image, "codemcp-worker:2");
    assert_eq!(s.cpython.docker_memory, 512 << 20);
    assert_eq!(s.cpython.docker_pids, 128);
    assert_eq!(s.cpython.docker_nano_cpus, 1_000_000_000);
}

#[test]
fn docker_settings() {
    let s = ok(&[
        ("CODEMCP_DOCKER_IMAGE", "local/worker:2"),
        ("CODEMCP_DOCKER_MEMORY", "1G"),
        ("CODEMCP_DOCKER_PIDS", "64"),
        ("CODEMCP_DOCKER_CPUS", "0.5"),
    ]);
    assert_eq!(s.cpython.docker_image, "local/worker:2");
    assert_eq!(s.cpython.docker_memory, 1 << 30);
    assert_eq!(s.cpython.docker_pids, 64);
    assert_eq!(s.cpython.docker_nano_cpus, 500_000_000);
    for cpus in ["0", "-1", "lots", "NaN", "inf", "0.001", "2000"] {
        assert!(
            err(&[("CODEMCP_DOCKER_CPUS", cpus)]).contains("a number of CPUs"),
            "{cpus}"
        );
    }
    assert!(err(&[("CODEMCP_DOCKER_PIDS", "0")]).contains("greater than zero"));
}

#[test]
fn every_variable_is_read() {
    let s = ok(&[
        ("CODEMCP_TOOL_TIMEOUT_MS", "1500"),
        ("CODEMCP_EXEC_TIMEOUT_MS", " 2000 "),
        ("CODEMCP_MAX_OUTPUT_BYTES", "100"),
        ("CODEMCP_MAX_RESULT_BYTES", "2k"),
        ("CODEMCP_MAX_TOOL_RESULT_BYTES", "3MiB"),
        ("CODEMCP_MAX_SOURCE_BYTES", "1MiB"),
        ("CODEMCP_MAX_TOOL_CALLS", "7"),
        ("CODEMCP_MAX_RECURSION", "50"),
        ("CODEMCP_MAX_SLEEP_MS", "0"),
        ("CODEMCP_MONTY_MEM_LIMIT", "1G"),
        ("CODEMCP_SESSION_IDLE_SECS", "60"),
        ("CODEMCP_MAX_SESSIONS", "3"),
        ("CODEMCP_DESCRIPTION_BUDGET", "9000"),
        ("CODEMCP_HTTP_TOKEN", "t0k3n"),
        ("CODEMCP_ALLOWED_HOSTS", "Example.COM, 10.0.0.5:8080,"),
        (
            "CODEMCP_ALLOWED_ORIGINS",
            "https://app.example.com/,http://localhost:3000",
        ),
        ("CODEMCP_HEALTHZ_OPEN", "true"),
    ]);
    assert_eq!(s.upstream.tool_timeout, Duration::from_millis(1500));
    assert_eq!(s.limits.exec_timeout, Duration::from_secs(2));
    assert_eq!(s.limits.max_output_bytes, 100);
    assert_eq!(s.limits.max_result_bytes, 2048);
    assert_eq!(s.upstream.max_tool_result_bytes, 3 << 20);
    assert_eq!(s.limits.max_source_bytes, 1 << 20);
    assert_eq!(s.limits.max_tool_calls, 7);
    assert_eq!(s.limits.max_recursion_depth, 50);
    assert_eq!(s.limits.max_sleep_total, Duration::ZERO);
    assert_eq!(s.monty.monty_mem_limit, 1 << 30);
    assert_eq!(s.sessions.session_idle, Duration::from_secs(60));
    assert_eq!(s.sessions.max_sessions, 3);
    assert_eq!(s.description_budget, 9000);
    assert_eq!(s.http.http_token.as_deref(), Some("t0k3n"));
    assert_eq!(s.http.allowed_hosts, ["example.com", "10.0.0.5:8080"]);
    assert_eq!(
        s.http.allowed_origins,
        ["https://app.example.com", "http://localhost:3000"]
    );
    assert!(s.http.healthz_open);
}

#[test]
fn blank_values_take_the_default() {
    let s = ok(&[
        ("CODEMCP_EXEC_TIMEOUT_MS", ""),
        ("CODEMCP_HTTP_TOKEN", ""),
        ("CODEMCP_ALLOWED_HOSTS", " , "),
        ("CODEMCP_MONTY_MEM_LIMIT", "  "),
    ]);
    assert_eq!(s, Settings::default());
}

#[test]
fn size_suffixes() {
    for (text, expected) in [
        ("0b", Some(0)),
        ("4096", Some(4096)),
        ("64k", Some(64 << 10)),
        ("64K", Some(64 << 10)),
        ("64KB", Some(64 << 10)),
        ("512M", Some(512 << 20)),
        ("512MiB", Some(512 << 20)),
        ("512 mib", Some(512 << 20)),
        ("1G", Some(1 << 30)),
        ("2gib", Some(2 << 30)),
        ("1.5G", None),
        ("G", None),
        ("-1", None),
        ("12T", None),
        ("10 apples", None),
        ("99999999999999999999", None),
        ("18446744073709551615G", None),
    ] {
        assert_eq!(parse_size(text), expected, "{text}");
    }
}

#[test]
fn bad_number_message() {
    assert_eq!(
        err(&[("CODEMCP_EXEC_TIMEOUT_MS", "abc")]),
        r#"CODEMCP_EXEC_TIMEOUT_MS="abc": expected a whole number of milliseconds greater than zero"#
    );
    assert_eq!(
        err(&[("CODEMCP_MAX_SLEEP_MS", "1.5")]),
        r#"CODEMCP_MAX_SLEEP_MS="1.5": expected a whole number of milliseconds"#
    );
    assert_eq!(
        err(&[("CODEMCP_SESSION_IDLE_SECS", "30m")]),
        r#"CODEMCP_SESSION_IDLE_SECS="30m": expected a whole number of seconds greater than zero"#
    );
}

#[test]
fn bad_env_carries_its_parts() {
    match with(&[("CODEMCP_MAX_TOOL_CALLS", "lots")]) {
        Err(ConfigError::BadEnv {
            var,
            value,
            expected,
        }) => {
            assert_eq!(var, "CODEMCP_MAX_TOOL_CALLS");
            assert_eq!(value, "lots");
            assert_eq!(expected, "a whole number greater than zero");
        }
        other => panic!("expected BadEnv, got {other:?}"),
    }
}

#[test]
fn zero_is_rejected_where_it_makes_no_sense() {
    for var in [
        "CODEMCP_TOOL_TIMEOUT_MS",
        "CODEMCP_EXEC_TIMEOUT_MS",
        "CODEMCP_MAX_OUTPUT_BYTES",
        "CODEMCP_MAX_RESULT_BYTES",
        "CODEMCP_MAX_TOOL_RESULT_BYTES",
        "CODEMCP_MAX_SOURCE_BYTES",
        "CODEMCP_MAX_TOOL_CALLS",
        "CODEMCP_MAX_RECURSION",
        "CODEMCP_MONTY_MEM_LIMIT",
        "CODEMCP_SESSION_IDLE_SECS",
        "CODEMCP_MAX_SESSIONS",
        "CODEMCP_DESCRIPTION_BUDGET",
    ] {
        let message = err(&[(var, "0")]);
        assert!(
            message.starts_with(&format!("{var}=\"0\": expected ")),
            "{message}"
        );
    }
    assert_eq!(
        ok(&[("CODEMCP_MAX_SLEEP_MS", "0")]).limits.max_sleep_total,
        Duration::ZERO
    );
}

#[test]
fn out_of_range_values_are_rejected() {
    assert_eq!(
        err(&[("CODEMCP_MAX_TOOL_CALLS", "4294967296")]),
        r#"CODEMCP_MAX_TOOL_CALLS="4294967296": expected a whole number greater than zero"#
    );
    assert_eq!(
        err(&[("CODEMCP_TOOL_TIMEOUT_MS", "18446744073709551615")]),
        r#"CODEMCP_TOOL_TIMEOUT_MS="18446744073709551615": expected at most 31536000000 milliseconds (365 days)"#
    );
    assert_eq!(
        err(&[("CODEMCP_SESSION_IDLE_SECS", "31536001")]),
        r#"CODEMCP_SESSION_IDLE_SECS="31536001": expected at most 31536000 seconds (365 days)"#
    );
    assert!(err(&[("CODEMCP_MAX_SESSIONS", "-1")]).contains("greater than zero"));
}

#[test]
fn bad_size_message() {
    assert_eq!(
        err(&[("CODEMCP_MONTY_MEM_LIMIT", "lots")]),
        r#"CODEMCP_MONTY_MEM_LIMIT="lots": expected a size greater than zero in bytes, or with a suffix such as 64k, 512MiB or 1G"#
    );
}

#[test]
fn bad_hosts_and_origins() {
    assert!(
        err(&[("CODEMCP_ALLOWED_HOSTS", "localhost,http://evil.com")])
            .contains("expected a comma-separated list of host names")
    );
    for origin in [
        "localhost:8080",
        "http://",
        "ftp://x",
        "http://x/path",
        "http://a b",
    ] {
        let message = err(&[("CODEMCP_ALLOWED_ORIGINS", origin)]);
        assert!(
            message.contains("expected a comma-separated list of origins"),
            "{message}"
        );
    }
}

#[test]
fn debug_hides_the_token() {
    let s = ok(&[("CODEMCP_HTTP_TOKEN", "hunter2")]);
    let shown = format!("{s:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

/// Every variable, as it has always been named.
const VARIABLES: &[&str] = &[
    "CODEMCP_HELPERS_SAVE",
    "CODEMCP_HELPERS_MAX_COUNT",
    "CODEMCP_HELPERS_MAX_BYTES",
    "CODEMCP_HELPERS_MAX_TOTAL_BYTES",
    "CODEMCP_HELPERS_IDLE_SECS",
    "CODEMCP_HELPERS_DIR",
    "CODEMCP_TOOL_TIMEOUT_MS",
    "CODEMCP_STARTUP_WAIT_MS",
    "CODEMCP_STARTUP_CONCURRENCY",
    "CODEMCP_LAZY_IDLE_MS",
    "CODEMCP_EXEC_TIMEOUT_MS",
    "CODEMCP_MAX_OUTPUT_BYTES",
    "CODEMCP_MAX_RESULT_BYTES",
    "CODEMCP_MAX_TOOL_RESULT_BYTES",
    "CODEMCP_MAX_SOURCE_BYTES",
    "CODEMCP_MAX_TOOL_CALLS",
    "CODEMCP_MAX_RECURSION",
    "CODEMCP_MAX_SLEEP_MS",
    "CODEMCP_MONTY_MEM_LIMIT",
    "CODEMCP_SESSION_IDLE_SECS",
    "CODEMCP_MAX_SESSIONS",
    "CODEMCP_DESCRIPTION_BUDGET",
    "CODEMCP_HTTP_TOKEN",
    "CODEMCP_HTTP_TOKENS",
    "CODEMCP_ALLOWED_HOSTS",
    "CODEMCP_ALLOWED_ORIGINS",
    "CODEMCP_MONTY",
    "CODEMCP_MONTY_BIN",
    "CODEMCP_MONTY_WORKERS",
    "CODEMCP_OUTPUT",
    "CODEMCP_ISOLATION",
    "CODEMCP_FALLBACK",
    "CODEMCP_PYTHON",
    "CODEMCP_BWRAP",
    "CODEMCP_SANDBOX_ROOTFS",
    "CODEMCP_WORKER_IDLE_SECS",
    "CODEMCP_DOCKER_IMAGE",
    "CODEMCP_DOCKER_MEMORY",
    "CODEMCP_DOCKER_PIDS",
    "CODEMCP_DOCKER_CPUS",
    "CODEMCP_DEBIAN_MIRROR",
    "CODEMCP_PYPI_FILES",
    "CODEMCP_SESSION_STORE",
    "CODEMCP_SESSION_KEY",
    "CODEMCP_MAX_SESSION_BYTES",
    "CODEMCP_SESSION_STORE_TIMEOUT_MS",
    "CODEMCP_POLICY_DEFAULT",
    "CODEMCP_APPROVAL_TIMEOUT_SECS",
    "CODEMCP_AUDIT_LOG",
    "CODEMCP_AUDIT_MAX_BYTES",
    "CODEMCP_AUDIT_KEEP_FILES",
    "CODEMCP_AUDIT_REQUIRED",
    "CODEMCP_HEALTHZ_OPEN",
    "CODEMCP_HTTP_HEADER_TIMEOUT_MS",
    "CODEMCP_HTTP_BODY_TIMEOUT_MS",
    "CODEMCP_HTTP_MAX_CONNECTIONS",
    "CODEMCP_HTTP_MAX_SESSIONS",
    "CODEMCP_HTTP_MAX_SESSIONS_PER_PRINCIPAL",
];

#[test]
fn every_variable_has_its_flag_and_help() {
    let mut command = Settings::command();
    let mut read: Vec<String> = Vec::new();
    for arg in command.get_arguments() {
        let var = arg.get_env().expect("every setting reads a variable");
        let var = var.to_str().expect("variable names are ASCII").to_owned();
        let flag = var
            .trim_start_matches("CODEMCP_")
            .to_ascii_lowercase()
            .replace('_', "-");
        assert_eq!(arg.get_long(), Some(flag.as_str()), "{var}");
        assert!(arg.is_global_set(), "{var} should work after a subcommand");
        assert!(arg.get_help().is_some(), "{var} needs a help line");
        read.push(var);
    }
    read.sort();
    let mut expected = VARIABLES
        .iter()
        .map(|v| (*v).to_owned())
        .collect::<Vec<_>>();
    expected.sort();
    assert_eq!(read, expected);
    let help = command.render_long_help().to_string();
    for var in VARIABLES {
        assert!(
            help.contains(&format!("[env: {var}")),
            "{var} missing from --help"
        );
    }
    assert!(help.contains("[default: 30000]"), "{help}");
}

#[test]
fn whitespace_alone_takes_the_default() {
    for var in VARIABLES {
        for blank in ["", " ", "\t \n"] {
            assert_eq!(ok(&[(var, blank)]), Settings::default(), "{var}={blank:?}");
        }
    }
}

#[test]
fn choices_ignore_case() {
    for (text, isolation) in [
        ("MONTY", Isolation::Monty),
        ("docker", Isolation::Docker),
        ("Sandbox", Isolation::Sandbox),
        (" Host_System ", Isolation::HostSystem),
    ] {
        assert_eq!(
            ok(&[("CODEMCP_ISOLATION", text)]).cpython.isolation,
            isolation
        );
    }
    for (text, fallback) in [
        ("AUTO", Fallback::Auto),
        ("Docker", Fallback::Docker),
        ("host", Fallback::Host),
        ("host-unsandboxed", Fallback::Host),
        ("sandbox", Fallback::Sandbox),
        ("none", Fallback::None),
    ] {
        assert_eq!(ok(&[("CODEMCP_FALLBACK", text)]).cpython.fallback, fallback);
    }
    for (text, placement) in [
        ("inprocess", MontyPlacement::InProcess),
        ("In-Process", MontyPlacement::InProcess),
        ("IN_PROCESS", MontyPlacement::InProcess),
        ("Pool", MontyPlacement::Pool),
    ] {
        assert_eq!(
            ok(&[("CODEMCP_MONTY", text)]).monty.monty_placement,
            Some(placement)
        );
    }
    assert_eq!(ok(&[("CODEMCP_OUTPUT", "JSON")]).output, OutputFormat::Json);
    assert_eq!(
        err(&[("CODEMCP_ISOLATION", "host")]),
        r#"CODEMCP_ISOLATION="host": expected one of monty, sandbox, docker, host_system"#
    );
    assert_eq!(
        err(&[("CODEMCP_FALLBACK", "always")]),
        r#"CODEMCP_FALLBACK="always": expected one of auto, sandbox, docker, host-unsandboxed (or host), none"#
    );
    assert_eq!(
        err(&[("CODEMCP_MONTY", "thread")]),
        r#"CODEMCP_MONTY="thread": expected inprocess or pool"#
    );
    assert_eq!(
        err(&[("CODEMCP_OUTPUT", "yaml")]),
        r#"CODEMCP_OUTPUT="yaml": expected compact or json"#
    );
}

#[test]
fn text_values_are_trimmed_but_the_token_is_kept_whole() {
    let s = ok(&[
        ("CODEMCP_HTTP_TOKEN", " t0k3n "),
        ("CODEMCP_PYTHON", " /opt/py/bin/python "),
        ("CODEMCP_MONTY_BIN", " /opt/monty "),
        ("CODEMCP_DOCKER_IMAGE", " local/worker:2 "),
    ]);
    assert_eq!(s.http.http_token.as_deref(), Some(" t0k3n "));
    assert_eq!(s.cpython.python, Some("/opt/py/bin/python".into()));
    assert_eq!(s.monty.monty_bin, Some("/opt/monty".into()));
    assert_eq!(s.cpython.docker_image, "local/worker:2");
}

#[test]
fn bytes_that_are_not_unicode_are_rejected() {
    use std::os::unix::ffi::OsStringExt;
    let flag = std::ffi::OsString::from_vec(b"--max-sessions=1\xff".to_vec());
    let err = Settings::from_flags([flag]).expect_err("a number with a bad byte");
    let rejected = Rejected::from_clap(&err).expect("a rejected setting");
    assert_eq!(rejected.var, "CODEMCP_MAX_SESSIONS");
    assert_eq!(rejected.flag, "--max-sessions");
    assert_eq!(rejected.value, "1\u{fffd}");
}

#[test]
fn a_bad_flag_is_named_by_clap() {
    let err = Settings::from_flags(["--exec-timeout-ms=abc"]).expect_err("not a number");
    assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
    let shown = err.to_string();
    assert!(
        shown.contains(
            "invalid value 'abc' for '--exec-timeout-ms <MS>': expected a whole number of milliseconds greater than zero"
        ),
        "{shown}"
    );
    let unknown = Settings::from_flags(["--exec-timeout=1"]).expect_err("no such flag");
    assert!(Rejected::from_clap(&unknown).is_none());
}

proptest! {
    #[test]
    fn whole_milliseconds_round_trip(ms in 1u64..=31_536_000_000) {
        let s = ok(&[("CODEMCP_TOOL_TIMEOUT_MS", &ms.to_string())]);
        prop_assert_eq!(s.upstream.tool_timeout, Duration::from_millis(ms));
    }

    #[test]
    fn arbitrary_values_never_panic(value in "\\PC{0,24}") {
        for var in ["CODEMCP_MONTY_MEM_LIMIT", "CODEMCP_EXEC_TIMEOUT_MS", "CODEMCP_ALLOWED_ORIGINS"] {
            let _ = with(&[(var, &value)]);
        }
    }
}
