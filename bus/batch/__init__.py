"""Batch jobs on Spark: bulk translation, batch ingestion and its schedule."""
