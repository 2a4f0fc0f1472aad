"""Maps the repository's stage folders onto one installed namespace: `capture/` installs as `kafkatap.capture`,
`dissect/` as `kafkatap.dissect`, and so on, so the wheel owns the single top-level name `kafkatap`.

The mapping lives here rather than in pyproject.toml because the package list is computed: every folder with an
`__init__.py` under a stage becomes a subpackage without being listed by hand.
"""

from setuptools import find_packages, setup

STAGES = ("capture", "dissect", "pipelines", "dashboards", "samples")

setup(
    package_dir={"kafkatap": "kafkatap", **{f"kafkatap.{stage}": stage for stage in STAGES}},
    packages=["kafkatap"] + [f"kafkatap.{stage}{sub}" for stage in STAGES
                             for sub in [""] + [f".{p}" for p in find_packages(stage)]],
)
