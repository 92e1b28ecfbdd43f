"""Provider services: publishing, budget and ledger, review, bonuses, blocks, reconciliation.

Commands, views and tasks call these functions; they check first (state, budget, who may),
write the ledger and the audit log, and call the provider adapters in
``providers``. Modules: ``ledger`` (budget, payments, audit), ``launch``
(plans, cost, publishing, extra assignments, pause/stop), ``review`` (approve, reject,
bonus, campaign review), ``reconcile`` (payments whose send was cut off), ``workers``
(arrival checks, completion, block, notify), ``sync``
(reconciliation).
"""

from recruitment.launch import (
    EMOTIONLINES_BUCKETS,
    LaunchOptions,
    LaunchPreview,
    campaign_launch,
    launch_preview,
    pay_buckets_parse,
    publication_extend,
    publication_set_state,
)
from recruitment.ledger import (
    BudgetExceeded,
    budget_check,
    campaign_committed,
    payment_key,
)
from recruitment.payments import bonus_pay
from recruitment.reconcile import (
    payment_resolve,
    payment_retry,
    payments_attention,
    payments_attention_count,
    payments_reconcile,
)
from recruitment.review import (
    Decision,
    assignment_approve,
    assignment_reject,
    campaign_review,
    review_decisions,
)
from recruitment.sync import SyncReport, publication_sync, publications_sync
from recruitment.workers import (
    arrival_verify,
    assignment_completion,
    worker_block,
    worker_links,
    worker_unblock,
    workers_notify,
)

__all__ = [
    "EMOTIONLINES_BUCKETS",
    "BudgetExceeded",
    "Decision",
    "LaunchOptions",
    "LaunchPreview",
    "SyncReport",
    "arrival_verify",
    "assignment_approve",
    "assignment_completion",
    "assignment_reject",
    "bonus_pay",
    "budget_check",
    "campaign_committed",
    "campaign_launch",
    "campaign_review",
    "launch_preview",
    "pay_buckets_parse",
    "payment_key",
    "payment_resolve",
    "payment_retry",
    "payments_attention",
    "payments_attention_count",
    "payments_reconcile",
    "publication_extend",
    "publication_set_state",
    "publication_sync",
    "publications_sync",
    "review_decisions",
    "worker_block",
    "worker_links",
    "worker_unblock",
    "workers_notify",
]
