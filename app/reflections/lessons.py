"""Pure rules of a lesson's life: when two lessons contradict, when one is admitted to recall,
what confidence repeated sightings and feedback give it."""

import re

from app.core.settings import Settings
from app.models import Reflection
from app.text import negated, normalise, same_numbers

_TYPE_WORDS = re.compile(r"\b(string|integer|int|number|float|boolean|bool|array|list|object|dict|null)s?\b")
_PATH_STRENGTH = ("verified", "falsified", "tentative")


def _type_words(text: str) -> set[str]:
    return set(_TYPE_WORDS.findall(normalise(text)))


def opposite(lesson: str, other: str) -> bool:
    """Two close lessons of one scope that cannot both hold: one negates what the other says,
    or they name different types or numbers ("pass it as a string" / "as an integer")."""
    if normalise(lesson) == normalise(other):
        return False
    return (
        negated(lesson) != negated(other)
        or _type_words(lesson) != _type_words(other)
        or not same_numbers(lesson, other)
    )


def stronger_path(current: str, seen: str) -> str:
    """A sighting that saw the advice work (verified) outranks one that saw the mistake fail
    (falsified), which outranks no evidence (tentative)."""
    return min(current, seen, key=_PATH_STRENGTH.index)


def seen_again_confidence(current: float, occurrences: int, *, cap: float) -> float:
    """Confidence after the n-th sighting: 1 - 1/(n+1) (SPEC section 6), never below what
    the lesson had, never above the cap."""
    return min(cap, max(current, 1 - 1 / (occurrences + 1)))


def after_feedback(confidence: float, *, useful: bool, settings: Settings) -> float:
    """Useful moves up a little, not useful down more (asymmetric); useful never lifts past
    the cap, and never lowers a confidence that was already above it."""
    if useful:
        return max(confidence, min(settings.feedback_confidence_cap, confidence + settings.feedback_useful_step))
    return max(0.0, confidence - settings.feedback_not_useful_step)


def admitted(lesson: Reflection, settings: Settings) -> bool:
    """The admission gate: recalled once seen often enough or held with enough confidence."""
    return (
        lesson.occurrences >= settings.lesson_admission_occurrences
        or lesson.confidence >= settings.lesson_admission_confidence
    )
