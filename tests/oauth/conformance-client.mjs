// The client the conformance suite launches for its auth/* client scenarios:
// `node conformance-client.mjs SERVER_URL` (the suite appends the URL and sets
// MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT).
//
// It drives the real codemcp CLI as a user would: writes a config with the
// server, runs `codemcp auth login conf`, plays the browser (fetches the
// printed authorization URL and follows its redirects to codemcp's loopback
// callback), then runs `codemcp exec` to call the server's tool with the
// stored token. CODEMCP_BIN names the binary.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const bin = process.env.CODEMCP_BIN;

const oauth = {
  // The document the suite's authorization server accepts as a client id
  // (SEP-991); used only where the server advertises support for it.
  clientMetadataUrl: "https://conformance-test.local/client-metadata.json",
};
if (context.client_id) oauth.clientId = context.client_id;
if (context.client_secret) oauth.clientSecret = context.client_secret;
if (scenario.startsWith("auth/client-credentials")) oauth.grant = "client_credentials";

const dir = mkdtempSync(join(tmpdir(), "codemcp-oauth-"));
const config = join(dir, "mcp.json");
writeFileSync(config, JSON.stringify({ mcpServers: { conf: { url, oauth, timeout: 20 } } }));
const env = { ...process.env, XDG_DATA_HOME: join(dir, "data"), CODEMCP_FALLBACK: "none" };

function run(args, onStderrLine) {
  return new Promise((resolve) => {
    const child = spawn(bin, ["--config", config, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let pending = "";
    child.stdout.on("data", (d) => { out += d; process.stderr.write(d); });
    child.stderr.on("data", (d) => {
      process.stderr.write(d);
      err += d;
      pending += d;
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines) onStderrLine?.(line);
    });
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

// The "browser": follow the authorization URL; the suite's server approves
// at once and redirects to codemcp's callback on 127.0.0.1.
async function browse(line) {
  const match = line.match(/^\s+(https?:\/\/\S+)$/);
  if (!match) return;
  try {
    const response = await fetch(match[1], { redirect: "follow" });
    process.stderr.write(`[browser] ${response.status} ${response.url}\n`);
  } catch (e) {
    process.stderr.write(`[browser] failed: ${e}\n`);
  }
}

// With CODEMCP_OAUTH_TRANSCRIPT set, also record what a user sees around
// the login (check and status before, status after, logout) for tests/integration/oauth.rs.
const record = process.env.CODEMCP_OAUTH_TRANSCRIPT;
const steps = {};
if (record) {
  steps.check_before = await run(["check"]);
  steps.status_before = await run(["auth", "status"]);
}
const login = await run(["auth", "login", "conf", "--no-browser", "--timeout", "20"], browse);
steps.login = login;
if (login.code !== 0) process.exit(login.code ?? 1);
const exec = await run(["exec", "print(conf_test_tool())"]);
steps.exec = exec;
if (record) {
  steps.token_file = login.out.match(/token saved in (\S+)/)?.[1];
  // An access token past its expiry with a refresh token: rmcp refreshes it
  // and the new token must land in the file.
  const edit = (change) => {
    const file = JSON.parse(readFileSync(steps.token_file, "utf8"));
    change(file.credentials);
    writeFileSync(steps.token_file, JSON.stringify(file));
  };
  const token = () => JSON.parse(readFileSync(steps.token_file, "utf8")).credentials;
  edit((c) => { c.token_received_at = 1; c.token_response.refresh_token = "refresh-before"; });
  const before = token().token_response.access_token;
  steps.refresh_exec = await run(["exec", "print(conf_test_tool())"]);
  steps.refreshed = { before, after: token().token_response.access_token, received_at: token().token_received_at };
  steps.status_after = await run(["auth", "status"]);
  // Expired with nothing to refresh it: the upstream is skipped with "log in again".
  edit((c) => { c.token_received_at = 1; delete c.token_response.refresh_token; });
  steps.status_expired = await run(["auth", "status"]);
  steps.expired_exec = await run(["exec", "print(conf_test_tool())"]);
  steps.logout = await run(["auth", "logout", "conf"]);
  steps.status_after_logout = await run(["auth", "status"]);
  writeFileSync(record, JSON.stringify(steps, null, 2));
}
process.exit(exec.code ?? 1);
