"""The crowd side of evalsite: campaigns, items, workers, assignments, judgments."""
