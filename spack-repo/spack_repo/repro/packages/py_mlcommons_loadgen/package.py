# repro: MLPerf LoadGen's Python bindings, which Spack's builtin repository does not package.
# The sdist is PyPI's; its sha256 was computed here from `pip download --no-binary :all:
# --no-deps mlcommons-loadgen==6.0.17` and matches PyPI's published digest.

from spack_repo.builtin.build_systems.python import PythonPackage

from spack.package import *


class PyMlcommonsLoadgen(PythonPackage):
    """MLPerf Inference LoadGen: the load generator that issues queries by scenario
    (SingleStream, MultiStream, Server, Offline) and writes the MLPerf logs."""

    homepage = "https://github.com/mlcommons/inference/tree/master/loadgen"
    pypi = "mlcommons-loadgen/mlcommons_loadgen-6.0.17.tar.gz"

    license("Apache-2.0")

    version("6.0.17", sha256="a2e85d09e3cc0c606f89bfe1fbf97537c8b5b238ae0afbd923ad9c710fcf2ca8")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("python@3.7:", type=("build", "run"))
    # pyproject.toml: setuptools>=42, wheel, pybind11==2.11.1
    depends_on("py-setuptools@42:", type="build")
    depends_on("py-wheel", type="build")
    depends_on("py-pybind11@2.11.1", type="build")
