"""TB-MathModel: agentic, verifiable mathematical-modeling benchmark."""

__version__ = "0.1.0"
