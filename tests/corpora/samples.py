"""Small files in each source format, written for these tests (not copied from any corpus)."""
# ruff: noqa: E501  (the sources' own line formats, kept verbatim)

ED_CSV = """conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags
hit:1_conv:2,1,proud,I finally finished my first marathon_comma_ after a year of training.,11,I ran a whole marathon last weekend!,5|5|5_2|2|5,
hit:1_conv:2,2,proud,I finally finished my first marathon_comma_ after a year of training.,12,Wow_comma_ that is amazing. How long did it take you?,5|5|5_2|2|5,
hit:1_conv:2,3,proud,I finally finished my first marathon_comma_ after a year of training.,11,Just under five hours_comma_ but I never stopped running.,5|5|5_2|2|5,
hit:3_conv:6,1,afraid,I heard a strange noise downstairs at night.,13,Last night I heard someone in my kitchen at 3 am.,4|4|4_3|3|3,
hit:3_conv:6,2,afraid,I heard a strange noise downstairs at night.,14,That sounds terrifying! Was it a burglar?,4|4|4_3|3|3,
hit:4_conv:8,1,grateful,My neighbour fixed my bike for free.,11,My neighbour fixed my bike without asking for anything.,5|4|4_4|4|4,
hit:4_conv:8,2,grateful,My neighbour fixed my bike for free.,15,That is so kind. Did you thank them?,5|4|4_4|4|4,
"""

EMOTIONLINES_JSON = """[
  [
    {"speaker": "Mona", "utterance": "I can\\u0092t believe you ate my cake.", "emotion": "anger", "annotation": "0000500"},
    {"speaker": "Raj", "utterance": "It was just sitting there!", "emotion": "neutral", "annotation": "3000110"},
    {"speaker": "Mona", "utterance": "It had my name on it.", "emotion": "non-neutral", "annotation": "1010210"}
  ],
  [
    {"speaker": "Tess", "utterance": "We won the match!", "emotion": "joy", "annotation": "0410000"},
    {"speaker": "Ivo", "utterance": "No way, really?", "emotion": "surprise", "annotation": "1000040"}
  ]
]
"""

MELD_CSV = """Sr No.,Utterance,Speaker,Emotion,Sentiment,Dialogue_ID,Utterance_ID,Season,Episode,StartTime,EndTime
1,"Oh no, the oven is on fire!",Ana,fear,negative,0,0,1,2,"00:01:02,100","00:01:04,000"
2,Get the extinguisher.,Ben,neutral,neutral,0,1,1,2,"00:01:04,500","00:01:06,000"
3,That was close.,Ana,joy,positive,0,3,1,2,"00:01:09,000","00:01:10,000"
4,You’re late again.,Cal,anger,negative,1,0,1,3,"00:05:00,000","00:05:02,000"
5,Sorry!,Dee,sadness,negative,1,1,1,3,"00:05:02,500","00:05:03,000"
"""

EMOCONTEXT_TSV = (
    "id\tturn1\tturn2\tturn3\tlabel\n"
    "0\tI got the job\tCongrats! How do you feel?\tSo happy right now\thappy\n"
    "1\tmy dog died\tOh no, I am sorry\tI miss him so much\tsad\n"
    "2\tyou never listen\tI am listening\tNo you are not, stop lying\tangry\n"
    "3\twhat are you doing\tjust chatting\tok cool\tothers\n"
)

GENERIC_JSONL = (
    '{"dialogue": "d1", "source": "chat", "utterances": [{"speaker": "a", "text": "hi", '
    '"label": "neutral"}, {"speaker": "b", "text": "hello | there", "label": "joy", '
    '"annotations": {"votes": {"joy": 3, "neutral": 2}}}]}\n'
    '{"dialogue": "d2", "emotion": "sad", "situation": "Lost my keys.", '
    '"situation_author": "w7", "utterances": ["I lost my keys", "Oh no", "Found them"]}\n'
)

GENERIC_CSV = (
    "dialogue,utterance_idx,speaker,text,label,source\n"
    'd1,0,a,"hi, you",neutral,chat\n'
    'd1,1,b,"hello\ttab",joy,chat\n'
    "d2,0,a,third,,chat\n"
)

PARLAI_TXT = (
    "text:hello there\tlabels:hi! how are you?\tepisode_done:False\n"
    "text:fine, thanks\tepisode_done:True\n"
    "text:what is up\tlabels:not much\temotion:content\tepisode_done:True\n"
)

# One malformed file per format, and the line its error must name.
MALFORMED = {
    "ed": (
        "ed.csv",
        ED_CSV.replace("hit:3_conv:6,2,", "hit:3_conv:6,x,"),
        "line 6",
    ),
    "emotionlines": (
        "friends_train.json",
        EMOTIONLINES_JSON.replace('"emotion": "surprise"', '"emotion": "happyish"'),
        "line 9",
    ),
    "meld": ("train_sent_emo.csv", MELD_CSV.replace(",Dee,sadness,", ",Dee,gloomy,"), "line 6"),
    "emocontext": ("train.txt", EMOCONTEXT_TSV.replace("\tangry\n", "\tfurious\n"), "line 4"),
    "jsonl": ("d.jsonl", GENERIC_JSONL + '{"dialogue": "d3", "utterances": []}\n', "line 3"),
    "csv": ("d.csv", GENERIC_CSV + "d3,x,a,fourth,,chat\n", "line 5"),
    "parlai": ("d.txt", PARLAI_TXT + "labels:no text\tepisode_done:True\n", "line 4"),
}
