#!/usr/bin/env python3
"""Checks that every C++ file of the repository is formatted as .clang-format says, with the
pinned clang-format of .venv-tools (python/requirements-tools.lock); lists the files that are not
and exits 1. `--fix` formats them in place instead. Standard library only.

  scripts/check-format.py [--fix] [CLANG_FORMAT]"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("src", "include", "tools", "tests", "fuzz", "bench")


def sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            # fuzz/corpus holds inputs, not code; build trees are not the repository's.
            if path.suffix in (".cpp", ".h") and "corpus" not in path.parts and path.is_file():
                yield path


def main(argv):
    fix = "--fix" in argv
    rest = [a for a in argv[1:] if a != "--fix"]
    tool = rest[0] if rest else str(ROOT / ".venv-tools" / "bin" / "clang-format")
    files = [str(p) for p in sources()]
    if not pathlib.Path(tool).is_file():
        print(f"no clang-format at {tool}: scripts/setup.sh makes .venv-tools (python/requirements-tools.lock)")
        return 1
    if fix:
        return subprocess.run([tool, "-i", *files]).returncode
    done = subprocess.run([tool, "--dry-run", "--Werror", *files], capture_output=True, text=True)
    unformatted = sorted({line.split(":", 1)[0] for line in done.stderr.splitlines() if ": error: " in line})
    for name in unformatted:
        print(f"not formatted: {pathlib.Path(name).relative_to(ROOT)}")
    if done.returncode and not unformatted:
        print(done.stderr.strip() or f"{tool} failed (exit {done.returncode})")
    if done.returncode:
        print(f"{len(unformatted)} file(s) differ from .clang-format; scripts/check-format.py --fix formats them")
    return 1 if done.returncode else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
