#!/usr/bin/env python3
"""Rejects an #include that reaches outside the folders a src/ folder may link (src/README.md).

Each folder may include itself and the folders below it in the dependency order; a violation is
printed as file:line and the script exits 1.
"""
import pathlib
import re
import sys

ALLOWED = {
    "base": {"base"},
    "tensor": {"base", "tensor"},
    "format": {"base", "tensor", "format"},
    "backend": {"base", "tensor", "backend"},
    "tokenizer": {"base", "tensor", "format", "tokenizer"},
    "grammar": {"base", "grammar"},
    "model": {"base", "tensor", "format", "backend", "model"},
    "cache": {"base", "tensor", "backend", "model", "cache"},
    "sample": {"base", "tensor", "sample", "grammar"},
    "spec": {"base", "tensor", "backend", "model", "cache", "sample", "spec"},
    "sched": {"base", "tensor", "format", "backend", "model", "cache", "sample", "grammar", "spec", "tokenizer", "sched"},
    "server": {"base", "tensor", "format", "backend", "model", "cache", "sample", "grammar", "spec", "tokenizer", "sched", "server"},
    "router": {"base", "router"},
    "loadgen": {"base", "loadgen"},
    "control": {"base", "control"},
    "chain": {"base", "chain"},
    "cli": None,  # the binary composes everything
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
# Single files or subfolders a folder may include beyond its table entry: the router's front end
# reuses the HTTP server and metrics registry of server/ (plain HTTP, no engine).
ALLOWED_PATHS = {"router": ("server/http/", "server/metrics.h", "cache/prefix_hash.h")}
INCLUDE_PATH = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main() -> int:
    src = pathlib.Path(__file__).resolve().parent.parent / "src"
    bad = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cc", ".cu", ".cuh"}:
            continue
        folder = path.relative_to(src).parts[0]
        if folder not in ALLOWED:
            bad.append(f"{path}: folder '{folder}' is not in scripts/check_includes.py's table")
            continue
        allowed = ALLOWED[folder]
        if allowed is None:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) not in allowed:
                path_m = INCLUDE_PATH.match(line)
                if path_m and path_m.group(1).startswith(ALLOWED_PATHS.get(folder, ())):
                    continue
                bad.append(f"{path}:{n}: '{folder}' may not include '{m.group(1)}/'")
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"check_includes: {len(bad)} violation(s)", file=sys.stderr)
        return 1
    print("check_includes: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
