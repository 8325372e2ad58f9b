"""The package index: one OCI artifact listing package versions and the types they serve.

- :mod:`lockwright.index.model`: the index document, and finding packages by API or text.
"""
