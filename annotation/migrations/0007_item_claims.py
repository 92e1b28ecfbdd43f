"""Allocation's counters on Item (judged, claims), its random rank and the open-items index.

The counters are filled from the judgments and leases already stored; each existing item
gets its own random rank.
"""

from django.db import migrations, models

import annotation.models.campaigns

_COUNT = """
UPDATE annotation_item SET
    judged = (SELECT COUNT(DISTINCT j.worker_id) FROM annotation_judgment j
              WHERE j.item_id = annotation_item.id),
    claims = (SELECT COUNT(DISTINCT j.worker_id) FROM annotation_judgment j
              WHERE j.item_id = annotation_item.id)
           + (SELECT COUNT(*) FROM annotation_lease l WHERE l.item_id = annotation_item.id)
"""

_SHUFFLE = {
    "postgresql": "UPDATE annotation_item SET shuffle = floor(random() * 2147483647)::integer",
    "sqlite": "UPDATE annotation_item SET shuffle = abs(random() % 2147483647)",
}


def _fill(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_COUNT)
        cursor.execute(_SHUFFLE[schema_editor.connection.vendor])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0006_auditlog_soft_block"),
    ]

    operations = [
        migrations.AddField(
            model_name="item",
            name="claims",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="item",
            name="judged",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="item",
            name="shuffle",
            field=models.IntegerField(
                default=annotation.models.campaigns.shuffle_new, editable=False
            ),
        ),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(
                condition=models.Q(("gold__isnull", True)),
                fields=["campaign", "claims", "shuffle"],
                name="item_open_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="lease",
            index=models.Index(fields=["expires_at"], name="annotation__expires_93f692_idx"),
        ),
        migrations.AddConstraint(
            model_name="item",
            constraint=models.CheckConstraint(
                condition=models.Q(("claims__gte", models.F("judged"))),
                name="item_claims_gte_judged",
            ),
        ),
        # Last: on PostgreSQL the fill queues foreign-key trigger events, after which the
        # same transaction may not change the table's schema.
        migrations.RunPython(_fill, migrations.RunPython.noop, elidable=True),
    ]
