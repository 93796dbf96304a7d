"""Portable experiment packages: `repro pack` writes one archive holding a spec, the files it
names (artifacts, lock files, the flake), its original results and, on request, the artifacts'
bytes, the Python lock's wheels and the Docker image, with a manifest of every member's sha256;
`repro unpack` extracts one safely and checks every hash; `repro replay PACKAGE` replays from
one, offline when it carries what the replay needs.
"""
