"""Batch jobs on Spark: bulk translation and batch ingestion.

:func:`spark_session` starts (or joins) a Spark session with Coupler's data sources
registered; :func:`translate` reads inputs in one format and writes them in another
(``coupler batch translate``); :func:`ingest` takes the files an adapter staged for batch,
translates them, archives the inputs after success and publishes ``coupler.BatchCompleted@1``
(``coupler batch ingest``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

#: settings every Coupler Spark session gets unless the caller overrides them
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
}


def spark_session(
    master: str | None = "local[*]",
    *,
    app_name: str = "coupler-batch",
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> Any:
    """A Spark session with Coupler's data sources (``copybook``, ``canonical-avro``) registered.

    Python workers run the interpreter running this (``PYSPARK_PYTHON`` wins when set), so
    they import the same Coupler. ``master=None`` leaves the master to ``spark-submit``.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from coupler.translators.spark import register_data_sources

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**DEFAULT_CONF, **dict(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register_data_sources(spark)
    return spark
