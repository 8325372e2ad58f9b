"""The operator CLI: the ``lockwright`` console entry point and its operator commands.

It sits above every other layer (it may import the core, the workflows' contracts and the
worker's process code), and nothing imports it: an import-linter contract keeps it so.
Pure parts (parsing Temporal histories into timelines, building the trace tree, rendering
rows as text) are plain functions over plain data; the command modules do the I/O.
"""
