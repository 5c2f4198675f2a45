"""``python -m adapters.cli``: the ``hudi-index`` command."""

import sys

from adapters.cli.main import main

sys.exit(main())
