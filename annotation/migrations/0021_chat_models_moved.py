"""ChatPair and ChatSeat now belong to chat (chat's 0001): only Django's state forgets them
here; their tables and rows stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_chatseat_closed_by_page"),
        ("chat", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ChatSeat"),
                migrations.DeleteModel(name="ChatPair"),
            ],
            database_operations=[],
        ),
    ]
