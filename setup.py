"""The package's folders are found, not listed: ``replangraph`` is ``graph/``, ``replangraph.nodes`` is ``nodes/``
(a new feature folder is found like any other) and ``replangraph.tools`` is ``tools/``; everything else is in
pyproject.toml. (setuptools' ``packages.find`` cannot name packages after folders it renames, so this file does.)"""

from setuptools import find_packages, setup


def found(folder: str, package: str) -> list[str]:
    return [package, *(f"{package}.{name}" for name in find_packages(folder))]


setup(
    packages=[
        *found("graph", "replangraph"),
        *found("nodes", "replangraph.nodes"),
        *found("tools", "replangraph.tools"),
    ]
)
