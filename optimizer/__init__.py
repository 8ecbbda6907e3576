"""planopt: capacity planning for self-hosted LLM inference."""

__version__ = "0.1.0"
