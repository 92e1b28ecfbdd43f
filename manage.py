#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

from evalsite.env import tasks_inline_unless_brokered


def main() -> None:
    """Run administrative tasks."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    # A command (and the demo's or runserver's one development process) with no broker runs
    # its tasks itself: said here, explicitly, not a fallback inside the settings.
    tasks_inline_unless_brokered()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
