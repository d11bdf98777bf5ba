"""``python -m diverge_codec`` is the ``diverge-codec`` command."""

from .cli import main

raise SystemExit(main())
