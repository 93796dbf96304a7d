"""Spack's files, read without Spack: spack.lock (versions 1-8) and spack.yaml."""
