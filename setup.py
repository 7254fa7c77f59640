"""The packages of the wheel, found in the tree rather than listed (pyproject.toml has the rest).

``src/skiplock`` is the package ``skiplock`` and the top-level ``dialects/`` its subpackage
``skiplock.dialects``: two roots, which ``[tool.setuptools.packages.find]`` (one tree per
package root) cannot join, so the two finds are joined here. Every folder is a package
(PEP 420: ``dialects/migrations/*`` hold only ``.sql`` files, which MANIFEST.in and
include-package-data bring in), so none is left out for lack of an ``__init__.py``.
"""

from setuptools import find_namespace_packages, setup

ROOTS = {"skiplock": "src/skiplock", "skiplock.dialects": "dialects"}

setup(
    package_dir=ROOTS,
    packages=[
        package
        for name, folder in ROOTS.items()
        for package in (name, *(f"{name}.{sub}" for sub in find_namespace_packages(folder)))
        if "__pycache__" not in package
    ],
)
