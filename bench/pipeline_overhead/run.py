"""onnxproof pipeline beside the script a user writes by hand (by_hand.py): the same model, the
same cases, paired runs (the two alternate, so load drifts hit both), medians and ratios.

    .venv/bin/python bench/pipeline_overhead/run.py build/bin/onnxproof OUT_DIR [--pairs 5] SPEC...

Per run: wall time, CPU time (user + system of the process and the children it waited for) and
peak memory (the largest resident set of any one process of the run, from wait4). Prints a
Markdown table for bench/RESULTS.md; each pair's figures go to OUT_DIR/pairs.jsonl.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")]
import by_hand  # noqa: E402 -- beside this file


def measure(command, env):
    """(exit code, wall s, cpu s, peak RSS MiB) of one command."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        print(stderr[-2000:], file=sys.stderr)
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def pipeline_command(binary, spec, out):
    command = [binary, "pipeline", "--model", spec, "--exporter", "dynamo", "--out", out]
    if not by_hand.is_file_spec(spec):
        return command  # a family: the pipeline knows its inputs
    defaults = by_hand.spec_module(spec).DEFAULTS  # the model is not built here
    for item in defaults["inputs"]:
        low, high = item.get("range", (None, None))
        bounds = f":{low}..{high - 1}" if low is not None else ""
        command += ["--input", f"{item['name']}={'x'.join(map(str, item['dims']))}:{item['dtype']}{bounds}"]
    for axis in defaults["dynamic"]:
        command += ["--dynamic", f"{axis['input']}:{axis['axis']}={axis['label']}"]
    return command


def case_summary(cases_path):
    """The pipeline's cases (reference/cases.json) in a few words: their count and batch sizes."""
    with open(cases_path) as handle:
        cases = json.load(handle)["cases"]
    batches = sorted({case["sizes"].get("batch") for case in cases if "batch" in case["sizes"]})
    return f"{len(cases)} (batch {','.join(map(str, batches)) or '-'})"


def run_pairs(binary, spec, root, pairs, env, log):
    """Medians and ratios of `pairs` paired runs of the pipeline and the by-hand script."""
    out = os.path.join(root, spec.replace(":", "_").replace("/", "_"))
    shutil.rmtree(out, ignore_errors=True)
    code, *_ = measure(pipeline_command(binary, spec, out), env)  # warm-up; finds the cases
    cases_path = out + ".cases.json"
    shutil.copyfile(os.path.join(out, "reference", "cases.json"), cases_path)
    sizes = case_summary(cases_path)
    by_hand = [sys.executable, os.path.join(HERE, "by_hand.py"), spec, os.path.join(root, "by_hand.onnx"), cases_path]
    rows = {"pipeline": [], "by_hand": []}
    for pair in range(pairs):
        order = ["pipeline", "by_hand"] if pair % 2 == 0 else ["by_hand", "pipeline"]
        for who in order:
            shutil.rmtree(out, ignore_errors=True)
            command = pipeline_command(binary, spec, out) if who == "pipeline" else by_hand
            result = measure(command, env)
            rows[who].append(result)
            log.write(json.dumps({"spec": spec, "pair": pair, "who": who, "exit": result[0], "wall_s": result[1],
                                  "cpu_s": result[2], "peak_mib": result[3]}) + "\n")
            log.flush()
            print(f"{spec} pair {pair} {who}: exit {result[0]}, {result[1]:.1f} s wall, {result[2]:.1f} s cpu, "
                  f"{result[3]:.0f} MiB", file=sys.stderr, flush=True)
    median = {who: [statistics.median(r[i] for r in runs) for i in (1, 2, 3)] for who, runs in rows.items()}
    wall_ratios = [p[1] / h[1] for p, h in zip(rows["pipeline"], rows["by_hand"])]
    return sizes, median, statistics.median(wall_ratios), rows["pipeline"][-1][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("out_root")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("specs", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out_root, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
    print("| model | cases | pipeline wall s | by hand wall s | wall ratio (median of pairs) | "
          "CPU ratio | pipeline peak MiB | by hand peak MiB | memory ratio | pipeline exit |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with open(os.path.join(args.out_root, "pairs.jsonl"), "a") as log:
        for spec in args.specs:
            sizes, median, ratio, code = run_pairs(args.binary, spec, args.out_root, args.pairs, env, log)
            p, h = median["pipeline"], median["by_hand"]
            print(f"| {spec} | {sizes} | {p[0]:.1f} | {h[0]:.1f} | {ratio:.2f} | "
                  f"{p[1] / h[1]:.2f} | {p[2]:.0f} | {h[2]:.0f} | {p[2] / h[2]:.2f} | {code} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
