// ts_sdk.mjs: the client-matrix probe for the TypeScript SDK's Client, used
// programmatically: 1.x (`@modelcontextprotocol/sdk`, TS_SDK=1) or 2.x
// (`@modelcontextprotocol/client`, TS_SDK=2, --client legacy|auto: its version
// negotiation, whose default is legacy). TS_SDK_DIR is the package's directory.
// Same arguments and report as the Python probes (see common.py).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const CELLS = ["connect", "list", "call", "state_implicit", "state_handle", "approval",
  "list_changed", "progress", "cancellation", "resources"];
const CALL = "6 * 7", SET_N = "n = 20", GET_N = "n + 22", SET_M = "m = 5", GET_M = "m * 2";
const APPROVAL = "odd_send_email(to='a@b.c', subject='hi')";
const PROGRESS = "for i in range(3):\n    odd_add_numbers(a=i, b=1)\n'done'";
const LONG = "for i in range(300):\n    odd_counter()\n    odd_slow(ms=100)\n'finished'";
const COUNTER = "odd_counter()";

const arg = (name, fallback = "") => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const A = { target: arg("target"), url: arg("url"), command: JSON.parse(arg("command", "[]")),
  client: arg("client", "legacy"), tag: arg("tag", "t") };
const MAJOR = process.env.TS_SDK;
const DIR = process.env.TS_SDK_DIR;
const VERSION = JSON.parse(readFileSync(join(DIR, "package.json"), "utf8")).version;
const load = (rel) => import(pathToFileURL(join(DIR, rel)).href);

let sdk;
if (MAJOR === "1") {
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }, types] = await Promise.all([
    load("dist/esm/client/index.js"), load("dist/esm/client/stdio.js"),
    load("dist/esm/client/streamableHttp.js"), load("dist/esm/types.js")]);
  sdk = { Client, StdioClientTransport, StreamableHTTPClientTransport, types };
} else {
  const [main, stdio] = await Promise.all([load("dist/index.mjs"), load("dist/stdio.mjs")]);
  sdk = { ...main, StdioClientTransport: stdio.StdioClientTransport };
}

const out = { client: MAJOR === "1" ? `TypeScript SDK ${VERSION}` : `TypeScript SDK ${VERSION} (${A.client})`, cells: {} };
const set = (cell, status, note = "") => { out.cells[cell] = { status, note: String(note).slice(0, 300) }; };
const check = (cell, ok, what, note = "") => (ok ? set(cell, "pass", note) : set(cell, "fail", what));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const within = (ms, promise) => Promise.race([promise,
  sleep(ms).then(() => { throw new Error(`no answer within ${ms / 1000} s`); })]);

let asked = 0, progress = 0, changed = 0, negotiated = null;

async function connect() {
  const info = { name: "codemcp-matrix", version: "0" };
  const capabilities = { elicitation: MAJOR === "1" ? {} : { form: {} } };
  let client;
  if (MAJOR === "1") {
    client = new sdk.Client(info, { capabilities });
    client.setNotificationHandler(sdk.types.ToolListChangedNotificationSchema, async () => { changed++; });
    client.setRequestHandler(sdk.types.ElicitRequestSchema, async () => { asked++; return { action: "accept", content: {} }; });
  } else {
    client = new sdk.Client(info, { capabilities, versionNegotiation: { mode: A.client },
      listChanged: { tools: { autoRefresh: false, onChanged: () => { changed++; } } } });
    client.setRequestHandler("elicitation/create", async () => { asked++; return { action: "accept", content: {} }; });
  }
  const transport = A.target === "stdio"
    ? new sdk.StdioClientTransport({ command: A.command[0], args: A.command.slice(1), env: { ...process.env }, stderr: "inherit" })
    : new sdk.StreamableHTTPClientTransport(new URL(A.url));
  // 1.x keeps the negotiated version to itself; it hands it to a transport that asks.
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => { negotiated = v; setVersion?.(v); };
  await within(60000, client.connect(transport));
  return client;
}

async function call(client, code, extra = {}, options = {}) {
  const result = await client.callTool({ name: "execute_python", arguments: { code, ...extra } }, undefined,
    { timeout: 120000, ...options });
  return result.structuredContent ?? {};
}
// 2.x takes the options second (no result schema).
async function call2(client, code, extra = {}, options = {}) {
  const result = await client.callTool({ name: "execute_python", arguments: { code, ...extra } },
    { timeout: 120000, ...options });
  return result.structuredContent ?? {};
}
const callTool = MAJOR === "1" ? call : call2;

async function cell(name, body, ms = 60000) {
  try {
    await within(ms, body());
  } catch (e) {
    set(name, "fail", `${e?.name ?? "Error"}: ${e?.message ?? e}`);
  }
  if (!out.cells[name]) set(name, "fail", "the probe recorded no verdict");
}

async function main() {
  let client;
  await cell("connect", async () => {
    client = await connect();
    out.protocol = client.getNegotiatedProtocolVersion?.() ?? negotiated;
    set("connect", "pass");
  });
  if (!client) return;
  await cell("list", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    check("list", names.length === 1 && names[0] === "execute_python", `tools: ${names}`);
  });
  await cell("call", async () => {
    const s = await callTool(client, CALL);
    check("call", s.result === 42, `structuredContent ${JSON.stringify(s)}`);
  });
  await cell("state_implicit", async () => {
    await callTool(client, SET_N);
    const s = await callTool(client, GET_N);
    if (s.result !== 42 && A.target === "http" && String(out.protocol) >= "2026-07-28") {
      return set("state_implicit", "unsupported", "2026-07-28 over HTTP has no MCP session: each call without the handle starts a new session");
    }
    check("state_implicit", s.result === 42, `second call: ${JSON.stringify(s.error ?? s)}`);
  });
  await cell("state_handle", async () => {
    const handle = (await callTool(client, SET_M)).session;
    if (!handle) return set("state_handle", "fail", "the result named no session");
    const other = await connect();
    try {
      const s = await callTool(other, GET_M, { session: handle });
      check("state_handle", s.result === 10, `on a new connection: ${JSON.stringify(s.error ?? s)}`);
    } finally {
      await other.close();
    }
  });
  await cell("approval", async () => {
    const s = await callTool(client, APPROVAL);
    check("approval", asked > 0 && s.result === "sent to a@b.c", `asked ${asked} times; ${JSON.stringify(s.error ?? s)}`);
  });
  await cell("list_changed", async () => {
    const name = `late_${A.tag}`;
    let before = changed; // earlier changes (the upstream coming up) do not count
    await callTool(client, `odd_add_tool(name='${name}')`);
    let listed = false;
    for (let i = 0; i < 100 && !listed; i++) {
      await sleep(200);
      if (changed === before) continue;
      before = changed;
      listed = ((await client.listTools()).tools[0]?.description ?? "").includes(`odd_${name}(`);
    }
    check("list_changed", listed, "no tools/list_changed naming the new tool within 20 s",
      MAJOR === "1" ? "" : "ClientOptions.listChanged");
  }, 40000);
  await cell("progress", async () => {
    const s = await callTool(client, PROGRESS, {}, { onprogress: () => { progress++; } });
    await sleep(300);
    check("progress", s.result === "done" && progress >= 1, `${progress} progress notifications; ${JSON.stringify(s)}`);
  });
  await cell("cancellation", async () => {
    const abort = new AbortController();
    const long = callTool(client, LONG, {}, { signal: abort.signal }).then(() => "finished", () => "aborted");
    await sleep(1500);
    abort.abort("the matrix cancels");
    if ((await long) === "finished") return set("cancellation", "fail", "the long run finished before it was cancelled");
    await sleep(1000);
    const a = (await callTool(client, COUNTER)).result;
    await sleep(1000);
    const b = (await callTool(client, COUNTER)).result;
    process.stderr.write(`probe: cancellation: counter ${a} then ${b}\n`);
    check("cancellation", Number.isInteger(a) && b === a + 1, "the run kept calling tools after the cancellation", "AbortSignal");
  });
  await cell("resources", async () => {
    const uris = (await client.listResources()).resources.map((r) => r.uri);
    if (!uris.includes("codemcp://sdk.pyi")) return set("resources", "fail", `resources: ${uris}`);
    const text = (await client.readResource({ uri: "codemcp://sdk.pyi" })).contents[0]?.text ?? "";
    check("resources", text.includes("def odd_send_email("), "codemcp://sdk.pyi lacks the signatures");
  });
  await client.close().catch(() => {});
}

try {
  await main();
} catch (e) {
  out.teardown_error = String(e);
}
for (const c of CELLS) if (!out.cells[c]) set(c, "fail", "not reached");
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
