#!/usr/bin/env node
// Runs the codemcp binary from the platform package npm installed beside this
// one (`<name>-<os>-<cpu>`, an optional dependency; esbuild and biome ship the
// same way). The binary gets stdin/stdout as they are (MCP over stdio), and
// the signals a client sends reach it, so it shuts its upstreams down itself.
"use strict";
const { spawn } = require("child_process");
const path = require("path");

const pkg = require("../package.json");
const platformPkg = `${pkg.name}-${process.platform}-${process.arch}`;

function binaryPath() {
  try {
    return require.resolve(`${platformPkg}/bin/codemcp`);
  } catch (_) {
    const known = Object.keys(pkg.optionalDependencies || {}).join(", ");
    process.stderr.write(
      `codemcp: no binary for ${process.platform}-${process.arch} (looked for the npm package ${platformPkg}; ` +
        `published: ${known || "none"}). Without npm's --no-optional it is installed automatically; ` +
        `otherwise install codemcp with cargo or pip (see the README).\n`,
    );
    process.exit(1);
  }
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (err) => {
  process.stderr.write(`codemcp: could not start ${path.basename(binaryPath())}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
