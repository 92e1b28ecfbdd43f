"""LLM judges (issue #21): a registered model answers a campaign's questions as a model rater,
kept apart from the crowd, and a report of its agreement with the crowd (docs/modelhub.md)."""
