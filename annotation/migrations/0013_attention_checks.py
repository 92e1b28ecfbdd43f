"""Attention checks: gold items whose answer is stated in the item (issue #18, item 3)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0012_campaign_rate_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="item",
            name="attention",
            field=models.BooleanField(
                default=False,
                help_text="An explicit attention check (a gold item whose text tells the worker "
                "what to answer, e.g. \"select 'Yes' for this item\"): objective, so failing it "
                "may justify a rejection where the provider allows it. Other gold items are "
                "subjective agreement checks: soft blocks and review hints only "
                "(docs/protocols.md, quality control).",
            ),
        ),
        migrations.AddConstraint(
            model_name="item",
            constraint=models.CheckConstraint(
                condition=models.Q(("attention", False)) | models.Q(("gold__isnull", False)),
                name="item_attention_is_gold",
            ),
        ),
    ]
