#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
    from django.core.management import execute_from_command_line

    from mnote.data_dir import prepare_data_dir

    # Every command starts here (make run's migrate and run_stack among them):
    # the data folder, key and database file exist before the settings load.
    # The stdio MCP server only reads a library that runs already: it checks
    # for it and says where it looked, rather than make an empty one.
    if sys.argv[1:2] != ["mcp_stdio"]:
        prepare_data_dir()

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
