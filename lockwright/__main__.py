"""``python -m lockwright``: the operator CLI, for processes that spawn lockwright by module.

``dev up`` and the tests start ``python -m lockwright worker``. The core does not import the
CLI above it: this launcher hands the process to the ``commands`` package by name, as
``python -m commands.main`` would, and ``commands.main.run`` is also the console script.
"""

import runpy

runpy.run_module("lockwright.commands.main", run_name="__main__", alter_sys=True)
