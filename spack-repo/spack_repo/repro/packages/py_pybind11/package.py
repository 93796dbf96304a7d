# repro: pybind11 from its PyPI wheel (headers and CMake config inside), for building MLPerf
# LoadGen's bindings offline: builtin's py-pybind11 fetches GitHub's source archive, which a
# mirror made from PyPI cannot hold. The sha256 is PyPI's published digest of the wheel.

from spack_repo.builtin.build_systems.generic import Package
from spack_repo.builtin.build_systems.python import PythonExtension, PythonPipBuilder

from spack.package import *


class PyPybind11(Package, PythonExtension):
    """Seamless operability between C++11 and Python (headers only), as PyPI's wheel."""

    homepage = "https://pybind11.readthedocs.io"
    url = "https://files.pythonhosted.org/packages/py3/p/pybind11/pybind11-2.11.1-py3-none-any.whl"
    list_url = "https://pypi.org/simple/pybind11/"

    license("BSD-3-Clause")

    version(
        "2.11.1",
        sha256="33cdd02a6453380dd71cc70357ce388ad1ee8d32bd0e38fc22b273d050aa29b3",
        expand=False,
    )

    extends("python")
    depends_on("py-pip", type="build")

    def url_for_version(self, version):
        url = "https://files.pythonhosted.org/packages/py3/p/pybind11/pybind11-{}-py3-none-any.whl"
        return url.format(version)

    def install(self, spec, prefix):
        whl = self.stage.archive_file
        python("-m", "pip", *PythonPipBuilder.std_args(self), f"--prefix={prefix}", whl)
