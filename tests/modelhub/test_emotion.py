"""The emotion classifier and ED's emotion-prepend variant."""

import numpy as np
import pytest

from modelhub.backends import Example, backend_load
from modelhub.backends.emotion import EmotionClassifier

TRAIN = [
    ("I finally got promoted after years of work!", "proud"),
    ("My daughter won the science fair, I'm so proud of her.", "proud"),
    ("I ran my first marathon and finished it!", "proud"),
    ("My grandmother passed away last night.", "sad"),
    ("My dog died and the house feels empty.", "sad"),
    ("I miss my friends since I moved away.", "sad"),
    ("I heard footsteps in the dark alley behind me.", "afraid"),
    ("There was a strange noise downstairs at 3am.", "afraid"),
    ("The turbulence on the flight was terrifying.", "afraid"),
]


@pytest.fixture(scope="module")
def classifier() -> EmotionClassifier:
    texts, labels = zip(*TRAIN, strict=True)
    return EmotionClassifier().fit(texts, labels)


def test_it_predicts_labels_and_probabilities(classifier):
    tests = ["I got a raise and my boss praised me!", "Our cat died this morning."]
    assert classifier.predict(tests) == ["proud", "sad"]
    probabilities = classifier.predict_proba(tests)
    assert classifier.labels == ["afraid", "proud", "sad"]
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1)


def test_a_saved_classifier_loads_with_the_same_predictions(classifier, tmp_path):
    folder = classifier.save(tmp_path / "emotion")
    assert sorted(p.name for p in folder.iterdir()) == ["classifier.json", "weights.npz"]
    loaded = EmotionClassifier.load(folder)
    texts = [t for t, _ in TRAIN]
    np.testing.assert_allclose(loaded.predict_proba(texts), classifier.predict_proba(texts))


def test_two_labels_work_too():
    texts = [t for t, label in TRAIN if label != "afraid"]
    labels = [label for _, label in TRAIN if label != "afraid"]
    classifier = EmotionClassifier().fit(texts, labels)
    assert classifier.predict(["I won the chess tournament!"]) == ["proud"]
    assert classifier.predict_proba(texts).shape == (6, 2)


def test_misuse_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not trained"):
        EmotionClassifier().predict(["hi"])
    with pytest.raises(ValueError, match="two different labels"):
        EmotionClassifier().fit(["a", "b"], ["x", "x"])
    with pytest.raises(ValueError, match="not a saved emotion classifier"):
        EmotionClassifier.load(tmp_path)


def test_emotion_prepend_puts_the_predicted_label_before_the_context(classifier, tmp_path):
    folder = classifier.save(tmp_path / "emotion")
    bot = backend_load(
        "emotion_prepend", {"classifier": str(folder), "backend": "gold", "config": {}}
    )
    example = Example(turns=("I finally got promoted!", "Wow, well done."), reference="Thanks!")
    assert bot.prepend([example])[0].turns == ("proud I finally got promoted!", "Wow, well done.")
    assert bot.generate([example], {}) == ["Thanks!"]
    with pytest.raises(ValueError, match="unknown backend"):
        backend_load("emotion_prepend", {"classifier": str(folder), "backend": "gpt"})
    with pytest.raises(ValueError, match="wraps another backend"):
        backend_load("emotion_prepend", {"classifier": str(folder), "backend": "emotion_prepend"})
