"""The `tbmm` command: the console entry (lite path) and the typer app, by verb group. Kept import-free so the lite path stays cheap."""
