"""Publication, Hit and Payment now belong to recruitment (recruitment's 0001): only Django's
state forgets them here; their tables and rows stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_chat_models_moved"),
        ("recruitment", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="Payment"),
                migrations.DeleteModel(name="Hit"),
                migrations.DeleteModel(name="Publication"),
            ],
            database_operations=[],
        ),
    ]
