"""Prints the versions this interpreter gives the front end, one `tool version` per line
(`onnxproof --version` asks the interpreter it would use, so what it prints is what runs)."""
import importlib.metadata
import importlib.util
import platform
import sys


def versions():
    """Read from each distribution's metadata where the interpreter finds the module, without
    importing it: importing torch, torchvision and onnxscript took 6-13 s of every --version."""
    found = {"python": f"{platform.python_version()} ({sys.executable})"}
    for module in ("torch", "torchvision", "onnx", "onnxscript", "numpy"):  # each its distribution's name
        try:
            if importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(module)
            found[module] = importlib.metadata.version(module)
        except Exception as error:  # a broken install reports itself rather than failing --version
            found[module] = f"not available ({type(error).__name__})"
    return found


if __name__ == "__main__":
    for tool, version in versions().items():
        print(f"{tool} {version}")
