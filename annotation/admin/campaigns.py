"""Campaigns and items in the admin: added and changed through the services, so they refuse
what the services refuse."""

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from annotation.admin.base import ServiceAdmin, ServiceForm
from annotation.campaign_settings import CONTROLS, SETTINGS, settings_clean
from annotation.models import (
    Campaign,
    Item,
)
from annotation.services import (
    campaign_budget_check,
    campaign_budget_set,
    campaign_create,
    campaign_set_status,
    campaign_settings_update,
)
from annotation.services.campaigns import (
    campaign_create_check,
    campaign_details_check,
    campaign_details_update,
    campaign_parameters_clean,
    campaign_settings_check,
)
from annotation.services.items import ItemRow, items_add, items_clean
from annotation.study_pages import STUDY_FIELDS
from evalsite.errors import AnnotationError

# A campaign's own rate limits (annotation.ratelimits).
RATE_LIMITS = ("rate_per_ip", "rate_per_worker", "chat_frames_per_second")
# What ``campaign_create`` takes itself; the reward is set next by ``campaign_settings_update``.
WORK = ("redundancy", "items_per_assignment", "lease_seconds")
# Left empty on the add form, these start at the protocol's defaults, as ``campaign_create``.
PROTOCOL_DEFAULTS = (*WORK, "min_seconds_per_item", "max_items_per_worker")


class CampaignForm(ServiceForm):
    """The campaign services' checks (``campaign_create_check``, ``campaign_settings_check``,
    the ledger's ``campaign_budget_check``), asked before anything is saved."""

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            for name in PROTOCOL_DEFAULTS:
                if name in self.fields:
                    self.fields[name].required = False
                    self.fields[name].help_text += " Empty: the protocol's default."
                    self.initial.pop(name, None)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "parameters" in self.fields and "parameters" in data:
            protocol = self.instance.protocol if self.instance.pk else data.get("protocol")
            if not protocol:
                return data
            try:
                data["parameters"] = campaign_parameters_clean(
                    protocol=protocol, parameters=data["parameters"] or {}
                )
            except AnnotationError as exc:
                self.refuse(exc, on="parameters")
                return data  # the rest is checked once the parameters are right
        values = {k: data[k] for k in SETTINGS if k in self.fields and k in data}
        texts = {k: data[k] for k in STUDY_FIELDS if k in self.fields and k in data}
        try:
            if self.instance.pk is None:
                self._create_check(data, values, texts)
            else:
                self._change_check(data, values, texts)
        except AnnotationError as exc:
            self.refuse(exc)
        return data

    def _create_check(
        self, data: dict[str, Any], values: dict[str, Any], texts: dict[str, Any]
    ) -> None:
        if {"slug", "protocol"} <= data.keys():  # else the form refused them already
            arguments, reward = _create_arguments(data, values, texts)
            settings_clean(reward)
            campaign_create_check(**arguments)

    def _change_check(
        self, data: dict[str, Any], values: dict[str, Any], texts: dict[str, Any]
    ) -> None:
        budget = values.pop("budget", None)
        parameters = data.get("parameters") if "parameters" in self.fields else None
        campaign_settings_check(
            campaign=self.instance, values=values, parameters=parameters, study=texts
        )
        if "name" in data and "withdrawal" in data:
            campaign_details_check(name=data["name"], withdrawal=data["withdrawal"])
        if "budget" in self.changed_data and budget is not None:
            campaign_budget_check(campaign=self.instance, budget=budget)


def _create_arguments(
    data: dict[str, Any], values: dict[str, Any], texts: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the add form's ``campaign_create`` arguments (but the owner) and the reward,
    which ``campaign_settings_update`` sets next; an empty protocol default is left out."""
    given = {k: v for k, v in values.items() if v is not None or k not in PROTOCOL_DEFAULTS}
    reward = {k: given.pop(k) for k in ("reward",) if k in given}
    work = {k: given.pop(k) for k in WORK if k in given}
    arguments = {
        "slug": data["slug"],
        "name": data.get("name", ""),
        "protocol": data["protocol"],
        "parameters": data.get("parameters"),
        "controls": given,
        "study": texts,
        "withdrawal": data.get("withdrawal") or Campaign.Withdrawal.KEEP,
        **work,
    }
    return arguments, reward


@admin.register(Campaign)
class CampaignAdmin(ServiceAdmin):
    """Campaigns are created by ``campaign_create`` (empty work settings: the protocol's
    defaults) and change through ``campaign_settings_update``, ``campaign_details_update``
    and, for the budget, the core's ``campaign_budget_set`` (never below what is
    committed). Status changes only through the lifecycle's actions
    (``campaign_set_status``); the protocol and slug never change once created; once out of
    the draft stage only quality control and the budget may change."""

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
            if obj.status != Campaign.Status.DRAFT:  # as services.campaign_settings_check
                fixed += ["parameters", *(s for s in SETTINGS if s not in CONTROLS)]
        return fixed

    @transaction.atomic
    def save_model(
        self, request: HttpRequest, obj: Campaign, form: CampaignForm, change: bool
    ) -> None:
        data = form.cleaned_data
        values = {k: data[k] for k in SETTINGS if k in form.fields}
        texts = {k: data[k] for k in STUDY_FIELDS if k in form.fields}
        if change:
            campaign = Campaign.objects.get(pk=obj.pk)
            budget = values.pop("budget", None)
            campaign_settings_update(
                campaign=campaign,
                values=values,
                parameters=data["parameters"] if "parameters" in form.fields else None,
                study=texts,
                actor=request.user.get_username(),
            )
            campaign_details_update(
                campaign=campaign,
                name=data["name"],
                owner=data["owner"],
                withdrawal=data["withdrawal"],
            )
            if "budget" in form.changed_data:
                campaign_budget_set(
                    campaign=campaign, budget=budget, actor=request.user.get_username()
                )
        else:
            arguments, reward = _create_arguments(data, values, texts)
            campaign = campaign_create(owner=data["owner"], **arguments)
            campaign_settings_update(campaign=campaign, values=reward)
        obj.pk = campaign.pk
        obj.refresh_from_db()

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


class ItemForm(ServiceForm):
    """The protocol's checks of an item (``items_clean``), asked before it is added."""

    class Meta:
        model = Item
        fields = ["campaign", "key", "payload", "gold", "attention"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not {"campaign", "key", "payload"} <= data.keys():
            return data
        try:
            key = data["key"]
            data["payload"], data["gold"], data["attention"] = items_clean(
                campaign=data["campaign"], items=[_item_row(data)]
            )[key]
        except AnnotationError as exc:
            self.refuse(exc)
        return data


def _item_row(data: dict[str, Any]) -> ItemRow:
    """Return the form's item as ``items_add`` takes it (gold and attention when given)."""
    if data.get("gold") is None:
        return (data["key"], data["payload"])
    return (data["key"], data["payload"], data["gold"], bool(data.get("attention")))


@admin.register(Item)
class ItemAdmin(ServiceAdmin):
    """Items are added by ``items_add``, so the protocol validates them; an item never changes
    once added (workers may have judged it, and ``items_add`` refuses a key again with other
    content), so an existing one is view-only."""

    form = ItemForm
    list_display = ["key", "campaign", "is_gold", "created_at"]
    list_filter = ["campaign", ("gold", admin.EmptyFieldListFilter)]
    search_fields = ["key"]

    @admin.display(boolean=True, description="gold check")
    def is_gold(self, item: Item) -> bool:
        return item.is_gold

    def has_change_permission(self, request: HttpRequest, obj: Item | None = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Item, form: ItemForm, change: bool) -> None:
        data = form.cleaned_data
        items_add(campaign=data["campaign"], items=[_item_row(data)])
        obj.pk = Item.objects.get(campaign=data["campaign"], key=data["key"]).pk
        obj.refresh_from_db()
