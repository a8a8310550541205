"""Typed values in a memory's text: times, dates, weekdays, money, versions, quantities,
identifiers, codes and quoted names, in English and Chinese.

Two memories about one subject that hold different values of one precise kind (Tuesday /
Thursday, $399 / $329) cannot both be current. Identifiers ("note 3", "2号线") and bare
numbers name things rather than measure them: different ones may be different things.
"""

import re
from collections.abc import Callable

from app.text import CJK_CHARS, STOPWORDS
from app.text.calendar_words import MONTH_ABBREVIATIONS, WEEKDAY_ABBREVIATIONS

Value = tuple[str, str]

_CJK = re.compile(rf"[{CJK_CHARS}]")
# Words that follow a number without being its unit ("7 on May 3", "note 3 about").
_NOT_UNITS = STOPWORDS | frozenset("am pm".split())

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}
# A numeral is matched from the start of its run only: tried from inside a long run too, a
# search that fails (no 月 after it) costs the square of the run's length (seconds for a
# hostile 8,000-character text). A match that starts inside a run also matches from its start.
_ZH_NUM = r"(?<![\d.])\d+(?:\.\d+)?|(?<![零一二两三四五六七八九十百千万])[零一二两三四五六七八九十百千万]+"
_MONTH_RE = (r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?"
             r"|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WEEKDAYS = {day: str(number) for number, day in enumerate(WEEKDAY_ABBREVIATIONS, 1)}
_ZH_WEEKDAYS = {"一": "1", "二": "2", "三": "3", "四": "4", "五": "5", "六": "6",
                "日": "7", "天": "7"}
_ZH_DAYPART_PM = ("下午", "晚上", "傍晚", "夜里")
# Parts of the day by what they name, as the English ones are read: 早上 and 上午 are both the
# morning (每周六上午 / 每周六早上 is no other value).
_ZH_DAYPARTS = {"凌晨": "small hours", "早上": "morning", "上午": "morning", "中午": "noon",
                "下午": "afternoon", "傍晚": "evening", "晚上": "evening", "夜里": "night"}
_ZH_UNITS = ("个", "次", "秒", "分钟", "小时", "天", "周", "月", "年", "岁", "楼", "层",
             "杯", "斤", "公斤", "毫克", "克", "毫升", "升", "公里", "厘米", "米", "件", "台", "只", "条",
             "张", "本", "页",
             "人", "分", "元", "块", "倍", "遍", "套", "间", "辆")
# 一只 / 一台 read as the article "a", not as a count.
_ZH_ARTICLE = re.compile(r"^一(?:个|只|台|辆|名|家|位|件|条|张|本|套|间)$")


def zh_number(text: str) -> float | None:
    """Value of an Arabic or Chinese numeral (up to the ten thousands). A digit closing a
    numeral after 百, 千 or 万 counts in the next lower unit, as spoken: 两万三 is 23,000,
    三千五 3,500 (十五 stays 15)."""
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    total, current, last_scale = 0, 0, 0
    for char in text:
        if char in _ZH_DIGITS:
            current = _ZH_DIGITS[char]
        elif char in "十百千万":
            last_scale = {"十": 10, "百": 100, "千": 1000, "万": 10000}[char]
            total += (current or 1) * last_scale
            current = 0
        else:
            return None
    if current and last_scale >= 100 and text[-2] in "百千万":
        current *= last_scale // 10
    return float(total + current)


def _num(text: str) -> str:
    value = _NUMBER_WORDS.get(text.lower())
    number = float(value) if value is not None else zh_number(text)
    if number is None:
        return text
    return str(int(number)) if number == int(number) else str(number)


def _clock(hour: int, minute: int, *, ambiguous: bool = False) -> str:
    """"07:30"; "7:30~" when nothing says whether it is morning or evening."""
    if ambiguous and 1 <= hour <= 12:
        return f"{hour % 12}:{minute:02d}~"
    return f"{hour % 24:02d}:{minute:02d}"


def times_agree(first: str, second: str) -> bool:
    """Two clock times agree when equal, or equal on a twelve-hour dial if either one does not
    say whether it is morning or evening ("eleven" and "11 pm")."""
    if first == second:
        return True
    if not (first.endswith("~") or second.endswith("~")):
        return False
    (hour_a, minute_a), (hour_b, minute_b) = (value.rstrip("~").split(":") for value in (first, second))
    return int(hour_a) % 12 == int(hour_b) % 12 and minute_a == minute_b


class _Extractor:
    """Pulls typed values out of a text, blanking each match so later
    patterns cannot read the same characters twice."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: set[Value] = set()

    def take(self, pattern: str, to_value: Callable[[re.Match], Value | None], flags: int = 0) -> None:
        def replace(match: re.Match) -> str:
            value = to_value(match)
            if value is not None:
                self.values.add(value)
                return " | " if not _CJK.search(match.group(0)) else "|"
            return match.group(0)

        self.text = re.sub(pattern, replace, self.text, flags=flags)


def _en_time(match: re.Match) -> Value:
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if match.group(3).lower().startswith("p") and hour < 12:
        hour += 12
    if match.group(3).lower().startswith("a") and hour == 12:
        hour = 0
    return ("time", _clock(hour, minute))


def _en_date(month: str, day: str | None) -> Value:
    return ("date", f"{MONTH_ABBREVIATIONS.index(month[:3].lower()) + 1}-{day or '?'}")


def _en_quantity(match: re.Match) -> Value:
    written = match.group(2)
    word = written.lower()
    unit = re.sub(r"ies$", "y", word)
    unit = unit[:-1] if unit.endswith("s") and not unit.endswith("ss") else unit
    # The word as written is tested too: "one was" has no unit "wa". A capitalised word is
    # a name, not a unit ("14 Maple Lane", "two Leica lenses"); short capitals are
    # units ("16 GB", "100 Mbps").
    if word in _NOT_UNITS or unit in _NOT_UNITS or len(unit) < 2 or (written.istitle() and len(written) > 4):
        return ("num", _num(match.group(1)))
    return (f"qty:{unit}", _num(match.group(1)))


def _identifier(match: re.Match) -> Value | None:
    word, after = match.group(1).lower(), (match.group(3) or "").lower()
    if word in STOPWORDS or word in _NUMBER_WORDS or (after and after not in STOPWORDS):
        return None  # "is 12", or a quantity with its unit ("takes 10 mg")
    return ("id", f"{word} {match.group(2)}")


def _version(match: re.Match) -> Value | None:
    name = match.group(1)
    if not re.search(r"[A-Z]", name) or name[:3].lower() in MONTH_ABBREVIATIONS:
        return None
    return (f"version:{name.lower()}", match.group(2))


def _code(match: re.Match) -> Value | None:
    """A run of letters and digits with both ("X-T5", "ubuntu-22.04")."""
    code = match.group(0)
    if not (re.search(r"\d", code) and re.search(r"[A-Za-z]", code)):
        return None
    return ("code", code.lower())


def _extract_en(ex: _Extractor) -> None:
    ex.take(r"\+?\d[\d \-]{6,}\d", lambda m: ("longnum", re.sub(r"\D", "", m.group(0))))
    ex.take(r"[$€£¥]\s?(\d[\d,]*(?:\.\d+)?)",
            lambda m: ("money", m.group(1).replace(",", "")))
    ex.take(r"(?<!\w)(?<!\d,)(\d[\d,]*(?:\.\d+)?)\s?(?:dollars|usd|euros?|eur|yuan|rmb)\b",
            lambda m: ("money", m.group(1).replace(",", "")), re.IGNORECASE)
    ex.take(r"(\d+(?:\.\d+)?)\s?%", lambda m: ("percent", m.group(1)))
    ex.take(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s?m\b\.?", _en_time, re.IGNORECASE)
    ex.take(r"\b(\d{1,2}):(\d{2})\b",
            lambda m: ("time", _clock(int(m.group(1)), int(m.group(2)), ambiguous=True)))
    ex.take(r"\b(noon|midnight)\b",
            lambda m: ("time", "12:00" if m.group(1).lower() == "noon" else "00:00"),
            re.IGNORECASE)
    ex.take(r"\b(\d{4})-(\d{2})-(\d{2})\b",
            lambda m: ("date", f"{int(m.group(2))}-{int(m.group(3))}"))
    ex.take(rf"\b{_MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b",
            lambda m: _en_date(m.group(1), str(int(m.group(2)))))
    ex.take(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\b",
            lambda m: _en_date(m.group(2), str(int(m.group(1)))))
    ex.take(r"\b(January|February|March|April|May|June|July|August|September"
            r"|October|November|December)\b", lambda m: _en_date(m.group(1), None))
    ex.take(r"\b(?:19|20)\d{2}\b", lambda m: ("year", m.group(0)))
    ex.take(r"\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b",
            lambda m: ("weekday", _WEEKDAYS[m.group(1)[:3].lower()]), re.IGNORECASE)
    ex.take(r"\b(weekday|weekend)s?\b", lambda m: ("weekday", m.group(1).lower()),
            re.IGNORECASE)
    # Both read a name or a code from the start of its run of characters only: tried from each
    # word boundary inside a long hyphenated run ("sk-sk-sk-..."), a failing search cost the
    # square of the run's length.
    ex.take(r"(?<![\w\-])([A-Za-z][\w\-]*[A-Za-z])\s+v?(\d+(?:\.\d+)*)\b(?!\s*[:%])", _version)
    ex.take(r"\b[A-Za-z0-9][A-Za-z0-9\-./]*[A-Za-z0-9]\b", _code)
    # How often, in words: "twice a week" is "2 times a week" ("once the build passes" is not).
    ex.take(r"\b(once|twice|thrice)\b(?=\s+(?:a|an|per|every|each)\b)",
            lambda m: ("qty:time", str(("once", "twice", "thrice").index(m.group(1).lower()) + 1)), re.IGNORECASE)
    # "note 3", "topic 21", "room #4": a word, then a number that no unit follows.
    ex.take(r"\b([A-Za-z]{2,})\s+#?(\d+)\b(?![.:,%]\d)(?:\s+([A-Za-z]+))?", _identifier)
    # The unit stays in the text: "two kids" is also about the kids.
    ex.take(r"\b(\d+(?:\.\d+)?|" + "|".join(_NUMBER_WORDS) + r")(?=\s+([a-z]+)\b)",
            _en_quantity, re.IGNORECASE)
    ex.take(r"\b(?:\d+(?:\.\d+)?|" + "|".join(list(_NUMBER_WORDS)[1:]) + r")\b",
            lambda m: ("num", _num(m.group(0))), re.IGNORECASE)
    ex.take(r"\b(morning|afternoon|evening|night)s?\b",
            lambda m: ("daypart", m.group(1).lower()), re.IGNORECASE)


def _zh_time(match: re.Match) -> Value | None:
    part, hour_text, rest = match.group(1) or "", match.group(2), match.group(3) or ""
    hour = zh_number(hour_text)
    if hour is None or hour > 24 or (hour_text == "一" and not part):
        return None  # 一点 without a day part means "a little"
    minute = 30 if rest == "半" else int(zh_number(rest.rstrip("分")) or 0) if rest else 0
    hour = int(hour)
    if part in _ZH_DAYPART_PM and hour < 12:
        hour += 12
    return ("time", _clock(hour, minute, ambiguous=not part))


def _zh_quantity(match: re.Match) -> Value | None:
    if _ZH_ARTICLE.match(match.group(0)):
        return None
    return (f"qty:{match.group(2)}", _num(match.group(1)))


def _zh_identifier(match: re.Match) -> Value:
    return ("id", f"{match.group(2)} {_num(match.group(1))}")


def _extract_zh(ex: _Extractor) -> None:
    ex.take(r"\d[\d \-]{6,}\d", lambda m: ("longnum", re.sub(r"\D", "", m.group(0))))
    ex.take(r"[$¥￥]\s?(\d+(?:\.\d+)?)", lambda m: ("money", m.group(1)))
    ex.take(rf"({_ZH_NUM})\s*(?:元|块钱|块|美元)", lambda m: ("money", _num(m.group(1))))
    ex.take(rf"({_ZH_NUM})月({_ZH_NUM})[日号]",
            lambda m: ("date", f"{_num(m.group(1))}-{_num(m.group(2))}"))
    ex.take(r"((?:19|20)\d{2})\s*年(?![前后代])", lambda m: ("year", m.group(1)))
    ex.take(r"(?:每个?|[上下这本])?(?:周|星期|礼拜)([一二三四五六日天])",
            lambda m: ("weekday", _ZH_WEEKDAYS[m.group(1)]))
    ex.take(r"(?:每个?|[上下这本])?周末", lambda m: ("weekday", "weekend"))
    ex.take(r"工作日", lambda m: ("weekday", "weekday"))
    ex.take(r"(凌晨|早上|上午|中午|下午|傍晚|晚上|夜里)?\s*(\d{1,2}|[零一二两三四五六七八九十]{1,3})"
            r"\s*[点:：](半|\d{1,2}分?|[零一二三四五六七八九十]{1,3}分)?", _zh_time)
    ex.take(r"凌晨|早上|上午|中午|下午|傍晚|晚上|夜里",
            lambda m: ("daypart", _ZH_DAYPARTS[m.group(0)]))
    ex.take(r"第\s*(\d+|[一二三四五六七八九十]+)\s*(条|章|节|届|期|个|次|名)", _zh_identifier)
    ex.take(r"((?<!\d)\d+|(?<![一二三四五六七八九十])[一二三四五六七八九十]+)\s*(号线|号楼|号门|栋|幢|室|期|届|路公交)", _zh_identifier)
    ex.take(rf"({_ZH_NUM})\s*({'|'.join(_ZH_UNITS)})", _zh_quantity)
    ex.take(r"[“\"「『]([^”\"」』]{1,20})[”\"」』]", lambda m: ("entity", m.group(1)))
    ex.take(r"\b([A-Za-z][\w\-]*[A-Za-z])\s+v?(\d+(?:\.\d+)*)\b", _version)
    ex.take(r"(?=[A-Za-z0-9\-./]*\d)(?=[A-Za-z0-9\-./]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9\-./]*[A-Za-z0-9]",
            lambda m: ("code", m.group(0).lower()))
    ex.take(r"\b\d+(?:\.\d+)?\b", lambda m: ("num", _num(m.group(0))))


# A number set on a named thing: the word, up to two linking words, the number ("max_connections
# 50", "max_connections to 200", "retry limit is 5", "连接数改成50"). Not a clock time, a date or a
# decimal's part.
_LINKS = frozenset("to is was are were at of from now be set becomes became".split())
_EN_TOKEN = re.compile(r"[A-Za-z][\w'’-]*|\d+(?:\.\d+)?")
_ZH_ANCHORED = re.compile(
    rf"([{CJK_CHARS}]{{2}})(改成|改为|调到|调成|调整为|提高到|提到|降到|降低到|增加到|减到|设为|设成|是|为|到)?\s*(\d+(?:\.\d+)?)(?![\d.:：])"
)


def anchored_numbers(text: str, cjk: bool) -> frozenset[tuple[str, str, bool]]:
    """(word, number, linked) for each bare number the text sets on a named thing; the word
    as written, lower-cased (the caller stems it). `linked`: a linking word stands between
    them ("max_connections to 200"); a number right after a word may as well name the thing
    ("ticket 4521", "room 204")."""
    if cjk:
        return frozenset(
            (match.group(1), _num(match.group(3)), bool(match.group(2))) for match in _ZH_ANCHORED.finditer(text)
        )
    tokens = list(_EN_TOKEN.finditer(text))
    found = set()
    for index, token in enumerate(tokens):
        if not token.group(0)[0].isdigit() or re.match(r"\s*[:/.,-]?\d", text[token.end() :]):
            continue
        back, end = index - 1, token.start()
        while back >= 0 and index - back <= 3:
            gap = text[tokens[back].end() : end]
            if not re.fullmatch(r"\s*[=:#]?\s*#?", gap):
                break
            word = tokens[back].group(0).lower()
            if word[0].isdigit():
                break
            if word in _LINKS:
                back, end = back - 1, tokens[back].start()
                continue
            if word not in STOPWORDS and len(word) >= 2 and not re.fullmatch(_MONTH_RE, word, re.IGNORECASE):
                linked = back < index - 1 or bool(gap.strip(" #"))
                found.add((word.removesuffix("'s").removesuffix("’s"), _num(token.group(0)), linked))
            break
    return frozenset(found)


_EN_SINCE = re.compile(rf"\bsince\s+(?:(?:early|late|mid)[\s-]+)?(?:{_MONTH_RE}\b\.?(?:\s+((?:19|20)\d{{2}}))?|((?:19|20)\d{{2}})\b)", re.IGNORECASE)
_ZH_SINCE = re.compile(rf"(?:从|自从|自)?(?:((?:19|20)\d{{2}})\s*年)?({_ZH_NUM})\s*月份?(?:开始|起|以来)")


def since(text: str, cjk: bool) -> tuple[int | None, int | None] | None:
    """When the text says its state began ("since February", "since 2023", 从三月开始, 2024年5月
    以来): (year or None, month or None), or None."""
    if cjk:
        match = _ZH_SINCE.search(text)
        if not match:
            return None
        month = zh_number(match.group(2))
        if month is None or not 1 <= month <= 12:
            return None
        return (int(match.group(1)) if match.group(1) else None, int(month))
    match = _EN_SINCE.search(text)
    if not match:
        return None
    if match.group(1):
        return (int(match.group(2)) if match.group(2) else None, MONTH_ABBREVIATIONS.index(match.group(1)[:3].lower()) + 1)
    return (int(match.group(3)), None)


def extract_values(text: str, cjk: bool) -> tuple[frozenset[Value], str]:
    """The text's typed values, and the text with those values blanked out."""
    extractor = _Extractor(text)
    (_extract_zh if cjk else _extract_en)(extractor)
    return frozenset(extractor.values), extractor.text
