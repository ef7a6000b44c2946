"""Stamps each line read from stdin with the seconds since start into LOG, then prints one summary
line: the step's wall time, the lines it printed and its longest silent gap (the time no line
came, the start and the end included), with the line that ended the gap.
Usage: COMMAND 2>&1 | python stamp_lines.py LOG NAME"""
import json
import sys
import time


def main(log_path, name):
    start = last = time.monotonic()
    lines, gap, gap_end = 0, 0.0, "(the first line)"
    with open(log_path, "w", encoding="utf-8") as log:
        for line in sys.stdin:
            now = time.monotonic()
            if now - last > gap:
                gap, gap_end = now - last, line.strip()[:120]
            last = now
            lines += 1
            log.write(f"{now - start:9.1f}  {line}")
            log.flush()
    end = time.monotonic()
    if end - last > gap:
        gap, gap_end = end - last, "(the end of the step)"
    summary = {"step": name, "wall_s": round(end - start, 1), "lines": lines, "longest_silent_gap_s": round(gap, 1),
               "gap_ended_by": gap_end}
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
