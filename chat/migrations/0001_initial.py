"""ChatPair and ChatSeat move from annotation to chat, their tables untouched.

The database keeps ``annotation_chatpair`` and ``annotation_chatseat`` (``Meta.db_table``);
only Django's state moves (annotation's 0021 deletes the models from its own), and the content
types follow, so permissions and admin history stay attached.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MODELS = ("chatpair", "chatseat")


def content_types_move(apps, schema_editor, source="annotation", target="chat"):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="chat", target="annotation")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0020_chatseat_closed_by_page"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ChatPair',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('ended_at', models.DateTimeField(blank=True, null=True)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chat_pairs', to='annotation.campaign')),
                    ],
                    options={
                        'db_table': 'annotation_chatpair',
                    },
                ),
                migrations.CreateModel(
                    name='ChatSeat',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('stage', models.CharField(choices=[('situation', 'Writing the situation'), ('waiting', 'Waiting for a partner'), ('chatting', 'Chatting'), ('partner_left', 'Partner left'), ('left', 'Left the chat'), ('released', 'Released from the lobby'), ('failed', 'Ended: the bot failed'), ('rating', 'Rating the conversation'), ('done', 'Done')], max_length=16)),
                        ('offered', models.JSONField(blank=True, default=list, help_text='The emotion labels offered (ED), fixed at arrival.')),
                        ('slot', models.PositiveSmallIntegerField(blank=True, help_text='0: Speaker in the first conversation; 1: in the second.', null=True)),
                        ('endpoint', models.CharField(blank=True, help_text='The bot (interactive SSA).', max_length=64)),
                        ('waiting_since', models.DateTimeField(blank=True, null=True)),
                        ('channel_name', models.CharField(blank=True, max_length=200)),
                        ('last_seen_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('closed_by_page', models.BooleanField(default=False)),
                        ('ended_reason', models.CharField(blank=True, max_length=32)),
                        ('ended_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('assignment', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='chat_seat', to='annotation.assignment')),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chat_seats', to='annotation.campaign')),
                        ('dialogue', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='seats', to='annotation.dialogue')),
                        ('pair', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='seats', to='chat.chatpair')),
                        ('situation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='seats', to='annotation.situation')),
                        ('worker', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='chat_seats', to='annotation.worker')),
                    ],
                    options={
                        'db_table': 'annotation_chatseat',
                        'indexes': [models.Index(fields=['campaign', 'stage', 'waiting_since'], name='annotation__campaig_a5b248_idx')],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('pair__isnull', False)), fields=('pair', 'slot'), name='chatseat_pair_slot')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
