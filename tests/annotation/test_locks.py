"""Row locks: every ``select_for_update`` (or SQL that says FOR UPDATE) is a named lock
function (annotation.locks, or an app's one-row lock), each locks the row it names, and
closing an assignment takes its items before it, the order a submission takes them in."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from annotation import locks
from annotation.models import Assignment, Campaign, Dialogue, Item, Lease, Worker
from annotation.services import assignment_set_status
from chat import locks as chat_locks
from chat.models import ChatPair, ChatSeat
from recruitment import locks as recruitment_locks
from recruitment.models import Payment
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, WorkerFactory
from tests.test_layers import PACKAGES

ROOT = Path(__file__).resolve().parents[2]

# Where a row may be locked: every function of a locks module, and the one-row lock of an app
# too small for a locks module, in the module that writes that row.
LOCK_MODULES = {"annotation/locks.py", "chat/locks.py", "recruitment/locks.py", "webhooks/locks.py"}
LOCK_FUNCTIONS = {
    ("modelhub/jobs.py", "endpoint_lock"),
    ("dashboard/drafts/store.py", "draft_locked"),
}


class _Sites(ast.NodeVisitor):
    """Collect (enclosing function, line) of every ``select_for_update`` in a module."""

    def __init__(self) -> None:
        self.functions: list[str] = []
        self.found: list[tuple[str, int]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "select_for_update":
            self.found.append((self.functions[-1] if self.functions else "<module>", node.lineno))
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.generic_visit(node)  # a docstring may name FOR UPDATE: it locks nothing

    def visit_Constant(self, node: ast.Constant) -> None:
        """SQL written out (allocation's one statement) locks rows too."""
        if isinstance(node.value, str) and "FOR UPDATE" in node.value.upper():
            self.found.append((self.functions[-1] if self.functions else "<module>", node.lineno))


def _locking_sites() -> list[tuple[str, str, int]]:
    """Return (module, innermost enclosing function, line) of every ``select_for_update`` in
    the apps."""
    found = []
    for app in PACKAGES:
        for path in sorted((ROOT / app).rglob("*.py")):
            module = path.relative_to(ROOT).as_posix()
            sites = _Sites()
            sites.visit(ast.parse(path.read_text(), filename=module))
            found += [(module, name, line) for name, line in sites.found]
    return found


def test_every_row_lock_is_a_named_lock_function():
    sites = _locking_sites()
    assert any(module == "annotation/locks.py" for module, _, _ in sites)  # the scan sees them
    stray = [
        f"{module}:{line} in {name}"
        for module, name, line in sites
        if module not in LOCK_MODULES and (module, name) not in LOCK_FUNCTIONS
    ]
    assert stray == [], "lock rows through annotation.locks (or the app's lock function)"


def test_the_order_names_every_lock_function_of_the_core_and_of_chat():
    doc = ast.get_docstring(ast.parse((ROOT / "annotation/locks.py").read_text())) or ""
    public = [
        node.name
        for module in ("annotation/locks.py", "chat/locks.py", "recruitment/locks.py")
        for node in ast.parse((ROOT / module).read_text()).body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    ]
    assert len(public) >= 10
    assert [name for name in public if f"``{name}``" not in doc] == []


# --- PostgreSQL: each function holds the row it names ---------------------------------------


def _second_connection(attempt: Callable[[], object]) -> object:
    """Run ``attempt`` in a transaction on another connection; return what it returned or
    the database error it raised."""
    outcome: list[object] = []

    def run() -> None:
        try:
            with transaction.atomic():
                outcome.append(attempt())
        except DatabaseError as exc:
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return outcome[0]


def _held(model: type, pk: int, *, no_key: bool = False) -> bool:
    """Tell whether another transaction holds the row: a second connection's ``NOWAIT``
    lock of it (``FOR UPDATE``, or ``FOR NO KEY UPDATE``) fails."""
    query = model.objects.select_for_update(nowait=True, no_key=no_key)
    outcome = _second_connection(lambda: query.get(pk=pk))
    if isinstance(outcome, DatabaseError):
        assert "could not obtain lock" in str(outcome)
        return True
    assert outcome.pk == pk
    return False


def _rows():
    campaign = CampaignFactory()
    item, other = ItemFactory(campaign=campaign), ItemFactory(campaign=campaign)
    worker = WorkerFactory()
    assignment = AssignmentFactory(campaign=campaign, worker=worker)
    pair = ChatPair.objects.create(campaign=campaign)
    seat = ChatSeat.objects.create(
        assignment=assignment, campaign=campaign, worker=worker, pair=pair
    )
    dialogue = Dialogue.objects.create(campaign=campaign, key="d1")
    ChatSeat.objects.filter(pk=seat.pk).update(dialogue=dialogue)
    payment = Payment.objects.create(
        campaign=campaign,
        provider="local",
        worker=worker,
        kind=Payment.Kind.BONUS,
        amount="1.00",
        idempotency_key="key-1",
    )
    return {
        "campaign": campaign,
        "item": item,
        "other": other,
        "worker": worker,
        "assignment": assignment,
        "pair": pair,
        "seat": seat,
        "dialogue": dialogue,
        "payment": payment,
    }


# (what to lock, the row it must hold)
CASES = {
    "worker_lock": (lambda r: locks.worker_lock(r["worker"]), "worker"),
    "campaign_lock": (lambda r: locks.campaign_lock(r["campaign"].pk), "campaign"),
    "campaign_lock_by_slug": (
        lambda r: locks.campaign_lock_by_slug(r["campaign"].slug),
        "campaign",
    ),
    "payment_lock_by_key": (lambda r: recruitment_locks.payment_lock_by_key("key-1"), "payment"),
    "pair_lock": (lambda r: chat_locks.pair_lock(r["pair"]), "pair"),
    "dialogue_lock": (lambda r: locks.dialogue_lock(r["dialogue"], with_campaign=True), "dialogue"),
    "seat_dialogue_lock": (lambda r: chat_locks.seat_dialogue_lock(r["seat"].pk), "dialogue"),
    "seat_lock": (lambda r: chat_locks.seat_lock(r["seat"], with_campaign=True), "seat"),
    "seat_lock_first": (lambda r: chat_locks.seat_lock_first(ChatSeat.objects.all()), "seat"),
    "item_lock": (lambda r: locks.item_lock(r["item"]), "item"),
    "item_lock_in": (
        lambda r: locks.item_lock_in(r["campaign"], r["item"].pk, r["worker"]),
        "item",
    ),
    "items_lock": (lambda r: locks.items_lock([r["other"].pk, r["item"].pk]), "item"),
    "assignment_lock": (lambda r: locks.assignment_lock(r["assignment"]), "assignment"),
    "assignment_lock_open": (
        lambda r: locks.assignment_lock_open(r["campaign"], r["worker"]),
        "assignment",
    ),
    "assignments_lock_by_provider_ids": (
        lambda r: locks.assignments_lock_by_provider_ids(
            r["campaign"], [r["assignment"].provider_assignment_id]
        ),
        "assignment",
    ),
}
MODELS = {
    "campaign": Campaign,
    "item": Item,
    "worker": Worker,
    "assignment": Assignment,
    "pair": ChatPair,
    "seat": ChatSeat,
    "dialogue": Dialogue,
    "payment": Payment,
}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_lock_holds_its_row_until_the_transaction_ends(name):
    rows = _rows()
    take, held = CASES[name]
    pk = rows[held].pk
    with transaction.atomic():
        assert take(rows)  # the row, fresh
        assert _held(MODELS[held], pk)
    assert not _held(MODELS[held], pk)  # released at the end


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_lock_leaves_the_rows_read_with_it_unlocked():
    rows = _rows()
    lease = Lease.objects.create(
        item=rows["item"],
        worker=rows["worker"],
        assignment=rows["assignment"],
        expires_at=timezone.now(),
    )
    with transaction.atomic():
        item, read = locks.item_lock_in(rows["campaign"], rows["item"].pk, rows["worker"])
        assert (read.pk, read.expires_at, read.assignment_id) == (
            lease.pk,
            lease.expires_at,
            lease.assignment_id,
        )
        assert _held(Item, item.pk) and not _held(Lease, lease.pk)
        mine = ("a.worker_id = %s", [rows["worker"].pk])  # a condition read with the lock
        assert locks.assignment_lock(rows["assignment"], excluded=mine).excluded is True
        assert locks.assignment_lock(rows["assignment"]).excluded is False
        assert _held(Assignment, rows["assignment"].pk) and not _held(Campaign, rows["campaign"].pk)
    with transaction.atomic():  # no lease of the worker's; another campaign's item
        mine = locks.item_lock_in(rows["campaign"], rows["other"].pk, rows["worker"])
        assert mine == (rows["other"], None)
        assert locks.item_lock_in(CampaignFactory(), rows["item"].pk, rows["worker"]) is None
    with transaction.atomic():
        chat_locks.seat_lock(rows["seat"], with_campaign=True)
        locks.dialogue_lock(rows["dialogue"], with_campaign=True)
        assert not _held(Campaign, rows["campaign"].pk)
    with transaction.atomic():
        chat_locks.seat_dialogue_lock(rows["seat"].pk)
        assert _held(Dialogue, rows["dialogue"].pk)
        assert not _held(ChatSeat, rows["seat"].pk)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_campaign_lock_excludes_campaign_locks_but_not_rows_inserted_under_it():
    campaign = CampaignFactory()
    with transaction.atomic():
        locks.campaign_lock(campaign)
        assert _held(Campaign, campaign.pk, no_key=True)
        # An item inserted under the campaign commits: its foreign key is checked at the
        # commit with FOR KEY SHARE, which FOR UPDATE would keep waiting (here: refuse).
        added = _second_connection(lambda: _item_insert(campaign))
        assert not isinstance(added, Exception)
    assert Item.objects.filter(pk=added, campaign=campaign).exists()


def _item_insert(campaign: Campaign) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '5s'")  # fail rather than hang
    return ItemFactory(campaign=campaign).pk


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_item_claim_passes_over_a_held_item_instead_of_waiting():
    campaign = CampaignFactory()
    first, second = ItemFactory(campaign=campaign), ItemFactory(campaign=campaign)
    with transaction.atomic():
        assert locks.item_claim(Item.objects.order_by("pk")) == first
        claimed = _second_connection(lambda: locks.item_claim(Item.objects.order_by("pk")))
        assert claimed == second
        alone = _second_connection(lambda: locks.item_claim(Item.objects.filter(pk=first.pk)))
        assert alone is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_closing_an_assignment_waits_for_its_leased_item_before_locking_the_assignment():
    # A submission holds the item, then wants the assignment; closing the assignment must not
    # hold the assignment while it waits for that item (the two would deadlock).
    campaign = CampaignFactory()
    item = ItemFactory(campaign=campaign, claims=1)
    assignment = AssignmentFactory(campaign=campaign)
    Lease.objects.create(
        item=item, worker=assignment.worker, assignment=assignment, expires_at=campaign.created_at
    )
    closer_pid: list[int] = []
    closed = threading.Event()

    def close() -> None:
        try:
            connection.ensure_connection()
            closer_pid.append(connection.connection.info.backend_pid)
            assignment_set_status(assignment=assignment, status=Assignment.Status.ABANDONED)
            closed.set()
        finally:
            connection.close()

    with transaction.atomic():
        locks.item_lock(item)  # the submission's first lock
        closer = threading.Thread(target=close)
        closer.start()
        _wait_until_blocked(closer_pid)
        # The closer waits on the item and holds no lock on the assignment.
        assert not _held(Assignment, assignment.pk)
        assert not closed.is_set()
    closer.join()
    assert closed.is_set()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ABANDONED
    assert not Lease.objects.exists()
    assert Item.objects.get(pk=item.pk).claims == 0


def _wait_until_blocked(pids: list[int]) -> None:
    """Return once the other connection (its backend pid in ``pids``) waits on a row lock."""
    for _ in range(10_000):
        if pids:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    [pids[0]],
                )
                if cursor.fetchone():
                    return
        threading.Event().wait(0.01)
    raise AssertionError("the closing transaction never waited for the item's lock")
