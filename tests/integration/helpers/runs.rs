//! Saved helpers inside the run's own assembly (issue 38): their prelude
//! travels on the run as its own part, so the code the engine runs, the call
//! sites it reads and the lines it reports agree. `codemcp exec` with the
//! operator's helpers directory and the real odd upstream, on Monty
//! in-process, Monty in the worker pool and the CPython worker. Each test is
//! named for what it stops.

use std::path::Path;

use serde_json::json;

use crate::support::{self, Setup, bin, monty_bin, odd};

/// The engines a run can take: name and settings.
fn engines() -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let monty_bin = monty_bin().to_string_lossy().into_owned();
    let python = support::worker_python().to_string_lossy().into_owned();
    let monty = |placement: &str| {
        vec![
            ("CODEMCP_ISOLATION", "monty".to_owned()),
            ("CODEMCP_MONTY", placement.to_owned()),
            ("CODEMCP_MONTY_BIN", monty_bin.clone()),
            ("CODEMCP_FALLBACK", "none".to_owned()),
        ]
    };
    vec![
        ("monty in-process", monty("inprocess")),
        ("monty pool", monty("pool")),
        (
            "cpython",
            vec![
                ("CODEMCP_ISOLATION", "host_system".to_owned()),
                ("CODEMCP_PYTHON", python),
            ],
        ),
    ]
}

/// `codemcp exec code` on `engine` with the operator's `helpers` (file name
/// without `.py`, source); its stdout and stderr.
fn exec(engine: &[(&str, String)], helpers: &[(&str, &str)], code: &str) -> String {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("shared");
    write_helpers(&dir, helpers);
    let setup = Setup::new(json!({ "odd": odd(json!({})) }));
    let mut command = std::process::Command::new(bin());
    for var in super::CLEARED {
        command.env_remove(var);
    }
    let output = command
        .arg("--config")
        .arg(setup.config())
        .args(["exec", code])
        .env("XDG_STATE_HOME", state.path())
        .env("CODEMCP_HELPERS_DIR", &dir)
        .env("CODEMCP_LOG", "error")
        .envs(engine.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("codemcp exec");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub(super) fn write_helpers(dir: &Path, helpers: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, source) in helpers {
        std::fs::write(dir.join(format!("{name}.py")), source).unwrap();
    }
}

const DOUBLE: (&str, &str) = ("double", "def double(x):\n    return x * 2\n");

#[test]
fn a_helper_beside_awaited_tool_calls_does_not_turn_their_futures_into_values() {
    // The call sites were read on the snippet alone and looked up in the
    // prelude + snippet: `'int' object can't be awaited`.
    let code = "import asyncio\na, b = await asyncio.gather(odd_add_numbers(a=1, b=2), odd_add_numbers(a=3, b=4))\n[int(double(a)), int(b)]";
    for (engine, env) in engines() {
        let out = exec(&env, &[DOUBLE], code);
        assert!(out.contains("result: [6,7]"), "{engine}: {out}");
    }
}

#[test]
fn a_helper_called_inside_a_coroutine_gets_values_and_awaits_its_own_calls() {
    // A sync helper's tool call inside a coroutine wants the value; an async
    // helper's awaited call wants the future: both are read in the prelude.
    let helpers = [
        (
            "add_twice",
            "def add_twice(a, b):\n    return 2 * odd_add_numbers(a=a, b=b)\n",
        ),
        (
            "fetch",
            "async def fetch(a):\n    return await odd_add_numbers(a=a, b=1)\n",
        ),
    ];
    let code = "import asyncio\n\nasync def main():\n    x = add_twice(1, 2)\n    y, z = await asyncio.gather(fetch(1), fetch(2))\n    return [int(x), int(y), int(z)]\n\nawait main()";
    for (engine, env) in engines() {
        let out = exec(&env, &helpers, code);
        assert!(out.contains("result: [6,2,3]"), "{engine}: {out}");
    }
}

#[test]
fn traceback_lines_of_the_agents_code_do_not_count_the_helpers_in_front() {
    let boom = ("boom", "def boom(x):\n    y = 1\n    return y / x\n");
    let code = "a = double(1)\nb = 2\nboom(0)\n";
    for (engine, env) in engines() {
        let out = exec(&env, &[DOUBLE, boom], code);
        assert!(out.contains("ZeroDivisionError"), "{engine}: {out}");
        // The snippet's line 3 (the prelude has 5 lines before it), and the
        // helper's own line named as the helper's.
        assert!(out.contains("  line 3, in <module>"), "{engine}: {out}");
        assert!(out.contains("helper line 3, in boom"), "{engine}: {out}");
        assert!(!out.contains("line 8"), "{engine}: {out}");
    }
}
