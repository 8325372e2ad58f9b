"""``python -m lockwright``: the operator CLI, for processes that spawn lockwright by module.

The one place the core names the CLI above it (an import-linter contract allows exactly
this import): the worker's ``dev up`` and the tests start ``python -m lockwright worker``.
"""

from commands.main import run

run()
