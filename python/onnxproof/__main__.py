"""`python3 -m onnxproof` runs the export step (see onnxproof.export)."""
import sys

from .export import main

sys.exit(main())
