#!/usr/bin/env python3
"""Prints the pinned .debs of codemcp's worker image as rows of
crates/image/recipe/ARCH.debs: for each `package=version` on the command line,
the pool path, size and SHA-256 from a Debian `Packages` index (decompressed).
The `ldconfig` row (libc-bin) is the same with its first word changed.

A maintainer's tool for updating the recipe, not run at build time: the binary
carries the rows and needs no apt index.

Usage: scripts/resolve-worker-debs.py Packages-amd64 pkg=ver ... > rows
  (Packages from $MIRROR/dists/forky/main/binary-ARCH/Packages.xz)
"""
import sys


def stanzas(path):
    with open(path, encoding="utf-8") as index:
        fields = {}
        for line in index:
            if line == "\n":
                if fields:
                    yield fields
                fields = {}
            elif not line.startswith(" ") and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def main():
    index, wanted = sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:])
    found = {}
    for fields in stanzas(index):
        name = fields.get("Package")
        if name in wanted and fields.get("Version") == wanted[name]:
            found[name] = fields
    missing = sorted(set(wanted) - set(found))
    if missing:
        sys.exit(f"not in {index}: " + ", ".join(f"{m}={wanted[m]}" for m in missing))
    for name in wanted:
        f = found[name]
        print(f'root {name} {f["Version"]} {f["Size"]} {f["SHA256"]} {f["Filename"]}')


if __name__ == "__main__":
    main()
