"""The command line: the Typer app and one module per command."""
