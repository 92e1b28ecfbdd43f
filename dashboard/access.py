"""Who may see what: staff only; researchers see their own campaigns, superusers all."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase

from annotation.models import Campaign

View = Callable[..., HttpResponseBase]


def staff_required(view: View) -> View:
    """Send anonymous visitors to the login page and refuse logged-in non-staff (403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("The dashboard is for researchers (staff accounts).")
        return view(request, *args, **kwargs)

    return wrapped


def campaigns_visible(user: Any) -> QuerySet[Campaign]:
    """Return the campaigns ``user`` may see: all for a superuser, else the ones they own."""
    campaigns = Campaign.objects.all()
    if user.is_superuser:
        return campaigns
    return campaigns.filter(owner=user)


def campaign_for(user: Any, slug: str) -> Campaign:
    """Return the campaign ``slug`` if ``user`` may see it; 404 otherwise (no existence leak)."""
    campaign = campaigns_visible(user).filter(slug=slug).first()
    if campaign is None:
        raise Http404("No such campaign among yours.")
    return campaign
