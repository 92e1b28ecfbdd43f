"""Frame parsing: what no conversation can store is malformed, said at once."""

import pytest

from chat.frames import FrameError, frame_parse


@pytest.mark.parametrize("text", ['"\\ud800"', '"ok \\udfff ok"', '"\\udc00\\ud800"'])
def test_a_lone_surrogate_in_a_message_is_a_malformed_frame(text):
    with pytest.raises(FrameError) as refused:
        frame_parse('{"type": "message", "client_id": "c1", "text": ' + text + "}")
    assert refused.value.code == "malformed"


def test_a_surrogate_pair_is_a_character_and_passes():
    frame = frame_parse('{"type": "message", "client_id": "c1", "text": "hi \\ud83d\\ude00"}')
    assert frame.data["text"] == "hi \U0001f600"
