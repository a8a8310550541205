"""Rule extraction: first-person statements become keyed facts; anything less certain does not."""

import pytest

from app.conversations.rules import extract


def facts(text: str, *, from_user: bool = True) -> dict[str, str]:
    return {fact.key: fact.content for fact in extract(text, from_user=from_user, max_chars=2_000)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Austin, Texas.", {"location": "User lives in Austin, Texas."}),
        ("Actually, I just moved to Denver.", {"location": "User lives in Denver."}),
        (
            "I'm allergic to peanuts and shellfish.",
            {"allergy:peanuts": "User is allergic to peanuts.", "allergy:shellfish": "User is allergic to shellfish."},
        ),
        ("I'm vegan now.", {"diet": "User's diet: vegan."}),
        ("I work at Acme Corp as of this year.", {"employer": "User works at Acme Corp."}),
        ("I work as a nurse.", {"occupation": "User works as a nurse."}),
        ("My wife's name is Anna.", {"family:wife": "User's wife is named Anna."}),
        ("I have a dog named Max.", {"pet:max": "User has a dog named Max."}),
        ("I usually wake up at 6:30 am.", {"schedule:wake_up": "User usually wakes up at 6:30 am."}),
        ("I love hiking.", {"preference:hiking": "User likes hiking."}),
        ("I don't like mushrooms anymore.", {"preference:mushrooms": "User dislikes mushrooms."}),
        ("Please contact me via email.", {"contact_preference": "User prefers to be contacted by email."}),
        ("My favorite color is green.", {"favorite:color": "User's favorite color is green."}),
    ],
)
def test_english_statements(text, expected):
    assert facts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我住在北京。", {"location": "用户住在北京。"}),
        ("我最近搬到了上海，在一家新公司上班。", {"location": "用户住在上海。"}),
        ("我上个月从北京搬到了杭州。", {"location": "用户住在杭州。"}),
        ("我去年跳槽到了字节跳动。", {"employer": "用户在字节跳动工作。"}),
        ("我对花生过敏。", {"allergy:花生": "用户对花生过敏。"}),
        ("我吃素。", {"diet": "用户的饮食：吃素。"}),
        ("我在腾讯工作。", {"employer": "用户在腾讯工作。"}),
        ("我是一名护士。", {"occupation": "用户的职业是护士。"}),
        ("我女儿叫小美，今年五岁。", {"family:女儿:小美": "用户的女儿叫小美。"}),
        ("我养了一只猫叫咪咪。", {"pet:咪咪": "用户养了一只猫，叫咪咪。"}),
        ("我每天早上6点起床。", {"schedule:wake_up": "用户通常6点起床。"}),
        ("我不喜欢吃辣。", {"preference:吃辣": "用户不喜欢吃辣。"}),
        ("请用微信联系我。", {"contact_preference": "用户希望通过微信联系。"}),
    ],
)
def test_chinese_statements(text, expected):
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "My friend lives in Boston.",  # someone else
        "If I lived in Paris, I would eat croissants every day.",  # hypothetical
        "I'd love to live in Paris.",  # a wish
        "I'm planning to move to Seattle next year.",  # a plan
        "I lived in Austin for ten years.",  # the past
        "I don't live in Austin.",  # a negation
        "Do I live in Austin?",  # a question
        "I like the idea.",  # no object worth a key
        "I love it when you explain things slowly.",
        "I live in a small apartment.",  # not a place name
        "I love seeing her grow.",  # about someone else
        "I'm passionate about using my skills.",
        "我朋友住在北京。",
        "如果我住在北京就好了。",
        "我打算明年搬到上海。",
        "我下个月搬到上海。",
        "我喜欢你做的菜。",
        "我住在北京吗？",
    ],
)
def test_what_is_not_a_fact_about_the_user_yields_nothing(text):
    assert facts(text) == {}


def test_only_the_users_own_messages_speak_in_the_first_person():
    assert facts("I live in Berlin, where our servers are.", from_user=False) == {}
    assert facts("The user lives in Berlin.", from_user=False) == {"location": "User lives in Berlin."}


def test_the_last_statement_of_a_message_wins_and_long_pasted_text_is_skipped():
    assert facts("I lived in Austin before. I moved to Denver. Now I live in Boulder.") == {
        "location": "User lives in Boulder."
    }
    pasted = "Summarise this story: " + "I live in Paris. " * 200
    assert extract(pasted, from_user=True, max_chars=2_000) == []
