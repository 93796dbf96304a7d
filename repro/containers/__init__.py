"""Docker: an image built from a spec, and the host-side launcher that runs a worker in it."""
