"""Rows only the services write, view-only in the admin: workers, assignments, judgments, the
audit log, blocks, and the dialogues of imported data sets and collected chats."""

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.admin.base import ReadOnlyAdmin
from annotation.dataset_reads import deidentification_replacements
from annotation.models import (
    Assignment,
    AuditLog,
    Consent,
    Dataset,
    Dialogue,
    Judgment,
    Lease,
    Participation,
    Situation,
    Utterance,
    Worker,
    WorkerBlock,
)
from annotation.quality import worker_unblock


@admin.register(Participation)
class ParticipationAdmin(ReadOnlyAdmin):
    """Soft blocks per campaign, view-only; the action calls quality control's service."""

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
class WorkerAdmin(ReadOnlyAdmin):
    """Workers arrive through their provider (``worker_get_or_create``) and are erased by
    ``worker_forget``; provider-wide blocks are WorkerBlocks."""

    list_display = ["pseudonym", "provider", "external_id", "created_at"]
    list_filter = ["provider"]
    search_fields = ["pseudonym", "external_id"]


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


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "campaign", "action", "actor", "worker", "amount"]
    list_filter = ["action", "provider", "campaign"]
    search_fields = ["worker__pseudonym", "actor", "detail"]


@admin.register(WorkerBlock)
class WorkerBlockAdmin(ReadOnlyAdmin):
    list_display = ["worker", "owner", "reason", "actor", "created_at", "lifted_at"]
    search_fields = ["worker__pseudonym", "reason"]


# --- dialogues: imported data sets and collected chats --------------------------------------


class ImportedAdmin(ReadOnlyAdmin):
    """Data sets, situations and dialogues are written by their import (``dataset_import``)
    and by the chat's services: view-only here, but one imported by mistake may go."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)


@admin.register(Dataset)
class DatasetAdmin(ImportedAdmin):
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
class SituationAdmin(ImportedAdmin):
    list_display = ["emotion", "text", "worker", "author", "campaign", "dataset", "flagged"]
    list_filter = ["flagged", "emotion", "campaign", "dataset"]
    search_fields = ["text", "author", "worker__pseudonym"]


class UtteranceInline(admin.TabularInline):
    model = Utterance
    fields = ("index", "speaker", "worker", "text", "label", "signals")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Dialogue)
class DialogueAdmin(ImportedAdmin):
    list_display = ["key", "dataset", "campaign", "source", "split", "emotion", "status", "flagged"]
    list_filter = ["status", "flagged", "split", "source", "campaign", "dataset"]
    search_fields = ["key"]
    inlines = [UtteranceInline]
