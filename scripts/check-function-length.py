#!/usr/bin/env python3
"""Lists the functions in src/ and tools/ longer than the limit (80 lines, STYLE.md): a function
definition starts at column 0 and ends at the first `}` in column 0 after it (clang-format's
layout). Exit status 1 when one is over. Usage: check-function-length.py [LIMIT]"""
import pathlib
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 80
ROOT = pathlib.Path(__file__).resolve().parents[1]
NOT_FUNCTIONS = re.compile(r"^(namespace|struct|class|enum|union|extern|template\s*<[^>]*>\s*(struct|class))\b")

over = []
for source in sorted(list((ROOT / "src").rglob("*.cpp")) + list((ROOT / "tools").rglob("*.cpp"))):
    lines = source.read_text().splitlines()
    start = None
    for number, line in enumerate(lines, start=1):
        if start is None:
            if line and not line[0].isspace() and line.rstrip().endswith("{") and "(" in line \
                    and not NOT_FUNCTIONS.match(line) and not line.startswith(("#", "//")) and "=" not in line.split("(")[0]:
                start = number
            elif line and not line[0].isspace() and "(" in line and not line.rstrip().endswith((";", "{", "}")) \
                    and not NOT_FUNCTIONS.match(line) and not line.startswith(("#", "//")):
                # A signature spread over several lines: the body starts where the `{` ends a line.
                for ahead in range(number, min(number + 6, len(lines))):
                    if lines[ahead].rstrip().endswith(";"):
                        break
                    if lines[ahead].rstrip().endswith("{"):
                        start = number
                        break
        elif line.startswith("}"):
            length = number - start + 1
            if length > LIMIT:
                over.append((length, f"{source.relative_to(ROOT)}:{start}: {lines[start - 1].strip()[:90]}"))
            start = None
for length, where in sorted(over, reverse=True):
    print(f"{length:4d} lines  {where}")
print(f"{len(over)} function(s) over {LIMIT} lines", file=sys.stderr)
sys.exit(1 if over else 0)
