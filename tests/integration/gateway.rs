//! The calling contract end to end: codemcp over stdio, driven by an rmcp client,
//! in front of real upstream servers.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Setup, everything, filesystem, odd};

#[tokio::test]
async fn one_tool_lists_every_upstream_function_with_a_signature() {
    let root = tempfile::tempdir().expect("tempdir");
    let setup = Setup::new(json!({"everything": everything(), "fs": filesystem(root.path())}));
    let client = setup.stdio(&[]).await;
    let description = client.description().await;
    assert!(description.contains("everything_get_sum("), "{description}");
    assert!(description.contains("fs_read_text_file("), "{description}");
    assert!(description.contains("search_tools"), "{description}");
    // Stable for the same catalog: a second gateway describes it byte for byte
    // the same at once, from the remembered catalog, before its servers join.
    let second = setup.stdio(&[]).await;
    let again = second.description().await;
    assert_eq!(description, again);
}

#[tokio::test]
async fn a_snippet_makes_several_upstream_calls_in_one_turn() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let ran = client
        .exec(
            "total = 0\nfor a, b in [(1, 2), (3, 4)]:\n    total += int(everything_get_sum(a=a, b=b).split()[-1].rstrip('.'))\nprint(total)",
        )
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.stdout(), "10\n");
    assert_eq!(ran.structured["tool_calls"], 2);
    let engine = ran.structured["engine"].as_str().unwrap_or_default();
    // Whichever engine CODEMCP_ISOLATION / CODEMCP_MONTY chose for this run of the suite.
    assert!(
        [
            "monty",
            "monty-pool",
            "cpython-host",
            "cpython-docker",
            "cpython-sandbox"
        ]
        .contains(&engine),
        "{engine}"
    );
    // Positional arguments follow the signature order.
    let ran = client.exec("everything_get_sum(40, 2)").await;
    assert_eq!(ran.result(), "The sum of 40 and 2 is 42.", "{}", ran.text);
    // Wrong arguments are a TypeError raised at the call, not a gateway failure.
    let ran = client.exec("everything_get_sum(a=1, c=2)").await;
    assert!(ran.is_error);
    assert_eq!(ran.error_type(), "TypeError", "{}", ran.text);
}

#[tokio::test]
async fn state_persists_within_a_session() {
    let setup = Setup::new(json!({}));
    let client = setup.stdio(&[]).await;
    assert!(
        !client
            .exec("import json\nx = 41\ndef inc(v):\n    return v + 1")
            .await
            .is_error
    );
    let ran = client.exec("json.dumps({'v': inc(x)})").await;
    assert_eq!(ran.result(), "{\"v\": 42}", "{}", ran.text);
    // A genuine error keeps the session.
    assert!(client.exec("y = 5\n1/0").await.is_error);
    assert_eq!(client.exec("x + y").await.result(), 46);
    // `result` returns a value from code ending in a statement.
    assert_eq!(
        client
            .exec("result = {'n': x}\nprint('set')")
            .await
            .result(),
        &json!({"n": 41})
    );
}

#[tokio::test]
async fn tool_errors_raise_catchable_exceptions_with_the_upstream_text() {
    let root = tempfile::tempdir().expect("tempdir");
    let setup = Setup::new(json!({"fs": filesystem(root.path())}));
    let client = setup.stdio(&[]).await;
    let code = "try:\n    fs_read_text_file(path='/etc/passwd')\nexcept ToolError as e:\n    print('caught', str(e))";
    let ran = client.exec(code).await;
    assert!(!ran.is_error, "{}", ran.text);
    assert!(
        ran.stdout().contains("caught") && ran.stdout().contains("Access denied"),
        "{}",
        ran.text
    );
    let ran = client
        .exec(
            "try:\n    fs_read_text_file(path='/nope')\nexcept RuntimeError:\n    print('runtime')",
        )
        .await;
    assert_eq!(ran.stdout(), "runtime\n", "{}", ran.text);
    // Uncaught, the tool's text reaches the agent.
    let ran = client.exec("fs_read_text_file(path='/etc/passwd')").await;
    assert!(ran.is_error);
    assert!(
        ran.error_message().contains("Access denied"),
        "{}",
        ran.text
    );
}

#[tokio::test]
async fn structured_results_are_dicts_and_text_results_are_strings() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("a.txt"), "hello").expect("write");
    let setup = Setup::new(json!({"everything": everything(), "fs": filesystem(root.path())}));
    let client = setup.stdio(&[]).await;
    let path = root.path().join("a.txt");
    let ran = client
        .exec(&format!(
            "r = fs_read_text_file(path={:?})\n[isinstance(r, dict), r['content']]",
            path.display().to_string()
        ))
        .await;
    assert_eq!(ran.result(), &json!([true, "hello"]), "{}", ran.text);
    let ran = client
        .exec("isinstance(everything_echo(message='hi'), str)")
        .await;
    assert_eq!(ran.result(), true, "{}", ran.text);
}

#[tokio::test]
async fn awaited_and_gathered_calls_run_concurrently() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    client.exec("odd_slow(ms=1)").await; // warm the upstream
    let started = Instant::now();
    let ran = client
        .exec("import asyncio\nr = await asyncio.gather(odd_slow(ms=300), odd_slow(ms=300), odd_slow(ms=300))\nr")
        .await;
    let gathered = started.elapsed();
    assert_eq!(
        ran.result(),
        &json!(["slept 300", "slept 300", "slept 300"]),
        "{}",
        ran.text
    );
    assert!(
        gathered < Duration::from_millis(800),
        "three 300 ms calls took {gathered:?}"
    );
    let ran = client.exec("x = await odd_slow(ms=5)\nx").await;
    assert_eq!(ran.result(), "slept 5", "{}", ran.text);
}

#[tokio::test]
async fn a_tool_call_not_awaited_in_async_code_returns_its_value() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    // The call in the helper is plain, the helpers are gathered: as in CPython
    // with an ordinary function, the helper gets the value.
    let ran = client
        .exec(
            "import asyncio\nasync def labelled(ms):\n    return ms, odd_slow(ms=ms).upper()\n\
             await asyncio.gather(labelled(1), labelled(2))",
        )
        .await;
    assert_eq!(
        ran.result(),
        &json!([[1, "SLEPT 1"], [2, "SLEPT 2"]]),
        "{}",
        ran.text
    );
    // Calls kept in a list that is gathered later stay concurrent.
    let started = Instant::now();
    let ran = client
        .exec("import asyncio\npending = [odd_slow(ms=300) for _ in range(3)]\nawait asyncio.gather(*pending)")
        .await;
    assert_eq!(
        ran.result(),
        &json!(["slept 300", "slept 300", "slept 300"]),
        "{}",
        ran.text
    );
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(800),
        "three 300 ms calls took {took:?}"
    );
}

#[tokio::test]
async fn functions_defined_in_an_earlier_snippet_keep_their_call_sites_decisions() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    let ran = client
        .exec(
            "async def plain(ms):\n    return odd_slow(ms=ms)[:5]\n\
             async def awaiting(ms):\n    return await odd_slow(ms=ms)",
        )
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    let ran = client
        .exec("import asyncio\nawait asyncio.gather(plain(1), awaiting(2), plain(3))")
        .await;
    assert_eq!(
        ran.result(),
        &json!(["slept", "slept 2", "slept"]),
        "{}",
        ran.text
    );
}

#[tokio::test]
async fn search_and_describe_are_available_in_the_sandbox() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let ran = client
        .exec("hits = search_tools('sum of two numbers', limit=3)\n[h['name'] for h in hits]")
        .await;
    let names = ran.result().as_array().cloned().unwrap_or_default();
    assert!(names.contains(&json!("everything_get_sum")), "{}", ran.text);
    let ran = client.exec("d = describe_tool('everything_get_sum')\n[d['name'], 'a' in d['input_schema']['properties']]").await;
    assert_eq!(
        ran.result(),
        &json!(["everything_get_sum", true]),
        "{}",
        ran.text
    );
}

#[tokio::test]
async fn the_sdk_stub_is_served_as_a_resource() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let resources = client
        .service
        .list_all_resources()
        .await
        .expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == "codemcp://sdk.pyi"));
    let read = client
        .service
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "codemcp://sdk.pyi",
        ))
        .await
        .expect("resources/read");
    let text = serde_json::to_string(&read).expect("json");
    assert!(text.contains("def everything_get_sum("), "{text}");
}

#[tokio::test]
async fn an_upstream_that_dies_is_restarted_on_the_next_call() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    let first = client.exec("odd_pid()").await.result().clone();
    let ran = client.exec("odd_crash()").await;
    assert!(ran.is_error, "{}", ran.text);
    let second = client.exec("odd_pid()").await;
    assert!(!second.is_error, "{}", second.text);
    assert_ne!(second.result(), &first, "a new process answers");
}

#[tokio::test]
async fn upstream_tool_changes_reach_our_clients() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    assert!(!client.description().await.contains("odd_late_tool"));
    let ran = client.exec("odd_add_tool(name='late_tool')").await;
    assert!(!ran.is_error, "{}", ran.text);
    assert!(
        client.wait_changed(Duration::from_secs(10)).await,
        "no notifications/tools/list_changed"
    );
    // The server's own join may have been announced too (a notification
    // already pending), so look again after each one, within a bound.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !client.description().await.contains("odd_late_tool") {
        assert!(
            std::time::Instant::now() < deadline,
            "the description never named odd_late_tool"
        );
        client.wait_changed(Duration::from_secs(1)).await;
    }
    assert_eq!(client.exec("odd_late_tool()").await.result(), "late_tool");
}

#[tokio::test]
async fn broken_upstreams_are_skipped_without_blocking_the_others() {
    let setup = Setup::new(json!({
        "everything": everything(),
        "missing_cmd": {"command": "/nonexistent/codemcp-test-binary"},
        "missing_env": {"command": "node", "args": ["${CODEMCP_TEST_SURELY_UNSET}"]},
        "hangs": {"command": "sleep", "args": ["60"], "timeout": 2}
    }));
    let started = Instant::now();
    let client = setup.stdio(&[]).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let ran = client.exec("everything_get_sum(a=1, b=1)").await;
    assert!(!ran.is_error, "{}", ran.text);
}

#[tokio::test]
async fn upstream_children_die_with_the_gateway() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[]).await;
    let child = client
        .exec("odd_pid()")
        .await
        .result()
        .as_u64()
        .expect("pid");
    let gateway = client.pid.expect("gateway pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &gateway.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while support::process_alive(child) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !support::process_alive(child),
        "upstream {child} outlived the gateway"
    );
}

#[tokio::test]
async fn slow_upstream_calls_time_out_as_tool_errors() {
    let setup = Setup::new(json!({"odd": odd(json!({}))}));
    let client = setup.stdio(&[("CODEMCP_TOOL_TIMEOUT_MS", "500")]).await;
    // Timed from an upstream that is up: the first call waits for its handshake.
    client.exec("odd_add_numbers(a=0, b=0)").await;
    let started = Instant::now();
    let ran = client.exec("try:\n    odd_slow(ms=5000)\nexcept ToolError as e:\n    print('timeout:', e)\nodd_add_numbers(a=1, b=2)").await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(ran.stdout().contains("did not answer"), "{}", ran.text);
    assert_eq!(ran.result(), 3.0, "the run continues after the timeout");
}

#[tokio::test]
async fn streamable_http_upstreams_with_headers() {
    let (mut server, url) = support::odd_over_http().await;
    let setup = Setup::new(json!({"remote": {"url": url, "headers": {"X-Test": "{env:HOME}"}}}));
    let client = setup.stdio(&[]).await;
    let ran = client.exec("remote_v2_lookup(key='k')").await;
    assert_eq!(ran.result(), "value-of-k", "{}", ran.text);
    let _ = server.kill().await;
}

#[tokio::test]
async fn one_snippet_joins_data_from_three_real_servers() {
    let root = tempfile::tempdir().expect("tempdir");
    for (name, n) in [("a.csv", 3), ("b.csv", 4), ("c.csv", 5)] {
        std::fs::write(
            root.path().join(name),
            format!("item,qty\nx,{n}\ny,{}\n", n * 10),
        )
        .expect("write");
    }
    let graph = root.path().join("memory.jsonl");
    let setup = Setup::new(json!({
        "fs": filesystem(root.path()),
        "memory": support::memory(&graph),
        "everything": everything()
    }));
    let client = setup.stdio(&[]).await;
    let code = format!(
        r#"
memory_create_entities(entities=[{{"name": "b.csv", "entityType": "file", "observations": ["important"]}}])
important = [e["name"] for e in memory_search_nodes(query="important")["entities"]]
total = 0
for name in ["a.csv", "b.csv", "c.csv"]:
    text = fs_read_text_file(path={root:?} + "/" + name)["content"]
    qty = sum(int(line.split(",")[1]) for line in text.strip().split("\n")[1:])
    total += qty
print(important, total)
everything_get_sum(a=total, b=0)
"#,
        root = root.path().display().to_string()
    );
    let ran = client.exec(&code).await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.stdout(), "['b.csv'] 132\n");
    assert_eq!(ran.result(), "The sum of 132 and 0 is 132.");
    assert_eq!(ran.structured["tool_calls"], 6);
}

#[tokio::test]
async fn a_progress_token_gets_a_notification_per_completed_tool_call() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let args = json!({"code": "for i in range(3):\n    everything_get_sum(a=i, b=1)\n'done'"});
    let mut params = rmcp::model::CallToolRequestParams::new("execute_python")
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::String("p1".into()),
    ));
    params.meta = Some(meta);
    let result = client.service.call_tool(params).await.expect("tools/call");
    assert_eq!(support::unpack(result).result(), "done");
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.progress().len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(client.progress(), vec![1.0, 2.0, 3.0]);
}
