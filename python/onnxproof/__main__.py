"""`python3 -m onnxproof --config-json ...` runs the export step (see onnxproof.export).

The import is guarded here, before numpy, torch or onnx are touched, so an interpreter without
them gets one line saying what is missing instead of a traceback."""
import sys

if len(sys.argv) == 3 and sys.argv[1] == "--float16-json":
    # The float16 conversion needs onnx and onnxruntime only: no torch import for it.
    import json

    from . import float16
    from .errors import FrontEndError

    try:
        sys.exit(float16.main(json.loads(sys.argv[2])))
    except FrontEndError as error:
        print(f"onnxproof: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)

try:
    from .export import main
except ImportError as error:
    print(f"onnxproof: error: {sys.executable} cannot import {error.name or error}: the export front end needs "
          "torch, onnx and numpy (Debian: /usr/bin/python3 with python3-torch, python3-onnx, python3-numpy)",
          file=sys.stderr)
    sys.exit(3)

sys.exit(main())
