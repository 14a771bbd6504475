import sys

import jit  # noqa: F401  (fills the registry)
from jit.library.listing import main

sys.exit(main())
