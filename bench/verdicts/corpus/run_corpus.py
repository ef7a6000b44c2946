#!/usr/bin/env python3
"""Issue 22's false-alarm corpus: every module of models/ through onnxproof.prove() with both
exporters, in a worker process restarted after any run that kills or hangs it (a crash or hang
of one never stops the rest), each verdict judged (judgments.py).

    ONNXPROOF_ENGINE=build/bin/onnxproof PYTHONPATH=python \\
        .venv/bin/python bench/verdicts/corpus/run_corpus.py [--only NAME,...] \\
        [--exporters torchscript,dynamo] [--work /tmp/onnxproof-corpus] [--timeout 240]

Per run it records the verdict, the error and warning findings (code and first message), whether
prove() raised (any exception but UsageError is a crash; UsageError is recorded as such),
the seconds, and the run folder (WORK/runs/NAME.EXPORTER: report.json, export.log).
Writes results.json and RESULTS.md next to this file; with --only, the other entries of the
last results.json are kept.
--report only rewrites RESULTS.md from results.json and judgments.py.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
RESULTS_JSON = os.path.join(HERE, "results.json")
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
EXPORTERS = ("torchscript", "dynamo")


# --- one run, in its own process -------------------------------------------------------------

def _finding_dict(finding):
    return {"code": finding.code, "severity": finding.severity, "step": finding.step,
            "message": finding.message[:400], "where": finding.where[:200]}


def child(name, exporter, out, result_path, localize=False):
    """Proves one model with one exporter; writes the outcome as JSON to result_path."""
    sys.path.insert(0, HERE)
    result = {"name": name, "exporter": exporter, "folder": out}
    start = time.perf_counter()
    try:
        import models
        import onnxproof
        from onnxproof.core.errors import UsageError
        model, args, options = models.build(name)
        options = dict(options)
        kwargs = options.pop("kwargs", None)
        try:
            report = onnxproof.prove(model, args, kwargs, exporter=exporter, out=out, quiet=True, localize=localize,
                                     **options)
        except UsageError as error:
            result.update(raised="UsageError", crash=False, message=str(error)[:600])
        else:
            result.update(verdict=report.verdict, raised=None, crash=False, steps=dict(report.steps))
            result["findings"] = [_finding_dict(f) for f in report.findings if f.severity in ("error", "warning")]
            result["info_codes"] = sorted({f.code for f in report.findings if f.severity == "info"})
            shapes = [a for a in report.headline if a.question.startswith("Does the exported model accept")]
            if shapes:  # which declared axes were proved dynamic and which the model fixes (issue 40)
                result["shape_headline"] = f"{shapes[0].answer}: {shapes[0].evidence}"[:600]
    except Exception as error:  # noqa: BLE001 -- what the corpus measures: prove() raising
        result.update(raised=type(error).__name__, crash=True, message=str(error)[:600],
                      traceback=traceback.format_exc()[-3000:])
    result["seconds"] = round(time.perf_counter() - start, 2)
    with open(result_path, "w") as handle:
        json.dump(result, handle, indent=1)


# --- the corpus ------------------------------------------------------------------------------

class Worker:
    """One Python process that imports torch once and proves runs one after another (importing
    torch costs ~12 s on the shared machine, more than most proofs): a job is a line on its
    stdin, its answer the result file. A run that hangs past the timeout or kills the process
    is recorded as a crash and the worker is started again (in its own process group, so the
    engine it started goes with it)."""

    def __init__(self, work):
        self.work = work
        self.process = None
        self.log = None

    def start(self):
        self.log = open(os.path.join(self.work, "worker.log"), "a")
        # The worker runs in the work folder: a relative PYTHONPATH (the docstring's PYTHONPATH=python)
        # would no longer find onnxproof there, and every run would "crash" with ModuleNotFoundError.
        environment = dict(os.environ)
        if environment.get("PYTHONPATH"):
            environment["PYTHONPATH"] = os.pathsep.join(os.path.abspath(part) if part else part
                                                        for part in environment["PYTHONPATH"].split(os.pathsep))
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], cwd=self.work,
                                        stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True, env=environment)

    def stop(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.process = None
        self.log.close()

    def prove(self, job, result_path, timeout):
        """None when the result file was written, else what stopped it: 'timeout' or the exit status."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(result_path):
                return None
            if self.process.poll() is not None:
                time.sleep(0.2)
                if os.path.exists(result_path):
                    return None
                code = self.process.returncode
                self.stop()
                return f"process exit {code}"
            time.sleep(0.1)
        self.stop()
        return "timeout"


def worker_loop():
    for line in sys.stdin:
        job = json.loads(line)
        partial = job["result"] + ".partial"
        child(job["name"], job["exporter"], job["out"], partial, job.get("localize", False))
        os.replace(partial, job["result"])
        print(f"done {job['name']} {job['exporter']}", flush=True)


def run_one(worker, name, exporter, work, timeout, localize=False):
    out = os.path.join(work, "runs", f"{name}.{exporter}")
    result_path = os.path.join(work, "results", f"{name}.{exporter}.json")
    os.makedirs(os.path.dirname(result_path), exist_ok=True)
    if os.path.exists(result_path):
        os.remove(result_path)
    start = time.perf_counter()
    stopped = worker.prove({"name": name, "exporter": exporter, "out": out, "result": result_path,
                            "localize": localize}, result_path,
                           timeout)
    seconds = round(time.perf_counter() - start, 2)
    if stopped is None:
        with open(result_path) as handle:
            result = json.load(handle)
    else:  # the process died (a segfault, an abort) or hung: a crash as far as the user sees
        result = {"name": name, "exporter": exporter, "folder": out, "crash": True, "raised": stopped,
                  "message": f"the run {'hung past the timeout' if stopped == 'timeout' else 'killed the process'}"
                             " (see worker.log)"}
    result["wall_seconds"] = seconds
    return result


def outcome(result):
    if result.get("crash"):
        return "crash"
    if result.get("raised"):
        return "usage-error"
    return result.get("verdict", "?")


def short(result):
    """The verdict with its error codes (warnings in brackets)."""
    kind = outcome(result)
    if kind in ("crash", "usage-error"):
        return f"{kind}: {result.get('raised')}"
    errors = sorted({f["code"] for f in result.get("findings", []) if f["severity"] == "error"})
    warnings = sorted({f["code"] for f in result.get("findings", []) if f["severity"] == "warning"})
    text = kind + (f" {','.join(errors)}" if errors else "")
    return text + (f" [{','.join(warnings)}]" if warnings else "")


def main(argv=None):
    global RESULTS_JSON, RESULTS_MD
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--work", default="/tmp/onnxproof-corpus")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per run")
    parser.add_argument("--localize", action="store_true",
                        help="prove with localize=True (after a parity failure: the localization step)")
    parser.add_argument("--results", default="", help="the results file (default: next to this script)")
    parser.add_argument("--report", action="store_true", help="only rewrite RESULTS.md")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=4, metavar=("NAME", "EXPORTER", "OUT", "RESULT"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.results and options.results != RESULTS_JSON:  # a side run (e.g. --localize) keeps the main table intact
        RESULTS_JSON, RESULTS_MD = options.results, os.path.splitext(options.results)[0] + ".md"
    if options.child:
        child(*options.child)
        return 0
    if options.worker:
        worker_loop()
        return 0
    sys.path.insert(0, HERE)
    import models
    previous = {}
    if os.path.exists(RESULTS_JSON):
        with open(RESULTS_JSON) as handle:
            previous = {(r["name"], r["exporter"]): r for r in json.load(handle)["runs"]}
    if not options.report:
        names = [n for n, _ in models.MODELS]
        if options.only:
            wanted = [n.strip() for n in options.only.split(",") if n.strip()]
            unknown = sorted(set(wanted) - set(names))
            if unknown:
                parser.error(f"unknown models: {', '.join(unknown)}")
            names = [n for n in names if n in wanted]
        exporters = [e.strip() for e in options.exporters.split(",") if e.strip()]
        work = os.path.abspath(options.work)
        os.makedirs(work, exist_ok=True)
        total = len(names) * len(exporters)
        started = time.perf_counter()
        worker = Worker(work)
        try:
            _run_all(names, exporters, work, options, worker, previous, models, started, total)
        finally:
            worker.stop()
    _write_json(previous, models)
    write_markdown(previous, models)
    return 0


def _run_all(names, exporters, work, options, worker, previous, models, started, total):
    for index, name in enumerate(names):
        for exporter in exporters:
            result = run_one(worker, name, exporter, work, options.timeout, options.localize)
            result["family"] = models.FAMILY.get(name, "")
            previous[(name, exporter)] = result
            done = index * len(exporters) + exporters.index(exporter) + 1
            print(f"[{done}/{total} {time.perf_counter() - started:.0f}s] {name} {exporter}: {short(result)} "
                  f"({result['wall_seconds']}s)", flush=True)
            _write_json(previous, models)


def _write_json(results, models):
    order = {n: i for i, (n, _) in enumerate(models.MODELS)}
    runs = sorted(results.values(), key=lambda r: (order.get(r["name"], 10 ** 6), r["exporter"]))
    for run in runs:
        run.pop("traceback_lines", None)
    with open(RESULTS_JSON, "w") as handle:
        json.dump({"schema": "onnxproof.corpus/1", "runs": runs}, handle, indent=1)


# --- judgments and the table -----------------------------------------------------------------

LABELS = ("pass", "true-defect", "false-alarm", "crash", "miss", "unprovable", "unjudged")


def judge(result, judgments):
    """(class, why): pass | crash | false-alarm | true-defect | unprovable | unjudged."""
    kind = outcome(result)
    if kind == "crash":
        return "crash", result.get("message", "")[:200]
    key = (result["name"], result["exporter"])
    judged = judgments.JUDGED.get(key) or judgments.JUDGED.get((result["name"], "*"))
    if kind == "pass":
        # A pass where the export was judged wrong (not merely untranslatable) is a miss.
        if judged and key in judgments.WRONG_OUTPUT:
            return "miss", "passed, but this export was judged wrong: " + judged[1]
        return "pass", ""
    if judged and judged[0] == "unprovable":
        # Only the verdict issue 40 asks for (error, REFERENCE_NOT_FINITE) is the right answer here.
        codes = {f["code"] for f in result.get("findings", []) if f["severity"] == "error"}
        if kind != "error" or "REFERENCE_NOT_FINITE" not in codes:
            return "unjudged", "judged unprovable for an error REFERENCE_NOT_FINITE verdict; this one differs"
    if judged:
        return judged[0], judged[1]
    return "unjudged", ""


def write_markdown(results, models):
    sys.path.insert(0, HERE)
    import judgments
    order = {n: i for i, (n, _) in enumerate(models.MODELS)}
    runs = sorted(results.values(), key=lambda r: (order.get(r["name"], 10 ** 6), r["exporter"]))
    classes = {}
    for run in runs:
        run["judgment"], run["why"] = judge(run, judgments)
        classes.setdefault(run["judgment"], []).append(run)
    names = sorted({r["name"] for r in runs}, key=lambda n: order.get(n, 10 ** 6))
    by_key = {(r["name"], r["exporter"]): r for r in runs}
    lines = ["# Issue 22 corpus (extended by issues 40 and 57): verdicts of onnxproof.prove() on correct modules", "",
             f"{len(names)} modules (bench/verdicts/corpus/models/), {len(runs)} runs "
             "(`exporter=\"torchscript\"` and `exporter=\"dynamo\"`, default opset, `localize=False`).", "",
             "Rerun: `ONNXPROOF_ENGINE=build/bin/onnxproof PYTHONPATH=python .venv/bin/python "
             "bench/verdicts/corpus/run_corpus.py` (add `--only a,b`, `--exporters dynamo`, `--work DIR`).", "",
             "| outcome | runs |", "| --- | --- |"]
    for label in LABELS:
        lines.append(f"| {label} | {len(classes.get(label, []))} |")
    lines += ["", "A **crash** is prove() raising anything but UsageError (or the run dying / timing out). A "
              "**false alarm** is a fail or error verdict on a correct model (onnxproof's bug). A **true defect** "
              "is a non-pass verdict where the export really is wrong or cannot run (a translation that differs, "
              "an op ONNX Runtime lacks, an export that fails), explained in one line. **Unprovable** (issue 40) is an "
              "error verdict that is the right answer on a correct, faithfully exported model: PyTorch's outputs hold "
              "no finite value, so nothing can be proved; neither the export's defect nor onnxproof's.", ""]
    for label, title in (("crash", "Crashes"), ("false-alarm", "False alarms"), ("true-defect", "True defects"),
                         ("unprovable", "Unprovable (error is the right verdict)"), ("miss", "Misses"),
                         ("unjudged", "Not yet judged")):
        if not classes.get(label):
            continue
        lines += [f"## {title}", "", "| model | exporter | verdict | why |", "| --- | --- | --- | --- |"]
        for run in classes[label]:
            lines.append(f"| {run['name']} | {run['exporter']} | {_cell(short(run))} | {_cell(run['why'])} |")
        lines.append("")
    lines += _issue40_section(runs, classes, models, judgments)
    lines += [getattr(judgments, "ISSUE57_NOTES", "")]
    lines += [getattr(judgments, "NOTES", ""), "## All runs", "", "| family | model | torchscript | dynamo | seconds (ts / dynamo) |",
              "| --- | --- | --- | --- | --- |"]
    for name in names:
        cells = []
        secs = []
        for exporter in EXPORTERS:
            run = by_key.get((name, exporter))
            if run is None:
                cells.append("-")
                secs.append("-")
                continue
            mark = {"pass": "", "true-defect": " (defect)", "false-alarm": " (FALSE ALARM)", "crash": " (CRASH)",
                    "miss": " (MISS)", "unprovable": " (unprovable)", "unjudged": " (?)"}[run["judgment"]]
            cells.append(_cell(short(run)) + mark)
            secs.append(str(run.get("wall_seconds", "-")))
        lines.append(f"| {models.FAMILY.get(name, '')} | {name} | {cells[0]} | {cells[1]} | {' / '.join(secs)} |")
    with open(RESULTS_MD, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    for label in LABELS:
        print(f"{label}: {len(classes.get(label, []))}")




def _issue40_section(runs, classes, models, judgments):
    """Issue 40's cases (models.ISSUE40_EXPECT): each run with the code a correct proof shows and
    whether it showed it, the shape headline's axes, and the counts of these runs alone."""
    expect = getattr(models, "ISSUE40_EXPECT", {})
    mine = [run for run in runs if run["name"] in expect]
    if not mine:
        return []
    count = {label: sum(1 for run in mine if run["judgment"] == label) for label in LABELS}
    lines = ["## Issue 40 cases", "",
             f"{len(expect)} modules added for issue 40 (models/issue40*.py), {len(mine)} runs: "
             "declared axes the model fixes (expected: `AXIS_FIXED_BY_MODEL` warning, the rest proved) or couples "
             "to another axis (expected: a plain pass, the axes varied together), outputs ending in inf / NaN "
             "(expected: `REFERENCE_NOT_FINITE` error where PyTorch's outputs hold no finite value, else a pass "
             "comparing NaN/Inf by class), random operators (expected: `RANDOM_OUTPUT` warning, the deterministic "
             "outputs proved).", "",
             "| outcome | issue 40 runs | whole corpus |", "| --- | --- | --- |"]
    for label in LABELS:
        lines.append(f"| {label} | {count[label]} | {len(classes.get(label, []))} |")
    lines += ["", "| model | exporter | verdict | expected code | seen | judgment | declared axes (headline) |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for run in mine:
        code = expect[run["name"]]
        codes = {f["code"] for f in run.get("findings", [])}
        seen = ("yes" if code in codes else "no") if code else ("-" if not codes & {
            "AXIS_FIXED_BY_MODEL", "RANDOM_OUTPUT", "REFERENCE_NOT_FINITE"} else "unexpected")
        axes = run.get("shape_headline", "")
        axes = "; ".join(part.strip() for part in axes.split(";")
                         if "proved dynamic" in part or "fixed by the model" in part)
        lines.append(f"| {run['name']} | {run['exporter']} | {_cell(short(run))} | {code or '(pass)'} | {seen} | "
                     f"{run['judgment']} | {_cell(axes)} |")
    lines.append("")
    notes = getattr(judgments, "ISSUE40_NOTES", "")
    return lines + ([notes] if notes else [])


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    sys.exit(main())
