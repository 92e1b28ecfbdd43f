"""A campaign's own rate limits (annotation.ratelimits); empty means the site's defaults."""

from django.db import migrations, models


def _check(name: str) -> migrations.AddConstraint:
    return migrations.AddConstraint(
        model_name="campaign",
        constraint=models.CheckConstraint(
            condition=models.Q((f"{name}__isnull", True)) | models.Q((f"{name}__gte", 1)),
            name=f"campaign_{name}_gte_1",
        ),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_campaign_open_links"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="rate_per_ip",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                help_text="Arrivals (and, counted apart, answers) a minute one network address "
                "may send to this study; empty for the site's default (EVALSITE_RATE_PER_IP).",
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="rate_per_worker",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                help_text="The same for one worker at one address; empty for the site's "
                "default (EVALSITE_RATE_PER_WORKER).",
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="chat_frames_per_second",
            field=models.PositiveSmallIntegerField(
                blank=True,
                null=True,
                help_text="Frames a second one chat socket may send, on average; empty for the "
                "site's default (EVALSITE_CHAT_FRAMES_PER_SECOND).",
            ),
        ),
        _check("rate_per_ip"),
        _check("rate_per_worker"),
        _check("chat_frames_per_second"),
    ]
