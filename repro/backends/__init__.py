"""Backends: one package each (a light plug-in and an engine); `registry` lists them."""
