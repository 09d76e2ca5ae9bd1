"""The agent's pinned scientific stack: one list for the Dockerfile and the sandbox venv."""

PYTHON_IMAGE = "python:3.12-slim"

SCIENTIFIC_STACK: dict[str, str] = {
    "numpy": "2.4.6",
    "pandas": "3.1.1",
    "scipy": "1.17.1",
    "scikit-learn": "1.9.1",
    "matplotlib": "3.11.2",
    "openpyxl": "3.1.5",
    "xlrd": "2.0.2",
}


def requirement_lines() -> list[str]:
    return [f"{name}=={version}" for name, version in SCIENTIFIC_STACK.items()]
