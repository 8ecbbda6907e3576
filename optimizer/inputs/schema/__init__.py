"""Pydantic models of the plan file and the catalogs."""
