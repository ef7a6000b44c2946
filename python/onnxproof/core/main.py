"""The front end the engine starts: `python -m onnxproof --config-json JSON` exports a model spec
into a run folder (export.json, reference/, model.onnx), `--localize-json JSON` captures one case's
module outputs for divergence localization. Both hand the work to the source framework that owns
the spec or the run (frameworks.py).

Progress goes to stderr; a user error ends with one line `onnxproof: error: ...` and exit code 2 or
3; a model problem is a finding in export.json and exit code 1."""
import argparse
import json
import os
import sys

from . import contract, frameworks, reads
from .errors import FrontEndError, write_failure
from .processes import end_with_parent


def run(args):
    if args.localize_json:
        request = json.loads(args.localize_json)
        run_folder = request.get("run") if isinstance(request, dict) else None
        reads.record_if_asked([run_folder] if isinstance(run_folder, str) else [])
        return frameworks.for_run(run_folder).run_localize(request)
    config = json.loads(args.config_json)
    contract.check_config(config)
    reads.record_if_asked([config["out"]])
    os.makedirs(config["out"], exist_ok=True)
    # The engine names the framework it chose the interpreter for; an older engine does not.
    framework = frameworks.framework(config["framework"]) if config.get("framework") else \
        frameworks.for_spec(config["model"])
    return framework.run_export(config)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m onnxproof", description=__doc__.splitlines()[0])
    parser.add_argument("--config-json", help="the export options as JSON")
    parser.add_argument("--localize-json", help="divergence localization: {run, model, case} as JSON")
    args = parser.parse_args(argv)
    end_with_parent()
    if bool(args.config_json) == bool(args.localize_json):
        parser.error("give --config-json or --localize-json")
    try:
        return run(args)
    except FrontEndError as error:
        print(f"onnxproof: error: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        failure = write_failure(error)
        if failure is None:
            raise
        print(f"onnxproof: error: {failure}", file=sys.stderr)
        return failure.exit_code
    except (json.JSONDecodeError, contract.ContractError) as error:
        print(f"onnxproof: error: the export configuration breaks {contract.CONFIG}: {error}", file=sys.stderr)
        return 3
    except ImportError as error:
        print(f"onnxproof: error: a dependency is missing: {error}", file=sys.stderr)
        return 3
