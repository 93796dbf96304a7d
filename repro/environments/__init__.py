"""Environment managers: one package each (a face and its work); `repro.spec.plugins` names
them, `registry` holds them by name and implements `auto`."""
