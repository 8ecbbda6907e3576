"""`python -m optimizer.cli …` runs planopt."""

from optimizer.cli import main

main()
