"""Since when (`onnxproof bisect-release`, issue 64): a release regression planted across every
ONNX Runtime release fetched, bisected, timed. Each release gets a folder of a deployment cache of
its own (its library linked, as an application embeds it); from the planted release on, the
application's session-config turns on ONNX Runtime's GELU approximation, so a model whose erf
GELU ONNX Runtime fuses fails from there on. The pipeline proves the oldest and the newest release
(--target), then `bisect-release RUN` must name the planted release and GeluApproximation.
Prints a Markdown table: planted release, releases in between, proved, found, optimizer, wall
(median of the repeats; each repeat on a fresh copy of the run).

    scripts/fetch-onnxruntime-versions.sh 1.17 1.18 1.19 1.20 1.21 1.22 1.23 1.24 1.25 1.31   # once
    .venv/bin/python bench/runtime_releases/bisect_planted.py [--engine build/bin/onnxproof] [--repeats 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

CACHE = os.environ.get("ONNXPROOF_ORT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnxproof", "onnxruntime")
PLANTED = "optimization.enable_gelu_approximation=1"
MODEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures",
                          "release_models.py")

def numbers(version):
    return [int(part) for part in version.split(".")]


def fetched():
    found = [name for name in os.listdir(CACHE)
             if os.path.isfile(os.path.join(CACHE, name, "libonnxruntime.so.1")) and name.count(".") == 2]
    return sorted(found, key=numbers)


def deployments(work, releases, planted):
    cache = os.path.join(work, f"deployments-{planted}")
    for version in releases:
        os.makedirs(os.path.join(cache, version))
        os.symlink(os.path.join(CACHE, version, "libonnxruntime.so.1"),
                   os.path.join(cache, version, "libonnxruntime.so.1"))
        if numbers(version) >= numbers(planted):
            with open(os.path.join(cache, version, "session-config"), "w") as stream:
                stream.write(PLANTED + "\n")
    return cache


def one_scenario(engine, work, releases, planted, repeats):
    env = dict(os.environ, ONNXPROOF_ORT_CACHE=deployments(work, releases, planted))
    run = os.path.join(work, f"run-{planted}")
    proved = subprocess.run([engine, "pipeline", "--model", os.path.abspath(MODEL_FILE) + ":build", "--input",
                             "x=8x16:float32", "--out", run, "--no-golden", "--opset", "18", "--target",
                             f"ort-cpu@{releases[0]},ort-cpu@{releases[-1]}"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    if proved.returncode != 1:
        raise SystemExit(f"the pipeline should fail on {releases[-1]}: exit {proved.returncode}\n{proved.stderr[-2000:]}")
    walls, found = [], None
    for repeat in range(repeats):
        copy = f"{run}-{repeat}"
        shutil.copytree(run, copy, symlinks=True)
        start = time.monotonic()
        done = subprocess.run([engine, "bisect-release", copy], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env)
        walls.append(time.monotonic() - start)
        if done.returncode != 0:
            raise SystemExit(f"bisect-release failed: exit {done.returncode}\n{done.stderr[-2000:]}")
        with open(os.path.join(copy, "bisect", "bisect.json")) as stream:
            found = json.load(stream)
    optimizer = found["optimizer"]
    return {"planted": planted, "between": len(releases) - 2, "proved": found["proved"],
            "first_bad": found["first_bad"], "last_good": found["last_good"],
            "right": found["first_bad"] == planted and optimizer["optimizers"][-1] == "GeluApproximation",
            "optimizers": optimizer["optimizers"], "proofs": optimizer["proofs"],
            "config": optimizer["session_config_added"], "walls": walls, "wall": statistics.median(walls)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin",
                                                          "onnxproof"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    releases = fetched()
    if len(releases) < 7:
        raise SystemExit(f"fetch at least 7 releases into {CACHE} first (the docstring's command)")
    work = tempfile.mkdtemp(prefix="onnxproof-bisect-bench-")
    try:
        # Planted near the oldest, in the middle, and near the newest end of the range.
        planted = [releases[1], releases[len(releases) // 2], releases[-2]]
        rows = [one_scenario(os.path.abspath(args.engine), work, releases, p, args.repeats) for p in planted]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"releases fetched: {', '.join(releases)}\n")
    print("| planted from | releases between | proved by the bisection | found (last pass, first fail) | "
          "optimizers named (advised last) | optimizer proofs | wall, median (s) | right |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['planted']} | {row['between']} | {', '.join(row['proved'])} | {row['last_good']}, "
              f"{row['first_bad']} | {', '.join(row['optimizers'])} | {row['proofs']} | {row['wall']:.1f} "
              f"({', '.join(f'{w:.1f}' for w in row['walls'])}) | {'yes' if row['right'] else 'NO'} |")
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream, indent=2)


if __name__ == "__main__":
    main()
