"""Top-level URLs: the admin, the researcher dashboard, the worker pages.

The probes (``/health/``, ``/ready/``, ``/metrics``) are answered by
``evalsite.health.probes_middleware`` before the host check and the HTTPS redirect.
"""

from django.contrib import admin
from django.urls import include, path

# A server error on a worker page keeps the page's frame policy (providers show it in a frame).
handler500 = "annotation.views.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
    path("api/v1/", include("api.urls")),
    path("", include("annotation.urls")),
]
