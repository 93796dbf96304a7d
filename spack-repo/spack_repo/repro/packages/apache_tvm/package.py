# repro: a current Apache TVM built from source, with its Python package, LLVM code generation
# and oneDNN (DNNL) offload as variants. Spack's builtin `apache-tvm` stops at 0.19 and builds
# the C++ libraries only; this recipe (namespace `repro`, listed before builtin in the
# environments' `repos`) builds the whole package the way TVM's own pyproject.toml does
# (scikit-build-core driving CMake from the source root).
#
# Source: the Apache release tarball. apache-tvm has no sdist on PyPI and the release is not
# reachable from the machine this recipe was written on, so the 0.25.0 sha256 below is the one
# published in a public manifest of that tarball (80,764,445 bytes, release commit
# c7ba0735a4f346c67b761e1fde38a68a60be8adb), not recomputed here. Spack checks it when it
# fetches: a wrong digest stops the build, it never builds other bytes. Add newer releases
# with `spack checksum apache-tvm <version>` on a networked machine.

from spack_repo.builtin.build_systems.python import PythonPackage

from spack.package import *


class ApacheTvm(PythonPackage):
    """Apache TVM: an end-to-end deep learning compiler (Relax, TensorIR, MetaSchedule),
    built from source with its Python package."""

    homepage = "https://tvm.apache.org/"
    url = "https://github.com/apache/tvm/releases/download/v0.25.0/apache-tvm-src-v0.25.0.tar.gz"

    license("Apache-2.0")

    version("0.25.0", sha256="ea7c3248e2a8ca91969fa487247ed94db22f1dbfadf7b9408fede76c8f16e56d")

    variant("llvm", default=True, description="LLVM code generation for CPU targets")
    variant("dnnl", default=False, description="offload to oneDNN (DNNL) through BYOC")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("ninja", type="build")
    depends_on("py-scikit-build-core@0.10: +pyproject", type="build")

    depends_on("python@3.10:", type=("build", "run"))
    depends_on("zlib-api")
    depends_on("llvm@15:", when="+llvm")
    depends_on("onednn", when="+dnnl")

    # pyproject.toml [project] dependencies
    depends_on("py-apache-tvm-ffi@0.1:", type=("build", "run"))
    depends_on("py-cloudpickle", type=("build", "run"))
    depends_on("py-ml-dtypes", type=("build", "run"))
    depends_on("py-numpy", type=("build", "run"))
    depends_on("py-packaging", type=("build", "run"))
    depends_on("py-psutil", type=("build", "run"))
    depends_on("py-scipy", type=("build", "run"))
    depends_on("py-tornado", type=("build", "run"))
    depends_on("py-typing-extensions", type=("build", "run"))

    def config_settings(self, spec, prefix):
        llvm = spec["llvm"].prefix.bin.join("llvm-config") if spec.satisfies("+llvm") else "OFF"
        defines = {
            "TVM_BUILD_PYTHON_MODULE": "ON",
            "USE_LLVM": str(llvm),
            "USE_DNNL": "ON" if spec.satisfies("+dnnl") else "OFF",
            "USE_CUDA": "OFF",
            "USE_LIBBACKTRACE": "OFF",
        }
        return {f"cmake.define.{key}": value for key, value in defines.items()}
