"""Top-level URLs: the admin, the worker pages and a health check."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path


def health(request: HttpRequest) -> JsonResponse:
    """Answer load balancers and the demo's readiness check."""
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("health/", health, name="health"),
    path("", include("annotation.urls")),
]
