"""`python3 -m onnxproof --config-json ...` runs the export step (see onnxproof.core.main).

The imports are guarded here, before numpy or onnx are touched, so an interpreter without them
gets one line saying what is missing instead of a traceback (a framework's own package does the
same for its framework: torch/__init__.py, tensorflow/__init__.py)."""
import sys

if len(sys.argv) == 3 and sys.argv[1] in ("--float16-json", "--quantize-json"):
    # The float16 conversion and --quantize static need onnx and onnxruntime only: no torch import.
    import json

    from .core import float16, quantize_static
    from .core.errors import FrontEndError

    try:
        job = float16 if sys.argv[1] == "--float16-json" else quantize_static
        sys.exit(job.main(json.loads(sys.argv[2])))
    except FrontEndError as error:
        print(f"onnxproof: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except Exception as error:  # a file that vanished, a malformed request: one line, not a traceback
        print(f"onnxproof: error: {sys.argv[1]}: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(3)

try:
    import numpy  # noqa: F401  (every framework's export writes numpy arrays)
    import onnx  # noqa: F401
    from .core.main import main
except ImportError as error:
    print(f"onnxproof: error: {sys.executable} cannot import {error.name or error}: the export front end needs "
          "onnx and numpy, with torch for PyTorch models or tensorflow, keras and tf2onnx for TensorFlow ones "
          "(pip install 'onnxproof[torch]' or 'onnxproof[tensorflow]'; scripts/setup.sh makes .venv and .venv-tf)",
          file=sys.stderr)
    sys.exit(3)

sys.exit(main())
