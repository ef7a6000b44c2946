"""`python -m onnxproof.zoo run|merge ...`: what `onnxproof zoo` runs."""
import sys

from .cli import main

sys.exit(main())
