"""A local SparkSession for Python data sources (platform-notes §2.1–2.3, pitfalls 1–3)."""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def local_session(app_name: str, cores: int = 2, conf: dict[str, str] | None = None) -> SparkSession:
    # workers must run this interpreter (it has pyarrow and this package), not whatever python3 is on PATH
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(cores * 2))
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
