"""The dialogue tables' constraints: order, idempotent resends, an owner for every dialogue."""

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Dataset, Dialogue, Utterance
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def test_utterance_index_is_unique_within_a_dialogue() -> None:
    dialogue = Dialogue.objects.create(campaign=CampaignFactory(), key="d1")
    Utterance.objects.create(dialogue=dialogue, index=0, speaker="speaker", text="hi")
    with pytest.raises(IntegrityError), transaction.atomic():
        Utterance.objects.create(dialogue=dialogue, index=0, speaker="listener", text="hello")
    assert list(dialogue.utterances.values_list("text", flat=True)) == ["hi"]


def test_a_resent_client_id_cannot_store_a_second_utterance() -> None:
    dialogue = Dialogue.objects.create(campaign=CampaignFactory(), key="d1")
    Utterance.objects.create(dialogue=dialogue, index=0, speaker="s", text="hi", client_id="m-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Utterance.objects.create(
            dialogue=dialogue, index=1, speaker="s", text="hi", client_id="m-1"
        )
    # Imported utterances have no client id: the empty id is not unique.
    Utterance.objects.create(dialogue=dialogue, index=1, speaker="s", text="a")
    Utterance.objects.create(dialogue=dialogue, index=2, speaker="s", text="b")
    assert dialogue.utterances.count() == 3


def test_a_dialogue_needs_a_dataset_or_a_campaign() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Dialogue.objects.create(key="orphan")


def test_dialogue_keys_are_unique_per_dataset() -> None:
    first, second = Dataset.objects.create(name="a"), Dataset.objects.create(name="b")
    Dialogue.objects.create(dataset=first, key="k")
    Dialogue.objects.create(dataset=second, key="k")
    with pytest.raises(IntegrityError), transaction.atomic():
        Dialogue.objects.create(dataset=first, key="k")
