"""The model side of evalsite: registered models, their backends and stored generations."""
