"""`python -m onnxproof.zoo run ZOO.toml --out DIR ...` and `... merge DIR... --out DIR`: what
`onnxproof zoo` starts (with --engine, the binary to run `onnxproof pipeline` with). Progress on
stderr, the zoo's summary on stdout; exit 0 every model passed, 1 one failed, 2 usage error, 3 a
model could not be proved (an error row) or the zoo could not run."""
import argparse
import os
import signal
import sys
import time

from ..core.errors import EXIT_ERROR, FrontEndError, UsageError, printable
from .cache import Cache, cache_key, tool_versions, trusted_interpreters
from .dashboard import write_dashboard
from .execution import ray_available, run_local, run_ray
from .files import claim_zoo_folder
from .guardian import start_guardian
from .manifest import load_manifest, parse_shard, shard_of
from .merge import merge_zoos


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as every onnxproof command
        raise UsageError(f"zoo: {message} (see onnxproof zoo --help)")


def _parser():
    parser = _Parser(prog="onnxproof zoo", description="Prove a zoo of models (docs/zoo.md).")
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="prove every model of ZOO.toml into DIR/runs/NAME; write DIR/index.html")
    run.add_argument("manifest", metavar="ZOO.toml")
    run.add_argument("--out", required=True, help="the zoo folder: new, empty, or one zoo run wrote")
    run.add_argument("--workers", type=int, default=1, help="models proved at a time on a local instance (default 1)")
    run.add_argument("--executor", choices=("auto", "ray", "local"), default="auto",
                     help="ray (tasks on Ray), local (child processes); auto: ray when installed")
    run.add_argument("--ray-address", help="the Ray cluster to run on (e.g. HEAD:6379, or auto)")
    run.add_argument("--shard", help="I/N: prove only this share of the models (for a CI matrix)")
    run.add_argument("--cache", help="the cache folder (default DIR/.cache)")
    run.add_argument("--no-cache", action="store_true", help="prove every model again; store nothing")
    merge = commands.add_parser("merge", help="combine zoo folders (shards) into one dashboard")
    merge.add_argument("inputs", nargs="+", metavar="DIR")
    merge.add_argument("--out", required=True, help="the merged zoo folder: new, empty, or a zoo folder")
    return parser


def _executor(args):
    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: must be 1 or more")
    wanted = "ray" if args.ray_address and args.executor == "auto" else args.executor
    if wanted == "auto":
        return "ray" if ray_available() else "local"
    if wanted == "ray" and not ray_available():
        raise FrontEndError("--executor ray needs Ray: pip install 'onnxproof[zoo]'")
    if wanted == "local" and args.ray_address:
        raise UsageError("--ray-address needs the ray executor")
    return wanted


def _progress(total):
    finished = []

    def report(model, row):
        finished.append(row)
        seconds = "-" if row["seconds"] is None else f"{row['seconds']} s"
        detail = ", ".join(row["errors"]) or row["note"]
        print(f"onnxproof zoo: [{len(finished)}/{total}] {model.name}: {row['verdict']} in {seconds}"
              + (" (cached)" if row["cached"] else "") + (f": {printable(detail[:160])}" if detail else ""),
              file=sys.stderr, flush=True)
    return report


def run_zoo(args):
    """Proves the manifest's models (this shard's); writes the dashboard; returns the exit code."""
    start = time.time()
    models = load_manifest(args.manifest)
    shard = parse_shard(args.shard) if args.shard else None
    if shard:
        models = shard_of(models, shard)
    executor = _executor(args)
    if args.engine:
        engine = args.engine
    else:
        from ..core.engine import engine_path
        engine = engine_path()
    out = os.path.abspath(args.out)
    claim_zoo_folder(out)
    cache = Cache(os.path.abspath(args.cache) if args.cache else os.path.join(out, ".cache"), not args.no_cache,
                  trusted_interpreters(engine))
    versions = tool_versions(engine)
    rows, keys, to_run = [], {}, []
    progress = _progress(len(models))
    how = f"{executor}, " + (f"cluster {args.ray_address}" if args.ray_address else f"{args.workers} workers")
    print(f"onnxproof zoo: {len(models)} models" + (f" (shard {args.shard})" if shard else "") + f", {how}",
          file=sys.stderr, flush=True)

    def finished(model, row):
        row["key"] = keys[model.name]
        cache.store(model, keys[model.name], row, out)
        rows.append(row)
        progress(model, row)
        write_dashboard(out, rows, manifest=os.path.abspath(args.manifest), shard=args.shard, executor=how)

    for model in models:
        keys[model.name] = cache_key(model, versions)
        row = cache.restore(model, keys[model.name], out)
        if row:
            rows.append(row)
            progress(model, row)
        else:
            if model.name in cache.stale:
                print(f"onnxproof zoo: {model.name}: its cached run is stale ({printable(cache.stale[model.name])}); "
                      "proving it again", file=sys.stderr, flush=True)
            to_run.append(model)
    if to_run and executor == "ray":
        run_ray(to_run, engine, out, args.workers, args.ray_address, finished)
    elif to_run:
        run_local(to_run, engine, out, args.workers, finished)
    index = write_dashboard(out, rows, manifest=os.path.abspath(args.manifest), shard=args.shard,
                            wall_seconds=time.time() - start, executor=how)
    _print_summary(index, out)
    return index["exit_code"]


def _print_summary(index, out):
    counts = index["counts"]
    print(f"zoo {index['verdict']}: {len(index['rows'])} models, {counts['pass']} pass, {counts['fail']} fail, "
          f"{counts['error']} error, {index['cached']} cached"
          + (f", {index['wall_seconds']} s" if index.get("wall_seconds") is not None else "")
          + f"\n  dashboard: {printable(os.path.join(out, 'index.html'))}")


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    # SIGTERM and SIGHUP end the zoo as Ctrl-C does: its running pipelines are ended first.
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGHUP, _interrupted)
    try:
        args = _parser().parse_args(argv)
        start_guardian()  # before any thread or child: a zoo killed with SIGKILL leaves nothing running
        if args.command == "merge":
            index = merge_zoos(args.inputs, args.out)
            _print_summary(index, os.path.abspath(args.out))
            return index["exit_code"]
        return run_zoo(args)
    except FrontEndError as error:  # its text may quote the manifest: printed with control bytes escaped
        print(f"onnxproof: error: {printable(error)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("onnxproof: error: zoo interrupted", file=sys.stderr)
        return EXIT_ERROR
    except OSError as error:
        print(f"onnxproof: error: {printable(error.filename or 'zoo')}: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
