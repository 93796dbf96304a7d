"""Backends: one package each (a light plug-in and an engine); `repro.spec.plugins` names
them, `registry` holds them by name."""
