"""Top-level URLs: the admin, the researcher dashboard, the worker pages.

The probes (``/health/``, ``/ready/``, ``/metrics``) are answered by
``evalsite.health.probes_middleware`` before the host check and the HTTPS redirect.
"""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from evalsite.floor import floor

# A server error on a worker page keeps the page's frame policy (providers show it in a frame).
handler500 = "workerpages.views.server_error"

urlpatterns = [
    # Browsers ask every site for /favicon.ico (the admin's pages too): answer, not 404.
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
    # Pages of the apps above the dashboard (it links to them, never imports them).
    path("dashboard/", include("webhooks.urls")),
    path("dashboard/", include("api.page_urls")),
    path("api/v1/", include("api.urls")),
    # bench/hot_path.py's floor: 404 unless EVALSITE_BENCH_FLOOR=1 or DEBUG (evalsite.floor).
    path("bench/floor/<slug:slug>/", floor, name="bench_floor"),
    path("", include("workerpages.urls")),
]
