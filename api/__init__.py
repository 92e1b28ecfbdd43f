"""The REST API under /api/v1/ (docs/api.md): researchers' keys, and every resource through
the services and selectors the dashboard uses."""
