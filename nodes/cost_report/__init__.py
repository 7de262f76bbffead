"""The cost report: with ``report_cost`` on, the final answer (and the report of a run that stopped) ends with
what the goal's model calls spent, by model."""
