"""Prints the versions this interpreter gives the front end, one `tool version` per line
(`onnxproof --version` asks the interpreter it would use, so what it prints is what runs)."""
import importlib
import os
import platform
import sys
import tempfile


def versions():
    found = {"python": f"{platform.python_version()} ({sys.executable})"}
    # Importing torchvision makes torch's compiler cache folder ($TMPDIR/torchinductor_USER);
    # asking for versions leaves nothing behind, so it goes into a folder removed afterwards.
    with tempfile.TemporaryDirectory(prefix="onnxproof-versions-") as scratch:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(scratch, "inductor"))
        for module in ("torch", "torchvision", "onnx", "onnxscript", "numpy"):
            try:
                found[module] = importlib.import_module(module).__version__
            except Exception as error:  # a broken install reports itself rather than failing --version
                found[module] = f"not available ({type(error).__name__})"
    return found


if __name__ == "__main__":
    for tool, version in versions().items():
        print(f"{tool} {version}")
