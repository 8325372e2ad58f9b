"""``python -m devcluster serve ...`` runs the same command as ``lockwright devcluster``."""

import argparse
import sys

from lockwright.devcluster.cli import register

parser = argparse.ArgumentParser(prog="devcluster")
register(parser.add_subparsers(dest="command", required=True))
args = parser.parse_args(["devcluster", *sys.argv[1:]])
sys.exit(args.func(args))
