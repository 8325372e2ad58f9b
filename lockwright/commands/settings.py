"""The flags of :mod:`lockwright.settings`: one per setting, for every long-running command."""

from __future__ import annotations

import argparse

from lockwright.settings import SPECS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting; each flag's help names its environment variable."""
    group = parser.add_argument_group("settings (flag beats environment beats default)")
    for spec in SPECS:
        group.add_argument(spec.flag, dest=spec.field, default=None, metavar="VALUE",
                           help=f"{spec.help} [${spec.env}, default {spec.default or '-'}]")
