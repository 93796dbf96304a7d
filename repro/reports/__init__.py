"""Renderers of the reproducibility report: Markdown, HTML, JSON."""
