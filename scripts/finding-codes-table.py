#!/usr/bin/env python3
"""Prints the README's table of finding codes from data/finding_codes.json (the one registry)."""
import json
import pathlib

registry = json.loads((pathlib.Path(__file__).resolve().parents[1] / "data" / "finding_codes.json").read_text())
print("| code | default severity | step | meaning | fix |")
print("| --- | --- | --- | --- | --- |")
for entry in registry["codes"]:
    print(f"| `{entry['code']}` | {entry['severity']} | {entry['step']} | {entry['meaning']} | {entry['hint']} |")
