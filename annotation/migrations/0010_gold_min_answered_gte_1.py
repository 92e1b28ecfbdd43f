"""Campaign.gold_min_answered is at least 1, as the settings schema says (0 becomes 1)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    # The fix-up commits before the constraint is added: on PostgreSQL an UPDATE queues
    # foreign-key trigger events, after which the same transaction may not alter the table.
    atomic = False

    dependencies = [
        ("annotation", "0009_assignment_items_done"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE annotation_campaign SET gold_min_answered = 1 WHERE gold_min_answered < 1",
            migrations.RunSQL.noop,
            elidable=True,
        ),
        migrations.AddConstraint(
            model_name="campaign",
            constraint=models.CheckConstraint(
                condition=models.Q(("gold_min_answered__gte", 1)),
                name="campaign_gold_min_answered_gte_1",
            ),
        ),
    ]
