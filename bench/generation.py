"""Benchmark generation, in one run: batched vs one request at a time with the same model, and
the platform's overhead per response (generation job: Celery task + DB writes) vs calling the
backend directly.

Run from the repository root: ``.venv/bin/python bench/generation.py``. It builds a small
randomly initialised GPT-2 (4 layers, width 128) in a temp folder (nothing is downloaded) and
uses a temp SQLite database unless ``DATABASE_URL`` is set. Celery runs eagerly unless
``CELERY_BROKER_URL`` is set; ``--worker`` then starts a real worker (PostgreSQL only) and, in
alternating rounds, times the job from enqueue to done and the same work on the backend called
directly; the overhead is the median of the rounds' differences. Targets (issue 4): batched ≥ 5×
one-at-a-time; platform overhead under 20 ms per response in batch mode.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py
TMP = Path(tempfile.mkdtemp(prefix="bench-generation-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'bench.sqlite3'}")

import django  # noqa: E402

django.setup()

import torch  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from modelhub.backends import Example, backend_load  # noqa: E402
from modelhub.models import GenerationJob, ModelEndpoint  # noqa: E402
from modelhub.services import endpoint_backend, endpoint_register, generation_job_start  # noqa: E402
from modelhub.tiny import DEFAULT_TEXTS, tiny_model_build  # noqa: E402

GREEDY = {"max_new_tokens": 24}


def examples(n: int, tag: str) -> list[Example]:
    """Return n distinct contexts of 1-3 turns and varied lengths."""
    out = []
    for i in range(n):
        turns = [DEFAULT_TEXTS[(i + k) % len(DEFAULT_TEXTS)] for k in range(1 + i % 3)]
        out.append(Example(turns=(*turns[:-1], f"{turns[-1]} ({tag} {i})")))
    return out


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def batched_vs_single(model: str, n: int, batch: int, repeats: int = 3) -> None:
    """Print the median rate of ``repeats`` runs each way (the machine may be shared: medians
    of interleaved runs resist another process's burst). One at a time runs on n/4 contexts."""
    backend = backend_load("hf_local", {"path": model, "batch_size": batch})
    data = examples(n, "batching")
    singles = data[: max(1, n // 4)]
    backend.generate(data[:2], GREEDY)  # load and warm up
    batched, single = [], []
    for _ in range(repeats):
        batched.append(n / timed(lambda: backend.generate(data, GREEDY)))
        single.append(
            len(singles) / timed(lambda: [backend.generate([e], GREEDY) for e in singles])
        )
    rate_batched, rate_single = statistics.median(batched), statistics.median(single)
    print(f"\n1. GPT-2 (4 layers, width 128), greedy, 24 new tokens, median of {repeats} runs")
    print(f"   batched ({batch} a batch, {n} contexts)   {rate_batched:8.1f} responses/s")
    print(f"   one at a time ({len(singles)} contexts)       {rate_single:8.1f} responses/s")
    print(
        f"   ratio                            {rate_batched / rate_single:8.1f}x   (target >= 5x)"
    )
    print(f"   (runs, responses/s: batched {_rates(batched)}; one at a time {_rates(single)})")


def _rates(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def job_time(endpoint: ModelEndpoint, data: list[Example], batch: int, worker: bool) -> float:
    started = time.perf_counter()
    job = generation_job_start(endpoint=endpoint, examples=data, batch_size=batch)
    while worker and GenerationJob.objects.get(pk=job.pk).status not in ("done", "failed"):
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    job.refresh_from_db()
    assert job.status == "done" and job.done == len(data), (job.status, job.error)
    return elapsed


def overhead(name: str, endpoint: ModelEndpoint, n: int, batch: int) -> None:
    """Print the job's time per response beyond the model's own time (eager: in-process).

    The backend's ``generate`` is timed inside the job, so the overhead is the job's wall time
    minus the model's time within the same run, immune to how loaded the machine is.
    """
    backend = endpoint_backend(endpoint)
    job_data = examples(n, "job")
    backend.generate(examples(2, "warm-up"), endpoint.decoding)  # load and warm up
    inside = [0.0]
    generate = backend.generate

    def timed_generate(batch_examples, params):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return generate(batch_examples, params)
        finally:
            inside[0] += time.perf_counter() - started

    backend.generate = timed_generate  # type: ignore[method-assign]
    try:
        t_job = job_time(endpoint, job_data, batch, worker=False)
    finally:
        del backend.generate
    per = (t_job - inside[0]) / n * 1000
    print(
        f"   {name:<18} model {n / inside[0]:10.1f}/s   job {n / t_job:8.1f}/s   "
        f"overhead {per:6.2f} ms/response"
    )


def overhead_worker(name: str, endpoint: ModelEndpoint, n: int, batch: int, repeats: int) -> None:
    """Print the job's time per response through a real worker beyond the model's own time.

    The worker's model time cannot be timed from here, so each round runs the same work both
    ways, back to back: the backend called directly in batches (this process) and a job
    through the broker and the worker (enqueue to done); the order alternates between rounds.
    The overhead is the median of the rounds' paired differences. When it is within the
    direct runs' own spread, the noise is what is printed, never a difference of two
    separate runs that may come out negative.
    """
    backend = endpoint_backend(endpoint)
    backend.generate(examples(2, "warm-up"), endpoint.decoding)  # load and warm up
    job_time(endpoint, examples(2, "warm-up-worker"), batch, worker=True)  # the worker's too

    def direct_run(data: list[Example]) -> float:
        return timed(
            lambda: [
                backend.generate(data[i : i + batch], endpoint.decoding)
                for i in range(0, len(data), batch)
            ]
        )

    direct: list[float] = []
    job: list[float] = []
    for r in range(repeats):
        runs = [
            (direct, lambda r=r: direct_run(examples(n, f"direct-{r}"))),
            (job, lambda r=r: job_time(endpoint, examples(n, f"job-{r}"), batch, worker=True)),
        ]
        for times, run in runs if r % 2 == 0 else runs[::-1]:
            times.append(run())
    per = [(j - d) / n * 1000 for j, d in zip(job, direct, strict=True)]
    spread = (max(direct) - min(direct)) / n * 1000
    t_direct, t_job = statistics.median(direct), statistics.median(job)
    median = statistics.median(per)
    shown = f"{median:6.2f} ms/response" if median > spread else f"< {spread:.2f} (noise)"
    print(f"   {name:<18} model {n / t_direct:10.1f}/s   job {n / t_job:8.1f}/s   overhead {shown}")
    print(
        f"   {'':<18} (median of {repeats} alternating rounds; per round, ms/response: "
        f"{', '.join(f'{v:.2f}' for v in per)}; direct runs' spread {spread:.2f})"
    )


def start_worker() -> subprocess.Popen:
    """Start a worker as compose.yaml runs the inference one (prefork, one process)."""
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--concurrency", "1"]
    command += ["-Q", "default,inference", "--loglevel", "WARNING"]
    command += ["-n", f"bench-generation-{os.getpid()}@%h"]
    worker = subprocess.Popen(command, cwd=ROOT)
    time.sleep(8)  # let it connect and import the backends before timing
    return worker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="Contexts for the model runs.")
    parser.add_argument("--batch", type=int, default=32, help="Examples per batch.")
    parser.add_argument("--worker", action="store_true", help="Time jobs on a real worker.")
    parser.add_argument(
        "--repeats", type=int, default=5, help="Alternating rounds with --worker (default 5)."
    )
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, cuda: {torch.cuda.is_available()}, "
        f"db: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, "
        f"celery: {'eager' if settings.CELERY_TASK_ALWAYS_EAGER else 'broker'}"
    )
    call_command("migrate", verbosity=0, interactive=False)
    model = str(tiny_model_build(TMP / "gpt2", width=128, layers=4, heads=4, positions=256))
    batched_vs_single(model, args.n, args.batch)

    worker = start_worker() if args.worker else None
    try:
        print(f"\n2. Platform overhead: a generation job ({args.batch} a batch) vs the backend")
        suffix = str(int(time.time()))
        bot = endpoint_register(name=f"bench-bot-{suffix}", backend="generic_bot")
        gpt2 = endpoint_register(
            name=f"bench-gpt2-{suffix}", backend="hf_local",
            config={"path": model, "batch_size": args.batch}, decoding=GREEDY,
        )  # fmt: skip
        for label, endpoint, n in (
            ("GenericBot, 2000", bot, 2000),
            (f"GPT-2, {args.n}", gpt2, args.n),
        ):
            if args.worker:
                overhead_worker(label, endpoint, n, args.batch, args.repeats)
            else:
                overhead(label, endpoint, n, args.batch)
        print(
            "   (target: overhead < 20 ms/response; GenericBot isolates it, the model adds noise)"
        )
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)


if __name__ == "__main__":
    main()
