"""Top-level URLs: the admin, the researcher dashboard, the worker pages, a health check."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path


def health(request: HttpRequest) -> JsonResponse:
    """Answer load balancers and the demo's readiness check."""
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("health/", health, name="health"),
    path("dashboard/", include("dashboard.urls")),
    path("", include("annotation.urls")),
]
