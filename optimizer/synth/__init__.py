"""Seeded synthetic plans and usage logs, for tests, benchmarks and trying planopt without data."""
