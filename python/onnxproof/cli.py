"""The `onnxproof` console script of the wheel: the engine's command line, with this interpreter
as its export front end."""
import os
import sys

from .core.engine import EngineError, engine_environment, engine_path


def main():
    try:
        engine = engine_path()
    except EngineError as error:
        print(f"onnxproof: error: {error}", file=sys.stderr)
        return 3
    os.execve(engine, [engine, *sys.argv[1:]], engine_environment())


if __name__ == "__main__":
    sys.exit(main())
