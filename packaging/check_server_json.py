#!/usr/bin/env python3
"""Checks the rendered server.json the way the MCP Registry would (schema
2025-12-11 constraints and its ownership markers), against the artifacts it
names, so a release publishes nothing the registry refuses:

  check_server_json.py SERVER_JSON --wheel WHL --npm LAUNCHER.tgz --mcpb BUNDLE [--crate-readme README.md]

The crate README check only warns: crates.io strips HTML comments, so the
registry needs a visible `mcp-name: NAME` line in the README cargo publishes.
"""
import hashlib
import json
import re
import sys
import tarfile
import zipfile

RANGE = re.compile(r"^(latest|[\^~<>=*]|.*\s-\s)|[xX*]$|\|\|")


def fail(msg):
    raise SystemExit("server.json: " + msg)


def check_shape(s):
    if not re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", s.get("name", "")):
        fail("name must be reverse-DNS with exactly one slash: %r" % s.get("name"))
    if not 1 <= len(s.get("description", "")) <= 100:
        fail("description must be 1 to 100 characters (is %d)" % len(s.get("description", "")))
    if not s.get("version") or RANGE.search(s["version"]):
        fail("version must be one exact version: %r" % s.get("version"))
    if not s["$schema"].endswith("/2025-12-11/server.schema.json"):
        fail("unexpected $schema " + s["$schema"])
    for p in s["packages"]:
        for field in ("registryType", "identifier", "transport"):
            if field not in p:
                fail("a package lacks " + field)
        if p["transport"] != {"type": "stdio"}:
            fail("packages here run over stdio")
        if p["registryType"] in ("npm", "pypi", "cargo") and (not p.get("version") or RANGE.search(p["version"])):
            fail("%s package needs an exact version" % p["registryType"])
        if p.get("version") not in (None, s["version"]):
            fail("%s package version %s differs from the server's %s" % (p["registryType"], p["version"], s["version"]))


def check_artifacts(s, args):
    name = s["name"]
    by_type = {p["registryType"]: p for p in s["packages"]}
    with tarfile.open(args["--npm"]) as t:
        pkg = json.load(t.extractfile("package/package.json"))
    if pkg.get("mcpName") != name or pkg["name"] != by_type["npm"]["identifier"]:
        fail("npm package %s has mcpName %r, want %r" % (pkg["name"], pkg.get("mcpName"), name))
    with zipfile.ZipFile(args["--wheel"]) as z:
        meta = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    if not re.search(r"mcp-name: %s(\s|-->|$)" % re.escape(name), meta):
        fail("the wheel's description has no 'mcp-name: %s' marker" % name)
    dist = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip()
    if dist != by_type["pypi"]["identifier"]:
        fail("wheel is %s, server.json names %s" % (dist, by_type["pypi"]["identifier"]))
    with open(args["--mcpb"], "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    mcpb = by_type["mcpb"]
    if mcpb.get("fileSha256") != sha or not mcpb["identifier"].endswith("/" + args["--mcpb"].rsplit("/", 1)[-1]):
        fail("the mcpb entry does not name %s with sha256 %s" % (args["--mcpb"], sha))
    if "mcp" not in mcpb["identifier"]:
        fail("the registry wants 'mcp' in an MCPB URL")
    readme = args.get("--crate-readme")
    if readme and not re.search(r"mcp-name: %s(\s|$)" % re.escape(name), open(readme).read()):
        print("server.json: warning: %s has no visible 'mcp-name: %s' line; the registry needs it "
              "to accept the cargo package (docs/releasing.md)" % (readme, name), file=sys.stderr)


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    s = json.load(open(argv[0]))
    args = dict(zip(argv[1::2], argv[2::2]))
    check_shape(s)
    check_artifacts(s, args)
    print("server.json OK: %s %s, %d packages" % (s["name"], s["version"], len(s["packages"])), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
