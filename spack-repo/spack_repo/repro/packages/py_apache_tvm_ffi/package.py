# repro: TVM's FFI package (apache-tvm-ffi), which TVM >= 0.22 imports at run time.
# The sdist is PyPI's; its sha256 was computed here from the downloaded file and matches
# PyPI's published digest. 0.1.15.x segfaults in JSON serialization (seen with repro's TVM
# backend), so 0.1.14.post0 is the version pinned.

from spack_repo.builtin.build_systems.python import PythonPackage

from spack.package import *


class PyApacheTvmFfi(PythonPackage):
    """Apache TVM FFI: the ABI-stable foreign function interface TVM's runtime and Python
    package are built on."""

    homepage = "https://github.com/apache/tvm-ffi"
    pypi = "apache-tvm-ffi/apache_tvm_ffi-0.1.14.post0.tar.gz"

    license("Apache-2.0")

    version(
        "0.1.14.post0", sha256="53cb68ac05ca84fd32042211c13fcee372729dcbff537f8689289b7f2f7d765d"
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("ninja", type="build")
    depends_on("python@3.9:", type=("build", "run"))
    # pyproject.toml [build-system]: scikit-build-core>=0.10.0, cython, setuptools-scm
    # (upstream asks cython>=3.2.8 for the free-threaded 3.14t build only)
    depends_on("py-scikit-build-core@0.10: +pyproject", type="build")
    depends_on("py-cython@3:", type="build")
    depends_on("py-setuptools-scm", type="build")
    depends_on("py-typing-extensions@4.13:", type=("build", "run"))
