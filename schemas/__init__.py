"""Data only: the Avro schemas of the envelope, the common commands and example entities.

One file per version: ``<namespace path>/<name>/v<N>.avsc``.
"""

from pathlib import Path

#: the directory holding Coupler's built-in schema files
SCHEMA_DIR = Path(__file__).resolve().parent
