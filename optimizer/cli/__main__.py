"""`python -m optimizer.cli …` runs planopt."""

from optimizer.cli import app

app()
