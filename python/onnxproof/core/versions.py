"""Prints the versions this interpreter gives a framework's front end, one `tool version` per line
(`onnxproof --version` asks each framework's interpreter, so what it prints is what runs).

  python -m onnxproof.core.versions [FRAMEWORK]    (default: torch)"""
import importlib
import importlib.metadata
import importlib.util
import platform
import sys


def versions(framework="torch"):
    """Read from each distribution's metadata where the interpreter finds the module, without
    importing it: importing torch, torchvision and onnxscript took 6-13 s of every --version. The
    framework's package says which (its __init__ imports nothing heavy)."""
    found = {"python": f"{platform.python_version()} ({sys.executable})"}
    packages = importlib.import_module(f"onnxproof.{framework}").VERSION_PACKAGES
    # A module's distribution may have another name (tensorflow comes as tensorflow_cpu).
    distributions = importlib.metadata.packages_distributions()
    for module in packages:
        try:
            if importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(module)
            found[module] = importlib.metadata.version(distributions.get(module, [module])[0])
        except Exception as error:  # a broken install reports itself rather than failing --version
            found[module] = f"not available ({type(error).__name__})"
    return found


if __name__ == "__main__":
    for tool, version in versions(*sys.argv[1:2]).items():
        print(f"{tool} {version}")
