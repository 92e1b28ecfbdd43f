"""Blocks get a scope (``WorkerBlock.owner``) and the audit log a settings-change action.

Existing blocks keep ``owner`` empty, i.e. stay global: before this every block refused the
worker everywhere and was mirrored to the provider account-wide, so global is what they
meant; guessing an owner from the campaign a block was decided in would narrow an admin's
block silently. An admin narrows one by lifting it (``manage.py block --unblock``) and
letting the researcher block again."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_recruitment_models_moved"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="workerblock",
            name="workerblock_one_active",
        ),
        migrations.AddField(
            model_name="workerblock",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                help_text="The researcher whose studies the block covers; empty: every study (global).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="worker_blocks",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="auditlog",
            name="action",
            field=models.CharField(
                choices=[
                    ("publish", "Publish"),
                    ("extend", "Add assignments"),
                    ("pause", "Pause"),
                    ("resume", "Resume"),
                    ("stop", "Stop"),
                    ("approve", "Approve"),
                    ("reject", "Reject"),
                    ("bonus", "Bonus"),
                    ("block", "Block"),
                    ("soft_block", "Soft block (one campaign)"),
                    ("unblock", "Unblock"),
                    ("notify", "Notify"),
                    ("sync", "Sync"),
                    ("refused", "Refused"),
                    ("forget", "Forget (withdrawal, erasure)"),
                    ("settings", "Settings change"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="workerblock",
            constraint=models.UniqueConstraint(
                condition=models.Q(("lifted_at", None), ("owner__isnull", False)),
                fields=("worker", "owner"),
                name="workerblock_one_active_per_owner",
            ),
        ),
        migrations.AddConstraint(
            model_name="workerblock",
            constraint=models.UniqueConstraint(
                condition=models.Q(("lifted_at", None), ("owner", None)),
                fields=("worker",),
                name="workerblock_one_active_global",
            ),
        ),
    ]
