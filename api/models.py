"""API keys (stored hashed) and the idempotency keys of requests that spend money."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ApiKey(models.Model):
    """A researcher's key for the REST API; it sees what its user sees in the dashboard.

    Only the SHA-256 of the key is stored (a key is 256 random bits, so a fast hash is
    enough); ``prefix`` (its first characters) names it in lists. A revoked key stays, so
    the list shows when it was revoked.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100, blank=True, help_text="What the key is for.")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… of {self.user_id}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class IdempotencyKey(models.Model):
    """The first response to a request sent with an ``Idempotency-Key`` header.

    The unique constraint on (user, key) is what makes a replay, even a concurrent one,
    spend nothing twice: only the request that inserted the row acts. ``status_code`` is
    null while that request is still running.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_idempotency_keys"
    )
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="api_idempotency_user_key"),
            models.CheckConstraint(
                condition=Q(status_code__isnull=True) | Q(status_code__gte=100),
                name="api_idempotency_status",
            ),
        ]
        indexes = [models.Index(fields=["created_at"], name="api_idempotency_created")]

    def __str__(self) -> str:
        return f"{self.key} of {self.user_id}"
