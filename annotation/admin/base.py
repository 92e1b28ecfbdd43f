"""What every admin of the studies' rows shares: read-only rows, and adds and changes through
the services."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from evalsite.errors import AnnotationError


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


class ServiceAdmin(admin.ModelAdmin):
    """Adds and changes through the services; a refusal the form's check could not see (the
    state moved on between the check and the save) is shown as a message, and the admin's
    transaction leaves nothing behind. No service deletes campaigns or items (their judgments,
    leases, counters and payments hang on them): neither does the admin."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except AnnotationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


class ServiceForm(forms.ModelForm):
    """A model form that shows a service's refusal on the fields it names."""

    def refuse(self, exc: AnnotationError, *, on: str | None = None) -> None:
        """Show ``exc`` on the form fields it names, or everything on ``on`` (None: the form)."""
        named = {} if on else {f: m for f, m in exc.fields.items() if f in self.fields}
        for field, message in named.items():
            self.add_error(field, message or exc.message)
        rest = [f"{f}: {m}" for f, m in exc.fields.items() if f not in named]
        if not named:
            self.add_error(on, [exc.message, *rest])
        elif rest:
            self.add_error(None, rest)
