"""The webhooks page of a campaign in the dashboard (under /dashboard/, docs/api.md)."""

from django.urls import path

from webhooks import pages

app_name = "webhooks"

urlpatterns = [
    path("c/<slug:slug>/webhooks/", pages.webhooks_page, name="list"),
    path("c/<slug:slug>/webhooks/new/", pages.webhook_new, name="new"),
    path(
        "c/<slug:slug>/webhooks/<int:endpoint_id>/remove/",
        pages.webhook_remove,
        name="remove",
    ),
    path("c/<slug:slug>/webhooks/<int:endpoint_id>/test/", pages.webhook_test, name="test"),
    path(
        "c/<slug:slug>/webhooks/deliveries/<uuid:delivery_id>/redeliver/",
        pages.webhook_redeliver,
        name="redeliver",
    ),
]
