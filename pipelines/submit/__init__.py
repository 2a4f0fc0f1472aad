"""The spark-submit entry points: one file per job, each a thin main() (parse paths, read, transform, write).

spark-submit runs a file with this folder as sys.path[0], so no file here may be named like a module it or pyspark
imports (`json.py`, `pyspark.py`, ...); everything they need comes through absolute `kafkatap.` imports.
"""
