import sys

from lockwright.cli import main

sys.exit(main())
