"""evalsite's statistics, with no Django and no import from the apps (an import-linter
contract in pyproject.toml keeps it so): inter-rater agreement (``agreement``), label
aggregation (``aggregation``), paired comparisons and Bradley–Terry (``ranking``), the
style-controlled Bradley–Terry of arenas and its simulator (``style``),
design-aware intervals (``uncertainty``, ``cluster_bootstrap``) and the report options
(``options``), adaptive pair allocation's rule (``adaptive``), the study planner
(``planner``), emotion-label tables and classifier scores (``emotion_labels``,
``emotion_eval``), the quality rule (``quality_rule``) and a report's tables and figures
(``reports``, ``figures``). The apps read their data from the database and hand these
functions plain pandas/numpy values; docs/statistics.md gives the methods.
"""
