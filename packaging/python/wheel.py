#!/usr/bin/env python3
"""Writes a wheel that carries the codemcp binary, laid out as maturin's `bin`
bindings lay out ruff's and uv's: the executable in `<dist>-<version>.data/scripts/`,
so installers put it on PATH, and no Python code at all. Tagged `py3-none-<platform>`,
the platform from the newest GLIBC symbol version the binary needs (as auditwheel
would); maturin itself is not used (docs/releasing.md says why).

  wheel.py BINARY DIST_NAME VERSION README OUT_DIR   -> prints the wheel's path
"""
import base64
import hashlib
import os
import platform
import re
import subprocess
import sys
import zipfile

EPOCH = (1980, 1, 1, 0, 0, 0)  # reproducible: the same inputs give the same bytes


def platform_tag(binary):
    machine = platform.machine()
    if sys.platform != "linux":
        raise SystemExit("wheel.py: only Linux wheels are built here (got %s)" % sys.platform)
    symbols = subprocess.run(["objdump", "-T", binary], check=True, capture_output=True, text=True).stdout
    versions = [tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+)", symbols)]
    major, minor = max(versions, default=(2, 17))
    return "manylinux_%d_%d_%s" % (major, minor, machine)


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def monty_worker_requirement():
    """The Monty pool worker the wheel depends on, so pip and uvx install it
    beside codemcp: the version pinned in crates/image/recipe/wheels.pins
    (the one place its pins are kept), which is the linked monty crate's."""
    pins = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "image", "recipe", "wheels.pins")
    for line in open(pins):
        fields = line.split()
        if fields and fields[0] == "pydantic-monty-runtime":
            return "pydantic-monty-runtime==" + fields[1]
    raise SystemExit("%s names no pydantic-monty-runtime" % pins)


def main(binary, dist, version, readme, out_dir):
    norm = re.sub(r"[-_.]+", "_", dist).lower()
    tag = "py3-none-" + platform_tag(binary)
    info = "%s-%s.dist-info" % (norm, version)
    metadata = (
        "Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
        "Summary: A code-mode MCP gateway: many upstream MCP servers behind one execute_python tool\n"
        "Keywords: mcp,model-context-protocol,gateway,code-mode,sandbox\n"
        "Classifier: Environment :: Console\nClassifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Programming Language :: Rust\n"
        "License: MIT OR Apache-2.0\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        "Classifier: License :: OSI Approved :: Apache Software License\n"
        "Requires-Python: >=3.8\n"
        "Requires-Dist: %s\n"
        "Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM\n\n"
        % (dist, version, monty_worker_requirement())
    ) + open(readme).read()
    wheel = "Wheel-Version: 1.0\nGenerator: codemcp packaging/python/wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    files = [
        ("%s-%s.data/scripts/codemcp" % (norm, version), open(binary, "rb").read(), 0o755),
        (info + "/METADATA", metadata.encode(), 0o644),
        (info + "/WHEEL", wheel.encode(), 0o644),
    ]
    record = "".join("%s,%s,%d\n" % (name, digest(data), len(data)) for name, data, _ in files)
    files.append((info + "/RECORD", (record + info + "/RECORD,,\n").encode(), 0o644))
    path = os.path.join(out_dir, "%s-%s-%s.whl" % (norm, version, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            entry = zipfile.ZipInfo(name, date_time=EPOCH)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    print(path)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
