"""Webhooks: researchers' URLs told about a campaign's events, signed and retried (docs/api.md)."""
