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

Sections 3-5 (issue 28) use a random Llama-shaped model with the Llama 3 chat template and a
vocabulary of ``--vocab`` words (``--vocab 128256`` is Llama 3's; the default is small for a
CPU), on ``--device``: 3. replies/s and tokens/s by batch size (1, 8, 32); 4. concurrent
single-example bot turns (1, 8, 32 threads) through the micro-batcher vs the same without it,
and the wall time of 32 concurrent turns relative to one turn's (target <= 3x); 5. ``score()``
against the full log-softmax gathered on the device and against the old copy to the host.
Tokens/s counts every row's generated positions (rows x steps of each ``generate``).
``--sections 3,4,5`` skips the others.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from modelhub.backends.hf_local import HFLocal  # noqa: E402
from modelhub.backends.hf_score import causal_logprobs_reference  # noqa: E402
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
    # one thread asks one at a time: the micro-batcher's wait (section 4) would only add to it
    backend = backend_load("hf_local", {"path": model, "batch_size": batch, "batch_wait_ms": 0})
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

    The backend's ``replies`` (what the job calls) is timed inside the job, so the overhead is
    the job's wall time minus the model's time within the same run, immune to how loaded the
    machine is.
    """
    backend = endpoint_backend(endpoint)
    job_data = examples(n, "job")
    backend.replies(examples(2, "warm-up"), endpoint.decoding)  # load and warm up
    inside = [0.0]
    replies = backend.replies

    def timed_replies(batch_examples, params):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return replies(batch_examples, params)
        finally:
            inside[0] += time.perf_counter() - started

    backend.replies = timed_replies  # type: ignore[method-assign]
    try:
        t_job = job_time(endpoint, job_data, batch, worker=False)
    finally:
        del backend.replies
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
    backend.replies(examples(2, "warm-up"), endpoint.decoding)  # load and warm up
    job_time(endpoint, examples(2, "warm-up-worker"), batch, worker=True)  # the worker's too

    def direct_run(data: list[Example]) -> float:
        return timed(
            lambda: [
                backend.replies(data[i : i + batch], endpoint.decoding)
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


# -- issue 28: batch sizes, concurrent bot turns, score() --------------------------------

TURN = {"max_new_tokens": 24}
LEVELS = (1, 8, 32)


def chat_model(vocab: int, width: int, layers: int) -> str:
    """Build a random Llama-shaped model with the Llama 3 template and ``vocab`` words."""
    folder = TMP / f"llama-{vocab}-{width}-{layers}"
    return str(
        tiny_model_build(
            folder, arch="llama", chat="llama3", vocab_size=vocab, width=width,
            layers=layers, heads=4, positions=1024,
        )
    )  # fmt: skip


@contextmanager
def generated_tokens(model) -> Iterator[list[int]]:  # type: ignore[no-untyped-def]
    """Count every row's generated positions (rows x steps) of each ``generate`` call."""
    counts: list[int] = []
    generate = model.generate

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        output = generate(*args, **kwargs)
        counts.append(output.shape[0] * (output.shape[1] - kwargs["input_ids"].shape[1]))
        return output

    model.generate = counting
    try:
        yield counts
    finally:
        del model.generate


def by_batch_size(path: str, device: str, repeats: int) -> None:
    """Print replies/s and tokens/s of 32 contexts at batch sizes 1, 8 and 32."""
    data = examples(32, "batch-size")
    print("\n3. Throughput by batch size (32 contexts, greedy, 24 new tokens, chat template)")
    for size in LEVELS:
        backend = HFLocal(path=path, device=device, batch_size=size, batch_wait_ms=0)
        backend.generate(data[:2], TURN)  # load and warm up
        times, tokens = [], 0
        with generated_tokens(backend._loaded()[1]) as counts:
            for _ in range(repeats):
                times.append(timed(lambda b=backend: b.generate(data, TURN)))
            tokens = sum(counts) // repeats
        t = statistics.median(times)
        print(f"   batch {size:>2}   {len(data) / t:8.1f} replies/s   {tokens / t:9.0f} tokens/s")


def turns_at_once(backend: HFLocal, data: list[Example]) -> float:
    """Return the wall time of one bot turn per example, each from its own thread."""
    gate = threading.Barrier(len(data) + 1)
    errors: list[BaseException] = []

    def turn(example: Example) -> None:
        gate.wait()
        try:
            backend.replies([example], TURN)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=turn, args=(e,)) for e in data]
    for thread in threads:
        thread.start()
    gate.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def by_concurrency(path: str, device: str, repeats: int) -> None:
    """Print replies/s of 1, 8 and 32 concurrent single-example turns, micro-batched or not
    (runs alternate between the two, so a burst of another process hits both), and 32
    concurrent turns' wall time relative to one turn's."""
    print("\n4. Concurrent bot turns (one example per thread), micro-batched vs not")
    modes = {"micro-batched": 5.0, "not batched": 0.0}
    backends = {
        label: HFLocal(path=path, device=device, batch_size=32, batch_wait_ms=wait_ms)
        for label, wait_ms in modes.items()
    }
    walls: dict[tuple[str, int], float] = {}
    for threads in LEVELS:
        data = examples(threads, f"concurrency-{threads}")
        times: dict[str, list[float]] = {label: [] for label in modes}
        tokens: dict[str, list[int]] = {}
        for backend in backends.values():
            turns_at_once(backend, data)  # load, and warm up this shape
        for r in range(repeats):
            for label in list(modes)[:: 1 if r % 2 == 0 else -1]:
                with generated_tokens(backends[label]._loaded()[1]) as counts:
                    times[label].append(turns_at_once(backends[label], data))
                tokens[label] = counts
        for label in modes:
            wall = walls[label, threads] = statistics.median(times[label])
            print(
                f"   {label:<14} {threads:>2} threads   {threads / wall:8.1f} replies/s   "
                f"{sum(tokens[label]) / wall:9.0f} tokens/s   "
                f"{len(tokens[label]):3d} generate calls"
            )
    for label in modes:
        ratio = walls[label, 32] / walls[label, 1]
        print(f"   {label}: 32 concurrent turns take {ratio:5.2f}x one turn's time (target <= 3x)")
    speedup = walls["not batched", 32] / walls["micro-batched", 32]
    print(f"   32 threads: micro-batched is {speedup:5.2f}x faster than not batched")


def score_paths(path: str, device: str, n: int, repeats: int) -> None:
    """Print score() time against the full log-softmax gathered on the device and against
    the old path (log-softmax copied to the host, read token by token)."""
    backend = HFLocal(path=path, device=device, batch_size=n)
    data = [
        Example(turns=tuple(DEFAULT_TEXTS[(i + k) % len(DEFAULT_TEXTS)] for k in range(6)))
        for i in range(n)
    ]
    responses = [DEFAULT_TEXTS[(i + 3) % len(DEFAULT_TEXTS)] for i in range(n)]
    tokenizer, model, prompter = backend._loaded()
    pairs = [
        prompter.score_ids(e.turns, r, backend._context_budget)
        for e, r in zip(data, responses, strict=True)
    ]
    contexts, targets = [c for c, _ in pairs], [t for _, t in pairs]
    pad = tokenizer.pad_token_id
    runs: dict[str, Callable[[], object]] = {
        "score()": lambda: backend.score(data, responses),
        "gather on device, full logits": lambda: causal_logprobs_reference(
            model, contexts, targets, pad, on_host=False
        ),
        "old: copy to host, .item()": lambda: causal_logprobs_reference(
            model, contexts, targets, pad, on_host=True
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm up
    for _ in range(repeats):  # interleaved: a burst of another process hits all three
        for name, run in runs.items():
            times[name].append(timed(run))
    width = max(len(c) + len(t) for c, t in pairs)
    vocab = model.config.vocab_size
    print(f"\n5. score(): {n} responses, up to {width} tokens each, vocabulary {vocab}")
    mine = statistics.median(times["score()"])
    for name, values in times.items():
        t = statistics.median(values)
        print(f"   {name:<30} {t * 1000:9.1f} ms   {t / mine:6.2f}x score()'s time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="Contexts for the model runs.")
    parser.add_argument("--batch", type=int, default=32, help="Examples per batch.")
    parser.add_argument("--worker", action="store_true", help="Time jobs on a real worker.")
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="Alternating rounds with --worker, and runs of sections 3-5 (default 5).",
    )
    parser.add_argument(
        "--vocab", type=int, default=4096, help="Vocabulary of sections 3-5 (128256: Llama 3)."
    )
    parser.add_argument("--width", type=int, default=128, help="Hidden size, sections 3-5.")
    parser.add_argument("--layers", type=int, default=4, help="Layers, sections 3-5.")
    parser.add_argument(
        "--device", default="auto", choices=["auto", "cpu", "cuda"], help="Sections 3-5."
    )
    parser.add_argument("--score-n", type=int, default=16, help="Responses scored, section 5.")
    parser.add_argument(
        "--sections", default="1,2,3,4,5", help="Comma-separated sections to run (default all)."
    )
    args = parser.parse_args()
    sections = {int(part) for part in args.sections.split(",")}
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, cuda: {torch.cuda.is_available()}, "
        f"db: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, "
        f"celery: {'eager' if settings.CELERY_TASK_ALWAYS_EAGER else 'broker'}"
    )
    call_command("migrate", verbosity=0, interactive=False)
    model = str(tiny_model_build(TMP / "gpt2", width=128, layers=4, heads=4, positions=256))
    if 1 in sections:
        batched_vs_single(model, args.n, args.batch)
    if 2 in sections:
        platform_overhead(args, model)
    if sections & {3, 4, 5}:
        chat = chat_model(args.vocab, args.width, args.layers)
        print(f"\nLlama-shaped, width {args.width}, {args.layers} layers, vocabulary {args.vocab}")
    if 3 in sections:
        by_batch_size(chat, args.device, args.repeats)
    if 4 in sections:
        by_concurrency(chat, args.device, args.repeats)
    if 5 in sections:
        score_paths(chat, args.device, args.score_n, args.repeats)


def platform_overhead(args: argparse.Namespace, model: str) -> None:
    """Section 2: a generation job's time per response beyond the backend's own."""
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
