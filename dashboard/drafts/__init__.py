"""The launch wizard's logic: a draft campaign from a protocol's published defaults, its
settings, its items, its cost and its going live on the local provider.

The wizard keeps its state in the database: the draft campaign itself (status DRAFT, owned by
its researcher) and, while registered models answer an uploaded context set, their
``GenerationJob`` rows plus the checked upload in the draft's ``dashboard.Draft`` row, so a
reload, another web process, or coming back days later continues where the researcher left
off. Every function checks first and changes nothing when it refuses (``AnnotationError``
with a message).

- ``cards``: what the wizard shows of each protocol (summary, explained defaults);
- ``draft``: steps 1 and 2, the draft campaign and its settings;
- ``uploads``: step 3's files, read and checked into records;
- ``items``: step 3's imports, at once or after the models answered;
- ``launch``: step 4, the cost estimates and going live;
- ``store``: the ``Draft`` rows (locking, expiry).
"""

from dashboard.drafts.cards import (
    SETTINGS,
    Explained,
    ProtocolCard,
    models_needed,
    models_registered,
    models_unregistered,
    protocol_builds_items,
    protocol_card,
    protocol_cards,
    protocol_chats_with_models,
    protocol_needs_items,
    setting_defaults,
    setting_help,
)
from dashboard.drafts.draft import (
    draft_check,
    draft_create,
    draft_from_study_file,
    draft_settings_update,
)
from dashboard.drafts.items import (
    ImportOutcome,
    Pending,
    draft_items_cancel,
    draft_items_finish,
    draft_items_import,
    draft_pending,
)
from dashboard.drafts.launch import (
    ESTIMATE_PROVIDERS,
    GO_LIVE_PROVIDER,
    Estimate,
    draft_estimates,
    draft_go_live,
)
from dashboard.drafts.store import DRAFT_KEPT_FOR, draft_state, drafts_expire
from dashboard.drafts.uploads import MAX_TURNS, MAX_UPLOAD_BYTES, ItemsUpload

__all__ = [
    "DRAFT_KEPT_FOR",
    "ESTIMATE_PROVIDERS",
    "GO_LIVE_PROVIDER",
    "MAX_TURNS",
    "MAX_UPLOAD_BYTES",
    "SETTINGS",
    "Estimate",
    "Explained",
    "ImportOutcome",
    "ItemsUpload",
    "Pending",
    "ProtocolCard",
    "draft_check",
    "draft_create",
    "draft_from_study_file",
    "draft_estimates",
    "draft_go_live",
    "draft_items_cancel",
    "draft_items_finish",
    "draft_items_import",
    "draft_pending",
    "draft_settings_update",
    "draft_state",
    "drafts_expire",
    "models_needed",
    "models_registered",
    "models_unregistered",
    "protocol_builds_items",
    "protocol_card",
    "protocol_cards",
    "protocol_chats_with_models",
    "protocol_needs_items",
    "setting_defaults",
    "setting_help",
]
