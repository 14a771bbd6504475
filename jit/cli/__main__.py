import sys

from jit.cli.commands import main

sys.exit(main())
