"""Inputs: YAML with line marks, the pydantic schemas, the catalogs, and loading a plan."""
