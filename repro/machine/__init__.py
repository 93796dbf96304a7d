"""The machine a run ran on: its fingerprint (hardware, OS, Python and native packages)."""
