"""Maps the repository's stage folders onto one installed namespace: `capture/` installs as `kafkatap.capture`,
`dissect/` as `kafkatap.dissect`, and so on, so the wheel owns the single top-level name `kafkatap`.

The mapping lives here rather than in pyproject.toml because the package list is computed: every folder with an
`__init__.py` under a stage becomes a subpackage without being listed by hand. So are the compiled modules: every
`.pyx` file under a stage (the Cython twins of the dissector's hot pure-Python functions), and every `.py` file with a
`.pxd` of its name (one source both twins run: plain Python, compiled in Cython's pure-Python mode). They are optional
extensions: where no C compiler or Python headers are, their build fails with a warning, the install goes on in pure
Python, and `kafkatap.dissect.native` says so at run time.
"""

import os
import warnings
from pathlib import Path

from setuptools import Extension, find_packages, setup

STAGES = ("capture", "dissect", "pipelines", "dashboards", "samples")
# Bounds checks stay on: the compiled core parses hostile bytes, and an IndexError is a bug where a wild read is a hole.
DIRECTIVES = {"language_level": 3, "boundscheck": True, "wraparound": False}
# Cythonized and compiled on every core: a wheel built from a clean copy, 53 -> 29 s on 2 cores (the same CPU)
CORES = os.cpu_count() or 1


def include_tree() -> str:
    """A folder where `kafkatap/<stage>` is the stage's folder: Cython finds a module's declarations (.pxd) by its
    installed name, so this is what lets one compiled module cimport another's C-level classes."""
    package = Path("build", "cython-include", "kafkatap")
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.pxd").touch()
    for stage in STAGES:
        link = package / stage
        if not link.is_symlink():
            link.symlink_to(Path("..", "..", "..", stage))
    return str(package.parent)


def extensions() -> list[Extension]:
    sources = sorted(str(path) for stage in STAGES for path in Path(stage).rglob("*.pyx"))
    # A .py file with a .pxd of its name is one source for both twins: compiled too (Cython's pure-Python mode)
    sources += sorted(str(path.with_suffix(".py")) for stage in STAGES for path in Path(stage).rglob("*.pxd")
                      if path.with_suffix(".py").exists())
    try:
        from Cython.Build import cythonize
    except ImportError:
        warnings.warn("Cython is missing (`pip install 'Cython>=3.0'`, or build with isolation): kafkatap is built "
                      "without its compiled dissector core")
        return []
    modules = cythonize([Extension("kafkatap." + source.rsplit(".", 1)[0].replace("/", "."), [source])
                         for source in sources], compiler_directives=DIRECTIVES, include_path=[include_tree()],
                        nthreads=CORES)
    for module in modules:
        module.optional = True  # a failed compile warns and leaves the pure-Python twin
    return modules


setup(
    package_dir={"kafkatap": "kafkatap", **{f"kafkatap.{stage}": stage for stage in STAGES}},
    packages=["kafkatap"] + [f"kafkatap.{stage}{sub}" for stage in STAGES
                             for sub in [""] + [f".{p}" for p in find_packages(stage)]],
    ext_modules=extensions(),
    options={"build_ext": {"parallel": CORES}},
)
