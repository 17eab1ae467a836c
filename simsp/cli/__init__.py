"""The command line (the top edge): argument parsing and every subcommand. `main` (in `main.py`)
is the console script; `arguments` holds what the subcommands share."""
