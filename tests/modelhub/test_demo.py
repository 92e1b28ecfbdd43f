"""The demo's models: GenericBot, gold, the MiniLM retrieval bot and a tiny GPT-2 (decoded
with sample-and-rank, and sampling one reply that streams into the demo's live chat)."""

from modelhub.backends import Example
from modelhub.demo import demo_endpoints_register
from modelhub.services import generations_ensure

DIALOGUES = [
    ["I finally got promoted!", "Congratulations, you earned it."],
    ["My dog died last week.", "I'm so sorry, that is really hard."],
    ["I'm going to Japan next month.", "How exciting! Japan is beautiful."],
]


def test_the_demo_registers_five_models_that_all_answer(db, settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr("modelhub.demo.TINY_MODEL_STEPS", 10)  # the demo trains longer
    endpoints = demo_endpoints_register(candidates=[d[1] for d in DIALOGUES], dialogues=DIALOGUES)
    assert [e.name for e in endpoints] == [
        "generic-bot",
        "gold",
        "retrieval-minilm",
        "tiny-gpt2",
        "tiny-gpt2-chat",
    ]
    examples = [Example(turns=("My old dog died and I miss him so much.",), reference="Oh no.")]
    replies = {e.name: generations_ensure(endpoint=e, examples=examples)[0] for e in endpoints}
    assert replies["generic-bot"] == "ok" and replies["gold"] == "Oh no."
    assert replies["retrieval-minilm"] == "I'm so sorry, that is really hard."
    assert isinstance(replies["tiny-gpt2"], str) and isinstance(replies["tiny-gpt2-chat"], str)
    # a second call reuses the model it built
    assert len(demo_endpoints_register(candidates=["ok"], tiny_model=False)) == 3
    assert (tmp_path / "models" / "tiny-gpt2" / "config.json").is_file()
