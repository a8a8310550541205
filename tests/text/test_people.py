"""Whom statements and questions are about."""

import pytest

from app.text.people import asked_subject, opens_on_person, relations, subject


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("User lives in Oslo.", "self"),
        ("I work as a nurse.", "self"),
        ("My wife Mei is an architect.", "wife"),
        ("User's twins take swimming lessons.", "child"),
        ("Last month the user switched jobs.", "self"),
        ("The dog is a beagle.", "dog"),
        ("The school moved the user's parent meeting.", None),
        ("用户住在上海。", "self"),
        ("我哥在阿里上班。", "brother"),
        ("用户的女儿叫朵朵。", "daughter"),
        ("旺财是用户养的柴犬。", None),
        # The user and another: about the user too, not about the other alone.
        ("My husband and I went vegan this year.", "self"),
        ("My wife and her sister run a bakery.", "wife"),
        ("老婆和我搬到了杭州。", "self"),
        ("用户的老婆和用户都喜欢爬山。", "self"),
        ("老婆在杭州上班。", "wife"),
    ],
)
def test_the_subject_of_a_statement(text: str, who: str | None) -> None:
    assert subject(text) == who


@pytest.mark.parametrize(
    ("question", "who"),
    [
        ("What does the user do for a living?", "self"),
        ("What does the user's wife do?", "wife"),
        ("Which team does the son's coach want him on?", "son"),
        ("用户女儿的小名叫什么？", "daughter"),
        ("When is the school play?", None),
    ],
)
def test_the_person_a_question_asks_about(question: str, who: str | None) -> None:
    assert asked_subject(question) == who


def test_relations_anywhere_in_the_text_and_what_opens_on_a_person() -> None:
    assert relations("User and her sister visited their mother.") == {"sister", "mother"}
    assert opens_on_person("User has a dog.") and not opens_on_person("User's dog is a beagle.")
    assert opens_on_person("用户有一辆车。") and not opens_on_person("用户的车是白色的。")
