"""Environment managers: one module each; `registry` lists them and implements `auto`."""
