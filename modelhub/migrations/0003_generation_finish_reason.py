"""Record why each reply ended and the prompt format it was generated with; write the length
limit that applied into every endpoint registered before registration filled it in.

Registrations without ``max_new_tokens`` ran at the old default of 40 tokens. New ones get
their backend's default (512 for chat models), so the old ones say 40 explicitly: their
decoding hash is the same (the hash covers every parameter, defaults included) and their
stored replies stay theirs.
"""

from django.db import migrations, models

OLD_DEFAULT = 40


def length_limit_written(apps, schema_editor):
    ModelEndpoint = apps.get_model("modelhub", "ModelEndpoint")
    for endpoint in ModelEndpoint.objects.all():
        decoding = dict(endpoint.decoding or {})
        if "max_new_tokens" not in decoding:
            decoding["max_new_tokens"] = OLD_DEFAULT
            ModelEndpoint.objects.filter(pk=endpoint.pk).update(decoding=decoding)


class Migration(migrations.Migration):
    dependencies = [
        ("modelhub", "0002_generation_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="generation",
            name="finish_reason",
            field=models.CharField(
                blank=True,
                help_text="Why the reply ended: stop (the model ended it) or length (cut at "
                "max_new_tokens: truncated). Blank for replies stored before it was recorded.",
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="generation",
            name="prompt_format",
            field=models.CharField(
                blank=True,
                help_text="The format the context was rendered in (chat template hash, roles).",
                max_length=200,
            ),
        ),
        migrations.RunPython(length_limit_written, migrations.RunPython.noop),
    ]
