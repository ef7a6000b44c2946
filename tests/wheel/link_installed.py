"""Installs distributions into a fresh virtual environment by hard-linking the files the
running interpreter's environment already has installed (as uv's hardlink mode does).

Why: a second copy of torch's CUDA build is 5.6 GB, and a CI machine ran out of disk making it.
The fresh environment still gets exactly the named distributions and what they require (their
Requires-Dist, markers evaluated, with the extras they are required with), each with its dist-info,
so pip sees them installed and resolves nothing more. Scripts outside site-packages (bin/) are left out.

Usage: python link_installed.py TARGET_SITE_PACKAGES NAME...
       python link_installed.py --from SITE_PACKAGES TARGET_SITE_PACKAGES NAME...
With --from, the named distributions (only those: `pip check` in the target says whether what they
require is there) come from another folder, such as a `pip install --target` kept between runs.
"""

import importlib.metadata
import os
import re
import shutil
import sys
from pathlib import Path

from packaging.requirements import Requirement


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names):
    """The named distributions and everything they require, with the extras they are required with
    (torch 2.14 requires cuda-toolkit[cufile,...], whose extras name the libraries it loads), by
    canonical name."""
    seen, extras_seen, pending = {}, {}, [(canonical(name), "") for name in names]
    while pending:
        name, extra = pending.pop()
        if extra in extras_seen.setdefault(name, set()):
            continue
        extras_seen[name].add(extra)
        distribution = seen.get(name) or importlib.metadata.distribution(name)
        seen[name] = distribution
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                pending += [(canonical(requirement.name), wanted) for wanted in {""} | requirement.extras]
    return seen


def link_files(distribution, target):
    """Links every file of the distribution that lies in site-packages; returns how many."""
    linked = 0
    for file in distribution.files or []:
        if file.parts[0] == "..":
            continue  # bin/ scripts: their shebangs name the other environment
        source = Path(distribution.locate_file(file))
        if not source.is_file():
            continue
        destination = target / file
        if destination.exists():
            continue  # a namespace package's __init__.py, shared by several distributions
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, destination)
        except OSError:  # another file system: a copy, as pip would make
            shutil.copy2(source, destination)
        linked += 1
    return linked


def from_folder(folder, names):
    """The named distributions installed in `folder`, by canonical name."""
    found = {}
    for name in names:
        matches = list(importlib.metadata.distributions(name=name, path=[folder]))
        if not matches:
            sys.exit(f"link_installed: no distribution {name} in {folder}")
        found[canonical(name)] = matches[0]
    return found


def main():
    arguments = sys.argv[1:]
    source = None
    if arguments[:1] == ["--from"]:
        source, arguments = arguments[1], arguments[2:]
    target = Path(arguments[0])
    distributions = from_folder(source, arguments[1:]) if source else closure(arguments[1:])
    files = sum(link_files(distribution, target) for distribution in distributions.values())
    print(f"linked {len(distributions)} distributions ({files} files) into {target}")


if __name__ == "__main__":
    main()
