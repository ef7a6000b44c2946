#!/usr/bin/env python3
"""Checks that every CTest test of a build folder has a label and that docs/testing.md names each
label in its list (a backquoted `label`): what `ctest -L LABEL` selects is documented. Lists what
is missing and exits 1. Standard library only.

  scripts/check-test-labels.py BUILD_DIR"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv):
    build = argv[1] if len(argv) > 1 else str(ROOT / "build")
    listed = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True,
                            check=True)
    tests = json.loads(listed.stdout)["tests"]
    labels, unlabelled = set(), []
    for test in tests:
        found = [value for p in test.get("properties", []) if p["name"] == "LABELS" for value in p["value"]]
        labels.update(found)
        if not found:
            unlabelled.append(test["name"])
    # The label table's first column: "| `unit` | ..."
    documented = set(re.findall(r"^\| `([a-z0-9_-]+)` \|", (ROOT / "docs" / "testing.md").read_text(), re.MULTILINE))
    undocumented = sorted(labels - documented)
    for name in unlabelled:
        print(f"no label: {name}")
    for label in undocumented:
        print(f"label not in docs/testing.md: {label}")
    print(f"{len(tests)} tests, {len(labels)} labels: {', '.join(sorted(labels))}")
    return 1 if unlabelled or undocumented else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
