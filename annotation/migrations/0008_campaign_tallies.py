"""Per-campaign tallies of judgments (the dashboard's live numbers), filled from the judgments.

The fill is the SQL of ``annotation.tallies.tallies_rebuild`` as it was when this migration was
written, frozen here so that later changes to that module cannot change what the upgrade did.
"""

import django.db.models.deletion
from django.db import migrations, models

_HOUR = {
    "postgresql": "date_trunc('hour', q.first)",
    "sqlite": "strftime('%Y-%m-%d %H:00:00', q.first)",
}

_FILL = """
INSERT INTO annotation_campaigntally
    (campaign_id, hour, shard, level, pairs, judgments, first_at, last_at)
SELECT q.campaign_id, {hour}, q.worker_id % 8, q.level,
       COUNT(*), SUM(q.n), MIN(q.first), MAX(q.last)
FROM (
    SELECT p.campaign_id AS campaign_id, p.worker_id AS worker_id, p.n AS n,
           p.first AS first, p.last AS last,
           ROW_NUMBER() OVER (PARTITION BY p.item_id ORDER BY p.first, p.worker_id) AS level
    FROM (
        SELECT i.campaign_id AS campaign_id, j.item_id AS item_id, j.worker_id AS worker_id,
               COUNT(*) AS n, MIN(j.created_at) AS first, MAX(j.created_at) AS last
        FROM annotation_judgment j JOIN annotation_item i ON i.id = j.item_id
        WHERE i.gold IS NULL
        GROUP BY i.campaign_id, j.item_id, j.worker_id
    ) p
) q
GROUP BY 1, 2, 3, 4
"""


def _fill(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(_FILL.format(hour=_HOUR[connection.vendor]))


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_item_claims"),
    ]

    operations = [
        migrations.CreateModel(
            name="CampaignTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "hour",
                    models.DateTimeField(
                        help_text="The hour (UTC, truncated) the pairs were stored in."
                    ),
                ),
                ("shard", models.PositiveSmallIntegerField()),
                ("level", models.PositiveSmallIntegerField()),
                ("pairs", models.PositiveIntegerField(default=0)),
                ("judgments", models.PositiveIntegerField(default=0)),
                ("first_at", models.DateTimeField()),
                ("last_at", models.DateTimeField()),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tallies",
                        to="annotation.campaign",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("campaign", "hour", "shard", "level"), name="tally_unique_bucket"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("shard__lt", 8), ("level__gte", 1)),
                        name="tally_shard_level",
                    ),
                ],
            },
        ),
        migrations.RunPython(_fill, migrations.RunPython.noop, elidable=True),
    ]
