"""Local links become per-worker signed links unless a campaign allows open links.

Campaigns that exist already keep the open links their workers were given (the column is
added as true for them); new campaigns start closed (the model's default, false).
"""

from django.db import migrations, models

OPEN_HELP = (
    "Anyone with the task link may take part under any workerId (demo, classroom). Off: each "
    "local worker needs the signed link issued for them."
)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_gold_min_answered_gte_1"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="open_arrivals_per_address",
            field=models.PositiveIntegerField(
                default=20,
                help_text="With open links: new participants one network address may start "
                "per hour.",
            ),
        ),
        # True for the rows that exist, then the model's default for new ones.
        migrations.AddField(
            model_name="campaign",
            name="open_links",
            field=models.BooleanField(default=True, help_text=OPEN_HELP),
        ),
        migrations.AlterField(
            model_name="campaign",
            name="open_links",
            field=models.BooleanField(default=False, help_text=OPEN_HELP),
        ),
        migrations.AddConstraint(
            model_name="campaign",
            constraint=models.CheckConstraint(
                condition=models.Q(open_arrivals_per_address__gte=1),
                name="campaign_open_arrivals_per_address_gte_1",
            ),
        ),
    ]
