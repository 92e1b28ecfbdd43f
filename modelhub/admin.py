"""The model registry, stored generations and generation jobs (with their progress) in the
admin. Endpoints are checked by the same validation as ``register_model`` and saved through
its service (``endpoint_register``); jobs are queued again through ``modelhub.jobs`` and never
added or deleted here."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from modelhub.backends import backend_load
from modelhub.decoding import decoding_validate
from modelhub.jobs import job_retry
from modelhub.models import Generation, GenerationJob, ModelEndpoint
from modelhub.services import endpoint_register


class ModelEndpointForm(forms.ModelForm):
    """Refuse a configuration the backend rejects and decoding parameters that are wrong."""

    class Meta:
        model = ModelEndpoint
        fields = ["name", "backend", "config", "decoding", "notes"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("backend") and isinstance(data.get("config"), dict):
            try:
                backend_load(data["backend"], data["config"])
            except ValueError as exc:
                self.add_error("config", str(exc))
        try:
            decoding_validate(data.get("decoding"))
        except ValueError as exc:
            self.add_error("decoding", str(exc))
        return data


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    form = ModelEndpointForm
    list_display = ["name", "backend", "decoding_summary", "created_at"]
    list_filter = ["backend"]
    search_fields = ["name", "notes"]

    @admin.display(description="decoding")
    def decoding_summary(self, obj: ModelEndpoint) -> str:
        return json.dumps(obj.decoding) if obj.decoding else "greedy (default)"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["name"] if obj is not None else []  # the name is the key: register anew to rename

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """Register through ``endpoint_register``, as ``register_model`` does (the decoding's
        default length written in), not by saving the form's row."""
        endpoint = endpoint_register(
            name=obj.name,
            backend=obj.backend,
            config=obj.config,
            decoding=obj.decoding,
            notes=obj.notes,
        )
        obj.pk, obj.decoding, obj.created_at = endpoint.pk, endpoint.decoding, endpoint.created_at


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ["endpoint", "context_hash", "response", "created_at"]
    list_filter = ["endpoint"]
    search_fields = ["response"]
    readonly_fields = [f.name for f in Generation._meta.fields]


@admin.register(GenerationJob)
class GenerationJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "endpoint",
        "kind",
        "label",
        "status",
        "progress_display",
        "attempts",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "status", "endpoint"]
    search_fields = ["label", "error"]
    readonly_fields = [
        "endpoint",
        "kind",
        "label",
        "batch_size",
        "total",
        "done",
        "status",
        "error",
        "attempts",
        "created_at",
        "started_at",
        "finished_at",
        "examples",
    ]
    actions = ["retry"]

    @admin.display(description="progress")
    def progress_display(self, obj: GenerationJob) -> str:
        return f"{obj.done}/{obj.total} ({obj.progress:.0%})"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs are started by code (modelhub.jobs), not typed in

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a job's rows are modelhub.jobs' alone; a running one would lose its row

    @admin.action(description="Queue the selected jobs again (keeps what they stored)")
    def retry(self, request: HttpRequest, queryset: QuerySet[GenerationJob]) -> None:
        jobs = list(queryset.exclude(status=GenerationJob.Status.DONE))
        for job in jobs:
            job_retry(job=job)  # run again by its kind's runner
        self.message_user(request, f"{len(jobs)} job(s) queued again.", messages.SUCCESS)
