"""File formats of the tools repro pins with, read without the tools: Nix (NAR hashing,
flake.lock) and Spack (spack.lock, spack.yaml)."""
