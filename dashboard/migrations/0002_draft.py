"""The launch wizard's draft state moves from files under DATA_DIR to Draft rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_gold_min_answered_gte_1"),
        ("dashboard", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Draft",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("state", models.JSONField(blank=True, default=dict)),
                (
                    "upload",
                    models.TextField(
                        blank=True,
                        help_text="The checked records of the upload waiting for models (JSON).",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True, db_index=True)),
                (
                    "campaign",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="wizard_draft",
                        to="annotation.campaign",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        help_text="The researcher who owns the draft campaign.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="wizard_drafts",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-updated_at", "-pk"],
            },
        ),
    ]
