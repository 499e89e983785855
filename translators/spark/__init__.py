"""PySpark data sources over Coupler's codecs.

* ``copybook`` (read and write): COBOL record files through the copybook translator, with
  the same Cobrix-compatible options as the CLI (:mod:`.reader`, :mod:`.copybook_writer`);
* ``canonical-avro`` (write): Avro container files with the canonical schema and the Format
  Indicator in their metadata (:mod:`.avro_writer`);
* ``coupler-parquet`` (write): Parquet through pyarrow, committed atomically (:mod:`.parquet_writer`).

Call :func:`register_data_sources` once per Spark session.
"""

from __future__ import annotations

from typing import Any

#: the short names the data sources are registered under
DATA_SOURCE_NAMES = ("copybook", "canonical-avro", "coupler-parquet")


def register_data_sources(spark: Any) -> None:
    """Register Coupler's data sources with ``spark`` (a ``SparkSession``)."""
    from .avro_writer import CanonicalAvroDataSource
    from .parquet_writer import ParquetDataSource
    from .reader import CopybookDataSource

    spark.dataSource.register(CopybookDataSource)
    spark.dataSource.register(CanonicalAvroDataSource)
    spark.dataSource.register(ParquetDataSource)
