"""GenerationJob.kind: which runner works through a job. Jobs stored before it are told apart
by their label, as the runner registry did then: an LLM judge's label starts with "judge:"."""

from django.db import migrations, models

JUDGE_LABEL_PREFIX = "judge:"  # annotation.judges' labels, frozen here as they were written


def kinds_from_labels(apps, schema_editor):
    GenerationJob = apps.get_model("modelhub", "GenerationJob")
    GenerationJob.objects.filter(label__startswith=JUDGE_LABEL_PREFIX).update(kind="judge")


class Migration(migrations.Migration):
    dependencies = [
        ("modelhub", "0003_generation_finish_reason"),
    ]

    operations = [
        migrations.AddField(
            model_name="generationjob",
            name="kind",
            field=models.CharField(
                choices=[("generation", "Generation"), ("judge", "Judge")],
                default="generation",
                help_text="Which runner works through the job (the app that owns the kind "
                "registers it).",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="generationjob",
            name="examples",
            field=models.JSONField(
                help_text="The distinct examples: {turns, reference} each, and what the kind's "
                "runner needs besides."
            ),
        ),
        # Back to 0003 the column goes and the labels, which were never changed, remain.
        migrations.RunPython(kinds_from_labels, migrations.RunPython.noop),
    ]
