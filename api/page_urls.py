"""The researcher's API keys page in the dashboard (under /dashboard/, docs/api.md)."""

from django.urls import path

from api import pages

app_name = "apikeys"

urlpatterns = [
    path("api-keys/", pages.api_keys, name="list"),
    path("api-keys/new/", pages.api_key_new, name="new"),
    path("api-keys/revoke/", pages.api_key_revoke_view, name="revoke"),
]
