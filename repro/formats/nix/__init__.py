"""Nix: NAR hashing, flake.lock reading, and the nix environment manager's helpers."""
