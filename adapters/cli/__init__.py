"""The ``hudi-index`` command line: ``main`` runs one command (the console script's entry point).

``main`` holds the parser and the query commands; ``index`` the secondary-index commands and
``sql``; ``keys`` tagging, checking and key statistics; ``layout`` clustering and layout reports;
``support`` what they share (opening a table, reading ``--where``, printing). The modules import
``support`` and never ``main``.
"""

from adapters.cli.main import main

__all__ = ["main"]
