"""The `tbmm` command line."""

import typer

app = typer.Typer(no_args_is_help=True, help="TB-MathModel benchmark CLI.")


@app.command()
def version() -> None:
    """Print the tbmm version."""
    from tbmm import __version__

    typer.echo(__version__)
