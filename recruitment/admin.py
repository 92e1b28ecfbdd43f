"""Recruitment's rows in the admin: read-only, like every row the services write."""

from django.contrib import admin

from annotation.admin import ReadOnlyAdmin
from recruitment.models import Hit, Payment, Publication


@admin.register(Publication)
class PublicationAdmin(ReadOnlyAdmin):
    list_display = ["campaign", "provider", "status", "sandbox", "external_id", "reserved"]
    list_filter = ["provider", "status", "sandbox"]


@admin.register(Hit)
class HitAdmin(ReadOnlyAdmin):
    list_display = ["external_id", "publication", "max_assignments", "reward", "label", "status"]
    search_fields = ["external_id"]


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "campaign", "worker", "kind", "amount", "fee", "status"]
    list_filter = ["kind", "status", "provider", "campaign"]
    search_fields = ["worker__pseudonym", "idempotency_key", "provider_reference"]
