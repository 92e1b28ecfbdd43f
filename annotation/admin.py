"""The Django admin over the raw study data; the researcher dashboard comes separately."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.campaign_settings import CONTROLS, SETTINGS, settings_clean
from annotation.datasets.selectors import deidentification_replacements
from annotation.exceptions import AnnotationError, InvalidParameters
from annotation.models import (
    Assignment,
    AuditLog,
    Campaign,
    Consent,
    Dataset,
    Dialogue,
    Hit,
    Item,
    Judgment,
    Lease,
    Participation,
    Payment,
    Publication,
    Situation,
    Utterance,
    Worker,
    WorkerBlock,
)
from annotation.protocols import registry
from annotation.quality import worker_unblock
from annotation.services import campaign_set_status
from annotation.study_pages import STUDY_FIELDS, study_clean


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written only by their services (money, audit, assignments, leases, judgments):
    view, never edit; an edit here would bypass the checks and counters that keep them exact."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# A campaign's own rate limits (annotation.ratelimits).
RATE_LIMITS = ("rate_per_ip", "rate_per_worker", "chat_frames_per_second")


class CampaignForm(forms.ModelForm):
    """Campaign edits go through the protocol's parameter validation, as in the services."""

    class Meta:
        model = Campaign
        fields = [
            "slug",
            "name",
            "protocol",
            "parameters",
            "redundancy",
            "items_per_assignment",
            "lease_seconds",
            "reward",
            "budget",
            "owner",
            "gold_rate",
            "gold_min_accuracy",
            "gold_min_answered",
            "min_seconds_per_item",
            "max_items_per_worker",
            *RATE_LIMITS,
            *STUDY_FIELDS,
            "withdrawal",
            "training_pass_mark",
            "training_attempts",
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        values = {k: data[k] for k in SETTINGS if k in self.fields and k in data}
        texts = {k: data[k] for k in STUDY_FIELDS if k in self.fields and k in data}
        for clean, given in ((settings_clean, values), (study_clean, texts)):
            try:
                data.update(clean(given))
            except InvalidParameters as exc:
                for field, message in exc.fields.items():
                    self.add_error(field, message)
        name = data.get("protocol") or (self.instance.protocol if self.instance.pk else "")
        if name and "parameters" in self.fields:
            try:
                protocol = registry.get(name)
                data["parameters"] = protocol.clean_parameters(data.get("parameters") or {})
            except InvalidParameters as exc:
                details = [f"{field}: {message}" for field, message in exc.fields.items()]
                self.add_error("parameters", [exc.message, *details])
        return data


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    """Campaigns start as drafts; their status changes only through the lifecycle's actions
    (``campaign_set_status``), and the protocol and slug never change once created; once out
    of the draft stage only quality control may change, as in ``campaign_settings_update``."""

    form = CampaignForm
    actions = ["go_live", "pause", "finish"]
    list_display = ["slug", "name", "protocol", "status", "redundancy", "budget", "created_at"]
    list_filter = ["protocol", "status"]
    search_fields = ["slug", "name"]
    fieldsets = [
        (None, {"fields": ["slug", "name", "protocol", "parameters", "status", "owner"]}),
        (
            "Work and pay",
            {"fields": ["redundancy", "items_per_assignment", "lease_seconds", "reward", "budget"]},
        ),
        (
            "Quality control (may change while live)",
            {
                "fields": [
                    "gold_rate",
                    "gold_min_accuracy",
                    "gold_min_answered",
                    "min_seconds_per_item",
                    "max_items_per_worker",
                ]
            },
        ),
        ("Rate limits (empty: the site's defaults; may change live)", {"fields": RATE_LIMITS}),
        ("Study pages (Markdown; may change live)", {"fields": [*STUDY_FIELDS, "withdrawal"]}),
        ("Training (may change live)", {"fields": ["training_pass_mark", "training_attempts"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Campaign | None = None) -> list[str]:
        fixed = ["status"]
        if obj is not None:
            fixed += ["slug", "protocol"]
            if obj.status != Campaign.Status.DRAFT:  # as services.campaign_settings_update
                fixed += ["parameters", *(s for s in SETTINGS if s not in CONTROLS)]
        return fixed

    def _set_status(self, request: HttpRequest, queryset: QuerySet[Campaign], status: str) -> None:
        changed = 0
        for campaign in queryset:
            try:
                campaign_set_status(campaign=campaign, status=status)
                changed += 1
            except AnnotationError as exc:
                self.message_user(request, f"{campaign.slug}: {exc.message}", messages.ERROR)
        if changed:
            self.message_user(request, f"{changed} campaign(s) now {status}.")

    @admin.action(description="Go live (or resume) the selected campaigns")
    def go_live(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        self._set_status(request, queryset, Campaign.Status.LIVE)

    @admin.action(description="Pause the selected campaigns")
    def pause(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        self._set_status(request, queryset, Campaign.Status.PAUSED)

    @admin.action(description="Finish the selected campaigns (for good)")
    def finish(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        self._set_status(request, queryset, Campaign.Status.FINISHED)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["key", "campaign", "is_gold", "created_at"]
    list_filter = ["campaign", ("gold", admin.EmptyFieldListFilter)]
    search_fields = ["key"]

    @admin.display(boolean=True, description="gold check")
    def is_gold(self, item: Item) -> bool:
        return item.is_gold


@admin.register(Participation)
class ParticipationAdmin(admin.ModelAdmin):
    """Soft blocks per campaign; the actions call quality control's services."""

    list_display = ["campaign", "worker", "soft_blocked", "reason", "changed_at"]
    list_filter = ["soft_blocked", "campaign"]
    search_fields = ["worker__pseudonym"]
    raw_id_fields = ["worker"]
    actions = ["unblock"]

    @admin.action(description="Lift the soft block of the selected workers")
    def unblock(self, request: HttpRequest, queryset: QuerySet[Participation]) -> None:
        for participation in queryset.select_related("campaign", "worker"):
            worker_unblock(campaign=participation.campaign, worker=participation.worker)
        self.message_user(request, f"Unblocked {queryset.count()} worker(s).")


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["pseudonym", "provider", "external_id", "created_at"]
    list_filter = ["provider"]
    search_fields = ["pseudonym", "external_id"]
    readonly_fields = ["pseudonym"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["pk", "campaign", "worker", "status", "accepted_at", "submitted_at"]
    list_filter = ["status", "campaign"]
    search_fields = ["provider_assignment_id", "worker__pseudonym"]
    raw_id_fields = ["worker"]


@admin.register(Lease)
class LeaseAdmin(ReadOnlyAdmin):
    list_display = ["item", "worker", "created_at", "expires_at"]
    raw_id_fields = ["item", "worker", "assignment"]


@admin.register(Consent)
class ConsentAdmin(ReadOnlyAdmin):
    list_display = ["campaign", "worker", "version", "given_at"]
    list_filter = ["campaign", "version"]
    search_fields = ["worker__pseudonym"]
    raw_id_fields = ["campaign", "worker"]


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["item", "worker", "question", "value", "time_spent_ms", "created_at"]
    list_filter = ["question", "item__campaign"]
    search_fields = ["worker__pseudonym", "item__key"]
    raw_id_fields = ["item", "worker", "assignment"]


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


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "campaign", "action", "actor", "worker", "amount"]
    list_filter = ["action", "provider", "campaign"]
    search_fields = ["worker__pseudonym", "actor", "detail"]


@admin.register(WorkerBlock)
class WorkerBlockAdmin(ReadOnlyAdmin):
    list_display = ["worker", "reason", "actor", "created_at", "lifted_at"]
    search_fields = ["worker__pseudonym", "reason"]


# --- dialogues: imported data sets and collected chats --------------------------------------


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source_format", "created_at", "deidentification_link"]

    def get_urls(self) -> list:
        review = self.admin_site.admin_view(self.deidentification_view)
        name = "annotation_dataset_deidentification"
        return [path("<int:pk>/deidentification/", review, name=name), *super().get_urls()]

    @admin.display(description="De-identification")
    def deidentification_link(self, dataset: Dataset) -> str:
        url = reverse("admin:annotation_dataset_deidentification", args=[dataset.pk])
        return format_html('<a href="{}">review replacements</a>', url)

    def deidentification_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """List, per dialogue, every span that de-identification replaced (staff only)."""
        dataset = get_object_or_404(Dataset, pk=pk)
        if not self.has_view_permission(request, dataset):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": f"De-identification of {dataset.name}",
            "dataset": dataset,
            "rows": deidentification_replacements(dataset),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/annotation/deidentification.html", context)


@admin.register(Situation)
class SituationAdmin(admin.ModelAdmin):
    list_display = ["emotion", "text", "worker", "author", "campaign", "dataset", "flagged"]
    list_filter = ["flagged", "emotion", "campaign", "dataset"]
    search_fields = ["text", "author", "worker__pseudonym"]


class UtteranceInline(admin.TabularInline):
    model = Utterance
    fields = ("index", "speaker", "worker", "text", "label", "signals")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Dialogue)
class DialogueAdmin(admin.ModelAdmin):
    list_display = ["key", "dataset", "campaign", "source", "split", "emotion", "status", "flagged"]
    list_filter = ["status", "flagged", "split", "source", "campaign", "dataset"]
    search_fields = ["key"]
    inlines = [UtteranceInline]
