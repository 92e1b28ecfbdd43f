"""Publication, Hit and Payment move from annotation to recruitment, their tables untouched.

The database keeps ``annotation_publication``, ``annotation_hit`` and ``annotation_payment``
(``Meta.db_table``); only Django's state moves (annotation's 0022 deletes the models from its
own), and the content types follow, so permissions and admin history stay attached.
"""

from decimal import Decimal

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("publication", "hit", "payment")


def content_types_move(apps, schema_editor, source="annotation", target="recruitment"):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="recruitment", target="annotation")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0021_chat_models_moved"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Publication',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('provider', models.CharField(choices=[('local', 'Local'), ('mturk', 'Amazon Mechanical Turk'), ('prolific', 'Prolific'), ('simulated', 'Simulated'), ('model', 'Model (LLM judge)')], max_length=16)),
                        ('status', models.CharField(choices=[('publishing', 'Publishing'), ('live', 'Live'), ('paused', 'Paused'), ('stopped', 'Stopped'), ('failed', 'Failed')], default='publishing', max_length=16)),
                        ('sandbox', models.BooleanField(default=True)),
                        ('external_id', models.CharField(blank=True, help_text='HIT type id (MTurk) or study id (Prolific).', max_length=128)),
                        ('config', models.JSONField(blank=True, default=dict)),
                        ('reserved', models.DecimalField(decimal_places=2, default=Decimal('0.00'), help_text='Most this publication can cost, rewards and provider fees included.', max_digits=10)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('synced_at', models.DateTimeField(blank=True, null=True)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='publications', to='annotation.campaign')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotation_publication',
                    },
                ),
                migrations.CreateModel(
                    name='Hit',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=128)),
                        ('max_assignments', models.PositiveIntegerField()),
                        ('reward', models.DecimalField(decimal_places=2, max_digits=8)),
                        ('fee_per_assignment', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=8)),
                        ('label', models.CharField(blank=True, help_text='Pay bucket, if any.', max_length=64)),
                        ('status', models.CharField(blank=True, help_text='As the provider says.', max_length=32)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('publication', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='hits', to='recruitment.publication')),
                    ],
                    options={
                        'db_table': 'annotation_hit',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='Payment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('provider', models.CharField(choices=[('local', 'Local'), ('mturk', 'Amazon Mechanical Turk'), ('prolific', 'Prolific'), ('simulated', 'Simulated'), ('model', 'Model (LLM judge)')], max_length=16)),
                        ('kind', models.CharField(choices=[('reward', 'Reward'), ('bonus', 'Bonus'), ('topup', 'Pay-bucket top-up')], max_length=8)),
                        ('amount', models.DecimalField(decimal_places=2, max_digits=8)),
                        ('fee', models.DecimalField(decimal_places=2, default=Decimal('0'), max_digits=8)),
                        ('reason', models.TextField(blank=True)),
                        ('idempotency_key', models.CharField(max_length=64, unique=True)),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('sending', 'Sending'), ('paid', 'Paid'), ('failed', 'Failed'), ('uncertain', 'Uncertain (check with the provider)')], default='pending', max_length=16)),
                        ('provider_reference', models.CharField(blank=True, max_length=128)),
                        ('error', models.TextField(blank=True)),
                        ('actor', models.CharField(help_text='Who asked for it (user or process).', max_length=150)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('paid_at', models.DateTimeField(blank=True, null=True)),
                        ('assignment', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='payments', to='annotation.assignment')),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='payments', to='annotation.campaign')),
                        ('worker', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='payments', to='annotation.worker')),
                    ],
                    options={
                        'db_table': 'annotation_payment',
                        'ordering': ['id'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('amount__gt', 0)), name='payment_amount_gt_0'), models.CheckConstraint(condition=models.Q(('fee__gte', 0)), name='payment_fee_gte_0')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='publication',
                    constraint=models.UniqueConstraint(fields=('campaign', 'provider'), name='publication_one_per_campaign_provider'),
                ),
                migrations.AddConstraint(
                    model_name='publication',
                    constraint=models.CheckConstraint(condition=models.Q(('reserved__gte', 0)), name='publication_reserved_gte_0'),
                ),
                migrations.AddConstraint(
                    model_name='hit',
                    constraint=models.UniqueConstraint(fields=('publication', 'external_id'), name='hit_unique_per_publication'),
                ),
                migrations.AddConstraint(
                    model_name='hit',
                    constraint=models.CheckConstraint(condition=models.Q(('max_assignments__gte', 1)), name='hit_assignments_gte_1'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
