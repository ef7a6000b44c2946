"""onnxproof pipeline beside the script a user writes by hand (by_hand.py): the same model, the
same cases, paired runs (the two alternate, so load drifts hit both), medians and ratios.

    .venv/bin/python bench/pipeline_overhead/run.py build/bin/onnxproof OUT_DIR [--pairs 5] SPEC...

Per run: wall time, CPU time (user + system of the process and the children it waited for), peak
memory as the largest resident set of any one process of the run (from wait4), and the peak of
the whole process tree's summed PSS (sampled every 0.2 s: a forked child's shared pages counted
once). --exporter torchscript runs both with the TorchScript exporter; --opset N exports both at N;
--prove measures onnxproof.prove() (prove_spec.py) in the pipeline's place. Prints a Markdown table for
bench/RESULTS.md; each pair's figures go to OUT_DIR/pairs.jsonl.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")]
import by_hand  # noqa: E402 -- beside this file


def tree_pss_mib(root):
    """The summed proportional set size (PSS, shared pages split between their processes) of
    `root` and every process below it, in MiB: what the run holds of the machine at this moment."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as handle:
                total += sum(int(line.split()[1]) for line in handle if line.startswith("Pss:"))
        except OSError:
            pass
    return total / 1024


def measure(command, env):
    """(exit code, wall s, cpu s, peak RSS MiB of the largest process, peak summed PSS MiB of the
    process tree, sampled every 0.2 s) of one command."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=env)
    tree_peak = [0.0]
    sampling = threading.Event()

    def sample():
        while not sampling.wait(0.2):
            tree_peak[0] = max(tree_peak[0], tree_pss_mib(child.pid))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = child.stderr.read().decode(errors="replace")  # until the command closes it (exits)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    sampling.set()
    sampler.join()
    child.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        print(stderr[-2000:], file=sys.stderr)
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, tree_peak[0]


def pipeline_command(binary, spec, out, exporter, opset=None, prove=False):
    if prove:  # onnxproof.prove() in a script of its own (the engine it finds: ONNXPROOF_ENGINE)
        return [sys.executable, os.path.join(HERE, "prove_spec.py"), spec, out]
    command = [binary, "pipeline", "--model", spec, "--exporter", exporter, "--out", out]
    if opset:
        command += ["--opset", str(opset)]
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


def run_pairs(binary, spec, root, pairs, env, log, exporter, opset, cases=None, prove=False):
    """Medians and ratios of `pairs` paired runs of the pipeline and the by-hand script."""
    out = os.path.join(root, spec.replace(":", "_").replace("/", "_"))
    shutil.rmtree(out, ignore_errors=True)
    cases_path = out + ".cases.json"
    if cases:  # the cases of an earlier run of the same model: no warm-up
        shutil.copyfile(cases, cases_path)
    else:
        measure(pipeline_command(binary, spec, out, exporter, opset, prove), env)  # warm-up; finds the cases
        shutil.copyfile(os.path.join(out, "reference", "cases.json"), cases_path)
    sizes = case_summary(cases_path)
    by_hand = [sys.executable, os.path.join(HERE, "by_hand.py"), spec, os.path.join(root, "by_hand.onnx"), cases_path]
    rows = {"pipeline": [], "by_hand": []}
    for pair in range(pairs):
        order = ["pipeline", "by_hand"] if pair % 2 == 0 else ["by_hand", "pipeline"]
        for who in order:
            shutil.rmtree(out, ignore_errors=True)
            command = pipeline_command(binary, spec, out, exporter, opset, prove) if who == "pipeline" else by_hand
            result = measure(command, env)
            rows[who].append(result)
            log.write(json.dumps({"spec": spec, "exporter": exporter, "pair": pair, "who": who, "exit": result[0],
                                  "wall_s": result[1], "cpu_s": result[2], "peak_mib": result[3],
                                  "tree_pss_mib": result[4]}) + "\n")
            log.flush()
            print(f"{spec} pair {pair} {who}: exit {result[0]}, {result[1]:.1f} s wall, {result[2]:.1f} s cpu, "
                  f"{result[3]:.0f} MiB, tree {result[4]:.0f} MiB", file=sys.stderr, flush=True)
    median = {who: [statistics.median(r[i] for r in runs) for i in (1, 2, 3, 4)] for who, runs in rows.items()}
    wall_ratios = [p[1] / h[1] for p, h in zip(rows["pipeline"], rows["by_hand"])]
    return sizes, median, statistics.median(wall_ratios), rows["pipeline"][-1][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("out_root")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--exporter", default="dynamo", choices=["dynamo", "torchscript"],
                        help="the pipeline's --exporter and the by-hand script's (BY_HAND_EXPORTER)")
    parser.add_argument("--prove", action="store_true", help="onnxproof.prove() (prove_spec.py) in the "
                                                                 "pipeline's place")
    parser.add_argument("--cases", help="reference/cases.json of an earlier pipeline run of the (one) SPEC: "
                                           "no warm-up run")
    parser.add_argument("--opset", type=int, help="both export at this opset (the pipeline's --opset, BY_HAND_OPSET)")
    parser.add_argument("specs", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out_root, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"),
               BY_HAND_EXPORTER=args.exporter, BY_HAND_OPSET=str(args.opset or ""),
               ONNXPROOF_ENGINE=os.path.abspath(args.binary))
    print("| model | exporter | cases | pipeline wall s | by hand wall s | wall ratio (median of pairs) | "
          "CPU ratio | largest process MiB (pipeline / by hand) | memory ratio | process tree PSS MiB "
          "(pipeline / by hand) | tree ratio | pipeline exit |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: |")
    with open(os.path.join(args.out_root, "pairs.jsonl"), "a") as log:
        for spec in args.specs:
            sizes, median, ratio, code = run_pairs(args.binary, spec, args.out_root, args.pairs, env, log,
                                                   args.exporter, args.opset, args.cases, args.prove)
            p, h = median["pipeline"], median["by_hand"]
            print(f"| {spec} | {args.exporter} | {sizes} | {p[0]:.1f} | {h[0]:.1f} | {ratio:.2f} | "
                  f"{p[1] / h[1]:.2f} | {p[2]:.0f} / {h[2]:.0f} | {p[2] / h[2]:.2f} | {p[3]:.0f} / {h[3]:.0f} | "
                  f"{p[3] / h[3]:.2f} | {code} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
