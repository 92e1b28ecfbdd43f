"""Assignment.items_done: the items judged in it, counted from the stored judgments."""

from django.db import migrations, models

_COUNT = """
UPDATE annotation_assignment SET items_done = (
    SELECT COUNT(DISTINCT j.item_id) FROM annotation_judgment j
    WHERE j.assignment_id = annotation_assignment.id
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_campaign_tallies"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="items_done",
            field=models.PositiveSmallIntegerField(default=0, editable=False),
        ),
        migrations.RunSQL(_COUNT, migrations.RunSQL.noop, elidable=True),
    ]
