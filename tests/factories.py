"""factory_boy factories for the study data model."""

import factory

from annotation.models import Assignment, Campaign, Item, Judgment, Worker
from annotation.protocols import registry


def likert_payload(n: int = 0, model: str = "model-a") -> dict:
    return {
        "context": [f"I finally finished my thesis {n}.", "Congratulations! How do you feel?"],
        "response": f"That's wonderful news {n}, you must be so relieved.",
        "model": model,
        "example": f"ex{n}",
    }


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Campaign

    slug = factory.Sequence(lambda n: f"campaign-{n}")
    name = factory.LazyAttribute(lambda c: f"Campaign {c.slug}")
    protocol = "likert"
    parameters = factory.LazyFunction(lambda: registry.get("likert").default_parameters())
    status = Campaign.Status.LIVE
    redundancy = 3
    items_per_assignment = 5
    lease_seconds = 600
    # Most tests arrive with a bare ?workerId=…; tests/annotation/test_identity.py covers
    # signed links (the default of a campaign created by campaign_create).
    open_links = True


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    campaign = factory.SubFactory(CampaignFactory)
    key = factory.Sequence(lambda n: f"item-{n}")
    payload = factory.Sequence(likert_payload)


class WorkerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Worker

    provider = Worker.Provider.LOCAL
    external_id = factory.Sequence(lambda n: f"worker-{n}")


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Assignment

    campaign = factory.SubFactory(CampaignFactory)
    worker = factory.SubFactory(WorkerFactory)
    items_target = factory.LazyAttribute(lambda a: a.campaign.items_per_assignment)


class JudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Judgment

    assignment = factory.SubFactory(AssignmentFactory)
    item = factory.SubFactory(ItemFactory, campaign=factory.SelfAttribute("..assignment.campaign"))
    worker = factory.SelfAttribute("assignment.worker")
    question = "empathy"
    value = 3
    time_spent_ms = 4000
