"""Build hook, nothing else (every setting is in pyproject.toml): ship the top-level crds/,
examples/ and scenarios/ folders, whatever files they hold, inside the package as promop/_shipped/, so that an
installed wheel finds them (promop.packaged). The folders stay at the top level of the checkout,
where `kubectl apply -f crds/` uses them."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("crds", "examples", "scenarios")


class BuildPyWithShippedFolders(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's folders directly
        for folder in SHIPPED:
            if os.path.isdir(folder):
                target = os.path.join(self.build_lib, "promop", "_shipped", folder)
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithShippedFolders})
