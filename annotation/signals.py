"""What the studies tell the apps above them, as Django signals sent where it happens, inside
the caller's transaction (webhooks connects its events to them: docs/api.md, "Webhooks").

The core never imports those apps (docs/architecture.md, "Layers"); a receiver that writes
rows writes them in the sender's transaction, so they commit or roll back together.
"""

from django.dispatch import Signal

# An assignment became submitted (its row lock held by the sender): ``assignment``.
assignment_submitted = Signal()
# A campaign was finished for good: ``campaign``.
campaign_finished = Signal()
# A worker was soft-blocked in a campaign (and was not before): ``campaign``, ``worker``,
# ``reason``.
worker_blocked = Signal()
# Spending was recorded against a campaign's budget under its row lock: ``campaign``,
# ``committed`` (before), ``extra`` (this spending).
budget_spent = Signal()
# The housekeeping task runs (every 5 minutes, before idle assignments are marked abandoned):
# an app finishes what it holds open (chat: unrated and deserted chats) and returns
# ``{name: count}`` for the task's result.
housekeeping = Signal()
# A worker was forgotten (withdrawal, erasure; the worker's row lock held): ``worker``,
# ``old_id`` (their provider id), ``marker`` (what replaces it; ``marker == old_id`` when the id
# stays, a forget scoped to one researcher's campaigns), ``campaigns`` (the pks reached, plus
# those whose items quoted the worker). An app erases the worker's data from its own rows of
# those campaigns (``annotation.services.workers.id_replace``).
worker_forgotten = Signal()
# Campaign rows were changed by a queryset's ``update`` (``CampaignQuerySet``), which sends no
# ``post_save``: the copies of campaigns that processes keep are stale
# (``annotation.campaign_cache``).
campaigns_updated = Signal()
