"""Maps the repository folders into the single import namespace `vdla`.

vdla_hw/ -> vdla.hw, simulator/ -> vdla.simulator, compiler/ -> vdla.compiler,
driver/ -> vdla.driver, bitstreams/ -> vdla.bitstreams (see ../shared/ARCHITECTURE.md).
Subpackages are found by walking each folder, so a new subfolder with an __init__.py needs
no edit here.
"""
import os

from setuptools import setup

FOLDERS = {
    "vdla.hw": "vdla_hw",
    "vdla.simulator": "simulator",
    "vdla.compiler": "compiler",
    "vdla.driver": "driver",
    "vdla.bitstreams": "bitstreams",   # board manifests: package data the driver reads
}


def _packages():
    found = {}
    for name, folder in FOLDERS.items():
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if "__init__.py" in files:
                rel = os.path.relpath(root, folder)
                sub = "" if rel == "." else "." + rel.replace(os.sep, ".")
                found[name + sub] = root
    return found


_dirs = _packages()
setup(packages=sorted(_dirs), package_dir=_dirs)
