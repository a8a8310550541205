"""What the rule judge reads from one memory's text, in English and Chinese:
the person a fact is about, cue words (correction, future plan, temporary,
habitual, continuity, addition, negation), topic terms and coarse attribute
families. Typed values come from text_values.
"""

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from app.revisions.text_values import Value, extract_values

_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")

# ---------------------------------------------------------------- cue lists
_EN_CORRECTION = (
    "actually", "no longer", "not anymore", "anymore", "any more", "no more",
    "instead", "changed", "switched", "rescheduled", "postponed", "cancelled",
    "canceled", "relocated", "moved", "moves", "quit", "stopped", "gave up",
    "given up", "used to", "upgraded", "downgraded", "replaced", "split up",
    "broke up", "divorced", "got married", "got engaged", "promoted", "resigned",
    "transferred", "graduated",
    "went up", "went down", "down to", "dropped to", "raised to", "rose to",
    "fell to", "increased to", "decreased to", "reduced to", "lowered to",
    "cut to", "pushed to", "pushed back", "retired", "back home", "came back",
    "got back", "returned", "new job", "new role", "new position",
    "new address", "new number", "has started", "started", "these days",
    "nowadays", "now",
)
_ZH_CORRECTION = (
    "其实", "不对", "搞错", "改成", "改为", "改到", "改了", "改喝", "改吃", "改用",
    "不再", "已经不", "戒了", "戒掉", "换了", "换成", "换到", "又换", "搬到", "搬去",
    "搬家", "跳槽", "辞职", "离职", "结束了", "回到", "调到", "调成", "降价", "涨价",
    "降到", "涨到", "涨了", "降了", "升到", "升级到", "升级了", "提高到", "降低到", "减到",
    "增加到", "瘦到", "取消", "推迟", "毕业了", "分手", "离婚", "如今", "现在",
)
# 不…了 ("no longer …") but not 不了 ("cannot"); 戒 ("quit") but not 戒指 ("ring").
_ZH_CUE_PATTERNS = (re.compile(r"不[^了，。,；;！!？?]{1,4}了"), re.compile(r"戒(?!指)"))

_EN_FUTURE = re.compile(
    r"\b(shall|going to|gonna|plan(?:s|ning)? to|intend(?:s)? to|about to"
    r"|tomorrow|tonight|soon|upcoming|this coming|later this"
    r"|next (?:week|month|year|weekend|time|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday|spring|summer|autumn|fall|winter))\b"
    r"|(?:\bwill|['’]ll)\s+(?!be\b)\w+|(?:\bwill|['’]ll)\s+be\s+\w+ing\b",
    re.IGNORECASE,
)
_ZH_FUTURE = re.compile(
    r"下周|下星期|下礼拜|下个?月|明天|后天|明年|下次|下回|将要|即将|打算|计划"
    r"|准备去|要去|要搬|过几天|过两天"
)
_EN_TEMPORARY = re.compile(
    r"(?<!starting )(?<!from )(?<!as of )\b(this week|this weekend|today|tonight|for now|for the time being"
    r"|temporarily|for a few days|for a couple of days|for the next few days)\b",
    re.IGNORECASE,
)
_ZH_TEMPORARY = re.compile(r"这几天|这两天|这周|本周|今天|今晚|暂时|临时|这阵子")
_EN_HABITUAL = re.compile(
    r"\b(normally|usually|typically|generally|always|regularly|every day)\b",
    re.IGNORECASE,
)
_ZH_HABITUAL = re.compile(r"平时|平常|一般|通常|总是|向来|往常|每天|一直")
_EN_CONTINUITY = re.compile(r"\bstill\b", re.IGNORECASE)
_EN_ADDITIVE = re.compile(
    r"\b(also|too|as well|in addition|additionally|besides|another)\b", re.IGNORECASE
)
_ZH_ADDITIVE = re.compile(r"也|另外|此外|还有|同时")
_ZH_CONTINUITY = re.compile(r"仍然|依然|仍在|还在|照旧")
_EN_NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|without|cannot|avoid\w*|dislike\w*|hates?"
    r"|quit\w*|stop(?:s|ped)?|g[ai]ve up|given up)\b|n['’]t\b",
    re.IGNORECASE,
)
_ZH_NEGATION = re.compile(r"不(?![错过少同断仅但久管论如然])|没(?!问题|事|关系)|别|戒(?!指)|忌口|讨厌|拒绝")

# ------------------------------------------------------- people and topics
_EN_RELATIONS = {
    "son": "son", "daughter": "daughter", "kid": "child", "kids": "child",
    "child": "child", "children": "child", "baby": "child", "wife": "wife",
    "husband": "husband", "spouse": "spouse", "partner": "partner",
    "boyfriend": "boyfriend", "girlfriend": "girlfriend", "fiance": "fiance",
    "fiancee": "fiance", "mother": "mother", "mom": "mother", "mum": "mother",
    "father": "father", "dad": "father", "parents": "parents",
    "brother": "brother", "sister": "sister", "sibling": "sibling",
    "grandmother": "grandmother", "grandma": "grandmother",
    "grandfather": "grandfather", "grandpa": "grandfather", "aunt": "aunt",
    "uncle": "uncle", "cousin": "cousin", "niece": "niece", "nephew": "nephew",
    "friend": "friend", "colleague": "colleague", "coworker": "colleague",
    "boss": "boss", "manager": "boss", "roommate": "roommate",
    "neighbor": "neighbor", "neighbour": "neighbor", "teammate": "teammate",
}
_EN_SELF = {"i", "i'm", "i've", "i'd", "me", "we", "user", "users"}
_EN_POSSESSIVE = {"my", "our", "user's", "users'"}
_ZH_RELATIONS = {
    "儿子": "son", "女儿": "daughter", "孩子": "child", "小孩": "child",
    "宝宝": "child", "老婆": "wife", "妻子": "wife", "太太": "wife", "媳妇": "wife",
    "爱人": "spouse", "老公": "husband", "丈夫": "husband", "对象": "partner",
    "男朋友": "boyfriend", "男友": "boyfriend", "女朋友": "girlfriend",
    "女友": "girlfriend", "父母": "parents", "爸妈": "parents", "爸爸": "father",
    "父亲": "father", "爸": "father", "妈妈": "mother", "母亲": "mother",
    "妈": "mother", "哥哥": "brother", "弟弟": "brother", "哥": "brother",
    "弟": "brother", "姐姐": "sister", "妹妹": "sister", "姐": "sister",
    "妹": "sister", "爷爷": "grandfather", "外公": "grandfather",
    "姥爷": "grandfather", "奶奶": "grandmother", "外婆": "grandmother",
    "姥姥": "grandmother", "朋友": "friend", "同事": "colleague",
    "老板": "boss", "领导": "boss", "室友": "roommate", "邻居": "neighbor",
    "同学": "classmate",
}
_ZH_RELATION_AFTER_SELF = re.compile(
    r"^(?:用户|我们|我)的?(" + "|".join(sorted(_ZH_RELATIONS, key=len, reverse=True)) + ")"
)
_ZH_SELF = re.compile(r"(用户|我们|我)")

# Coarse attribute families: two texts in one family talk about the same
# attribute of their subject even when they share no word. English entries
# are word beginnings.
_FAMILIES = {
    "residence": (r"liv|resid|relocat|mov|home|apartment|townhouse|house|flat|rent",
                  r"住|搬|租房|房子|在[^，。]{1,6}安家"),
    "job": (r"work|job|role|position|employ|career|hire|resign|occupation|profession"
            r"|engineer|developer|nurse|teacher|doctor|manager|designer|lawyer"
            r"|accountant|analyst|consultant|programmer|trainer",
            r"工作|上班|跳槽|辞职|离职|入职|创业|职位|公司|就职|任职|岗位|工程师|经理"
            r"|程序员|设计师|医生|护士|老师|律师|会计|运营|销售|在[^，。,；;]{1,8}(?:做|当|任)"),
    "whereabouts": (r"trip|travel|visit|land|arriv|abroad", r"出差|旅游|旅行|回到|到达"),
    "sleep": (r"sleep|asleep|bed|wake|woke|awake|owl|up at|get up|gets up|got up",
              r"睡|起床|上床|熬夜|夜猫子"),
    "diet": (r"eat|ate|drink|vegetarian|vegan|pescatarian|meat|diet", r"吃|喝|素食|饮食"),
    "smoking": (r"smok|cigarette|vap", r"烟"),
    "education": (r"student|stud|school|college|universit|graduat|degree|major",
                  r"读研|读博|读书|上学|研究生|大学|本科|毕业|学校"),
    "relationship": (r"partner|marri|single|dating|divorc|engag|boyfriend|girlfriend",
                     r"单身|结婚|离婚|分手|对象|恋爱|男朋友|女朋友"),
    "phone": (r"phone|mobile|cell", r"手机号|号码|电话"),
    "email": (r"e-?mail", r"邮箱"),
    "address": (r"address", r"地址"),
    "price": (r"price|cost", r"价|卖|售"),
}
_FAMILY_PATTERNS = {
    family: (re.compile(rf"\b(?:{en})", re.IGNORECASE), re.compile(zh))
    for family, (en, zh) in _FAMILIES.items()
}

_ZH_POSSESSIVE_ATTRIBUTE = re.compile(r"^(?:用户|我)的([\u4e00-\u9fff]{1,6}?)(?:是|叫|在)")
# 叫<名字>: the name of a person or a pet.
_ZH_NAMED = re.compile(r"(?<=叫)[\u4e00-\u9fff]{2}")

_EN_STOPWORDS = frozenset("""
a an the to of in on at for with and or but so that this these those it its
they them their there he him his she her i i'm i've i'd me my we our you your
user users is are was were be been being am has have had do does did done get
gets got can could would should may might must also too very just then than
as by from about after before into over under up down out off every each all
any some more most other others another such only own same what which who whom
whose when where why how if while because since until again once here both few
many much per via one ones s t please remember note noted still new
morning mornings afternoon afternoons evening evenings night nights day days
week weeks month months year years time times let lets like
""".split())
# Words too common in memories to tie two of them to one topic; they still
# count for attribute families and as modifiers ("work laptop").
_EN_LIGHT = frozenset("""
work works worked working home use uses used make makes made take takes took
go goes went come comes came keep keeps kept put want wants need needs prefer
prefers preferred love loves enjoy enjoys thing things stuff place way lot
""".split())
_ZH_LIGHT = re.compile(r"最?喜欢|讨厌|一般|平时|每天|经常|已经|正在|还是|可以|需要|上班|工作")
_ZH_STOP_CHARS = frozenset("的了是在就都也很又还把被给和跟与吗呢吧啊呀这那个着过得地去做有用要会想能才最")

# Cues and people are not what a Chinese sentence is about.
_ZH_NOT_TOPIC = re.compile(
    "|".join(re.escape(w) for w in sorted((*_ZH_CORRECTION, *_ZH_RELATIONS), key=len, reverse=True))
)
# Cue words say that something changed, not what it is about.
_EN_CUE_WORDS = frozenset(
    w for cue in _EN_CORRECTION for w in cue.split()
) - {"job", "role", "position", "address", "number", "home", "new"} | {
    "not", "no", "never", "don't", "doesn't", "didn't", "avoid", "avoids"}


@dataclass(frozen=True, slots=True)
class Signals:
    """Everything the rules read from one text."""

    cjk: bool
    values: frozenset[Value]
    terms: frozenset[str]
    head_terms: frozenset[str]
    proper: frozenset[str]
    lower: frozenset[str]
    tokens: tuple[str, ...]
    subject: str | None
    relations: frozenset[str]
    topic: str | None
    attribute: frozenset[str]
    names: frozenset[str]
    families: frozenset[str]
    cue: str | None
    future: bool
    temporary: bool
    habitual: bool
    continuity: bool
    additive: bool
    negative: bool


# ------------------------------------------------------------ public cues
def _is_cjk(text: str) -> bool:
    return len(_CJK.findall(text)) >= 2


def correction_cue(text: str) -> str | None:
    """The correction cue in a text (e.g. "no longer", "改成"), or None."""
    lowered = text.lower()
    for cue in _EN_CORRECTION:
        if re.search(rf"\b{re.escape(cue)}\b", lowered):
            return cue
    for cue in _ZH_CORRECTION:
        if cue in text:
            return cue
    for pattern in _ZH_CUE_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def is_future_plan(text: str) -> bool:
    """Whether the text announces a plan rather than states a current fact."""
    return bool(_EN_FUTURE.search(text) or _ZH_FUTURE.search(text))


# ------------------------------------------------------------------ terms
def stem(word: str) -> str:
    """A light English stemmer: enough to match allergy/allergic, runs/running."""
    word = re.sub(r"['’](s|ll|re|ve|d|m)$", "", word.lower())
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""),
                         ("ist", ""), ("al", ""), ("ic", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                continue
            return word[: len(word) - len(suffix)] + keep
    return word


def terms_match(a: str, b: str) -> bool:
    """Terms match when equal, when one stem extends the other by a short
    ending (smok/smoke), or when they share a long beginning
    (intolerant/intolerance)."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    if len(short) < 4:
        return False
    extra = len(long) - len(short)
    if long.startswith(short) and (extra <= 1 or (len(short) >= 5 and extra <= 2)):
        return True
    common = len(os.path.commonprefix((a, b)))
    return common >= 6 and common >= 0.85 * len(short)


def _sentence_starts(text: str) -> set[int]:
    starts = {0}
    for match in re.finditer(r"[.!?;:]\s+|\n", text):
        starts.add(match.end())
    return starts


def _en_terms(text: str) -> tuple[list[str], set[str], set[str]]:
    """Content stems in order, plus which appear capitalised mid-sentence
    (proper) and which lowercase, so "Apple" and "apple" stay apart."""
    starts = _sentence_starts(text)
    ordered: list[str] = []
    proper: set[str] = set()
    lower: set[str] = set()
    for match in _WORD.finditer(text):
        raw = match.group(0).strip("'’-")
        word = raw.lower()
        if word.endswith(("n't", "n’t")) or word in _EN_STOPWORDS or word in _EN_CUE_WORDS:
            continue
        term = stem(word)
        if term in _EN_STOPWORDS or word in _EN_LIGHT or word in _EN_RELATIONS or len(term) < 2:
            continue
        ordered.append(term)
        if match.start() in starts:
            continue
        (proper if raw[0].isupper() else lower).add(term)
    return ordered, proper, lower


def _blank(match: re.Match) -> str:
    return "|" * len(match.group(0))


def _zh_terms(text: str) -> tuple[list[str], set[str]]:
    """Chinese terms in order: bigrams of the pieces between function
    characters, single-character pieces as they are (车, 猫), Latin words.
    Terms in the first characters of the sentence are its topic."""
    body = _ZH_SELF.sub(_blank, text)
    body = _ZH_NOT_TOPIC.sub(_blank, _ZH_LIGHT.sub(_blank, body))
    first = _CJK.search(body)
    start = first.start() if first else 0
    ordered: list[str] = []
    head: set[str] = set()
    for run in re.finditer(rf"[^{''.join(_ZH_STOP_CHARS)}\W|]+", body):
        word = run.group(0)
        if word.isascii():
            if word.lower() not in _EN_STOPWORDS and not word.isdigit():
                ordered.append(word.lower())
            continue
        grams = [word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)]
        for offset, gram in enumerate(grams):
            ordered.append(gram)
            if run.start() + offset - start < 5:
                head.add(gram)
    return ordered, head


def _en_subject(text: str) -> str | None:
    # Only the opening words: "the office moved the user's checkup" is
    # about the checkup, not about the user's relatives.
    tokens = [t.lower().replace("’", "'") for t in _WORD.findall(text)[:4]]
    for index, token in enumerate(tokens):
        if token in _EN_POSSESSIVE or (token == "the" and tokens[index + 1 : index + 2] == ["user's"]):
            following = tokens[index + 1 : index + 3]
            relation = next((_EN_RELATIONS[t] for t in following if t in _EN_RELATIONS), None)
            if relation:
                return relation
            if token != "the":
                return "self"
        if token in _EN_SELF:
            return "self"
        if token in _EN_RELATIONS:
            return _EN_RELATIONS[token]
    return None


def _en_attribute(text: str) -> frozenset[str]:
    """"User's favourite cuisine is …" → {cuisine}: which attribute of the
    owner a possessive sentence sets."""
    tokens = [t.lower().replace("’", "'") for t in _WORD.findall(text)[:8]]
    start = 2 if tokens[:2] == ["the", "user's"] else 1 if tokens[:1] and tokens[0] in _EN_POSSESSIVE else 0
    if not start:
        return frozenset()
    copula = next((i for i, t in enumerate(tokens) if t in {"is", "are", "was", "were"}), None)
    if copula is None or copula <= start:
        return frozenset()
    word = tokens[copula - 1]
    if word in _EN_STOPWORDS or word in _EN_RELATIONS:
        return frozenset()
    return frozenset({stem(word)})


def _zh_attribute(text: str) -> frozenset[str]:
    """"用户的生日是…" → {生日}."""
    match = _ZH_POSSESSIVE_ATTRIBUTE.match(text)
    if not match or any(word in match.group(1) for word in _ZH_RELATIONS):
        return frozenset()
    attribute = match.group(1)
    if len(attribute) == 1:
        return frozenset({attribute})
    return frozenset(attribute[i : i + 2] for i in range(len(attribute) - 1))


def _zh_subject(text: str) -> str | None:
    head = text[:8]
    match = _ZH_RELATION_AFTER_SELF.search(re.sub(r"^[^用我]{0,4}", "", head))
    if match:
        return _ZH_RELATIONS[match.group(1)]
    if _ZH_SELF.search(head):
        return "self"
    for word in sorted(_ZH_RELATIONS, key=len, reverse=True):
        if head.startswith(word):
            return _ZH_RELATIONS[word]
    return None


def _relations(text: str) -> frozenset[str]:
    """Every relative or acquaintance the text mentions, wherever it is."""
    words = {_EN_RELATIONS[w.lower()] for w in _WORD.findall(text) if w.lower() in _EN_RELATIONS}
    return frozenset(words | {v for k, v in _ZH_RELATIONS.items() if k in text})


def _families(text: str) -> frozenset[str]:
    return frozenset(
        family for family, (en, zh) in _FAMILY_PATTERNS.items()
        if en.search(text) or zh.search(text)
    )


def _starts_with_person(text: str) -> bool:
    """"User drinks coffee": the sentence opens on the person, not the topic."""
    words = _WORD.findall(text)
    return bool(words) and words[0].lower() in _EN_SELF


def neighbour(term: str, tokens: tuple[str, ...], step: int) -> str | None:
    """The content word right before (step -1) or after (step 1) a term:
    "work" in "work laptop", "engineer" in "data engineer"."""
    for index, token in enumerate(tokens):
        if terms_match(stem(token), term) and 0 <= index + step < len(tokens):
            word = tokens[index + step]
            if word not in _EN_STOPWORDS and not word.endswith("'s"):
                return stem(word)
    return None


@lru_cache(maxsize=4096)
def read(text: str) -> Signals:
    """Read every signal of one text (cached: a text is judged many times)."""
    cjk = _is_cjk(text)
    values, masked = extract_values(text, cjk)
    if cjk:
        ordered, head = _zh_terms(masked)
        proper, lower = {w for w in ordered if w.isascii()}, set()
        subject, attribute = _zh_subject(text), _zh_attribute(text)
        names = proper | set(_ZH_NAMED.findall(text))
    else:
        ordered, proper, lower = _en_terms(masked)
        subject, attribute = _en_subject(text), _en_attribute(text)
        head = set() if _starts_with_person(text) else set(ordered[:2])
        names = set(proper)
    names |= {value for kind, value in values if kind == "entity"}
    return Signals(
        cjk=cjk,
        values=values,
        terms=frozenset(ordered),
        head_terms=frozenset(head),
        proper=frozenset(proper),
        lower=frozenset(lower),
        tokens=tuple(t.lower().replace("’", "'") for t in _WORD.findall(text)),
        subject=subject,
        relations=_relations(text),
        topic=ordered[0] if ordered and subject is None else None,
        attribute=attribute,
        names=frozenset(names),
        families=_families(text),
        cue=correction_cue(text),
        future=is_future_plan(text),
        temporary=bool(_EN_TEMPORARY.search(text) or _ZH_TEMPORARY.search(text)),
        habitual=bool(_EN_HABITUAL.search(text) or _ZH_HABITUAL.search(text)),
        continuity=bool(_EN_CONTINUITY.search(text) or _ZH_CONTINUITY.search(text)),
        additive=bool(_EN_ADDITIVE.search(text) or _ZH_ADDITIVE.search(text)),
        negative=bool(_EN_NEGATION.search(text) or _ZH_NEGATION.search(text)),
    )
