"""Text primitives the quality rules share: a fast word tokenizer, lines, paragraphs, stop words.

``TextView`` computes each view of a text once (words, lines...) so that a chain of rules tokenizes a
document once. The tokenizer is a single regular expression that follows spaCy's English tokenizer (which
datatrove uses) on the cases that move the rules' numbers: punctuation is split off words, contractions
(``do n't``, ``it 's``) and hyphenated words are split, numbers, URLs, e-mail addresses and abbreviations
(``e.g.``, ``Mr.``) stay whole.
"""
from __future__ import annotations

import re
from functools import cached_property

_ABBREVIATIONS = (
    "Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|Inc|Ltd|Co|Corp|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|"
    "Mt|Gen|Gov|Rep|Sen|Rev|Fig|fig|approx|dept|est|No|no|vol|Vol|cf|al"
)
TOKEN_RE = re.compile(
    r"(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]}]"  # URL, trailing punctuation left out
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}"  # e-mail address
    r"|(?:[^\W\d_]\.){2,}"  # e.g. i.e. U.S.
    rf"|(?<![\w.])(?:{_ABBREVIATIONS})\.(?=\s)"  # Mr. etc.
    r"|\d+(?:[.,:]\d+)+"  # 3.14 1,000 12:30
    r"|\w+(?=n['’]t\b)|n['’]t\b"  # do n't
    r"|(?<=[^\W\d_])['’](?:s|S|d|D|m|M|re|ve|ll|RE|VE|LL)\b"  # it 's, we 're
    r"|\b[Cc]an(?=not\b)"  # can not
    r"|[^\W_](?:\w*[^\W_])?(?:\.[^\W_](?:\w*[^\W_])?)*"  # words, os.path.join; _ is split off
    r"|_"
    r"|\.{2,}|-{2,}|…"
    r"|[^\w\s]"
)
# Characters that end a sentence / a line of prose (datatrove's TERMINAL_PUNCTUATION, common scripts).
TERMINAL_PUNCTUATION = frozenset(".!?。！？．｡।॥؟۔։።፧߹‼⁇⁈⁉‽⸮")
SENTENCE_END_TOKENS = frozenset(".!?。！？．｡।॥؟۔։።፧‼⁇⁈⁉‽")
PARAGRAPH_RE = re.compile(r"\n{2,}")
LINES_RE = re.compile(r"\n+")


def words(text: str) -> list[str]:
    """Word tokens of ``text``, punctuation tokens included (as spaCy/datatrove count them)."""
    return TOKEN_RE.findall(text)


def is_word(token: str) -> bool:
    """A token with a letter or digit (not a punctuation/symbol token)."""
    return token[0].isalnum() or any(c.isalnum() for c in token)


def count_sentences(tokens: list[str]) -> int:
    """Sentences in a token list, as spaCy's sentencizer splits: after a sentence-end token, at the next word."""
    n, seen_end = (1 if tokens else 0), False
    for tok in tokens:
        if tok in SENTENCE_END_TOKENS:
            seen_end = True
        elif seen_end and is_word(tok):
            n += 1
            seen_end = False
    return n


def find_duplicates(items: list[str]) -> tuple[int, int]:
    """(number of repeated items, characters in them), counting every occurrence after the first."""
    seen: set[str] = set()
    dup_items = dup_chars = 0
    for item in items:
        if item in seen:
            dup_items += 1
            dup_chars += len(item)
        else:
            seen.add(item)
    return dup_items, dup_chars


class TextView:
    """Lazily computed views of one text, shared by all rules applied to it."""

    __slots__ = ("text", "__dict__")

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def words(self) -> list[str]:
        return words(self.text)

    @cached_property
    def content_words(self) -> list[str]:
        return [w for w in self.words if is_word(w)]

    @cached_property
    def lower_words(self) -> list[str]:
        return [w.lower() for w in self.content_words]

    @cached_property
    def splitlines(self) -> list[str]:
        return self.text.splitlines()


def as_view(text: "str | TextView") -> TextView:
    return text if isinstance(text, TextView) else TextView(text)


# Gopher's stop words (Rae et al. 2021), used case-sensitively for every document in the paper setting.
GOPHER_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})

# Frequent function words per language (lower case). A document of a language with a list needs a few of
# its own language's function words; languages without a list skip the stop-word rules.
_STOP_WORDS_TEXT = {
    "en": "the be to of and that have with a an in is it for on as was are by or this from at not but which "
          "you he she we they his her its their our be been has had were will would can could should may "
          "there if when than then so also into about more one all no its who what how up out over under "
          "through between after before during without within each other some any such only most",
    "de": "der die das und ist in zu den von mit sich des auf für nicht ein eine einer eines einem einen "
          "als auch es an er sie wir ich dem im aus bei nach wie wird werden sind war hat haben oder aber "
          "so wenn nur noch kann zum zur über durch dass",
    "fr": "le la les de des du un une et est en que qui dans pour pas sur au aux il elle ce cette ces "
          "avec par plus ne se sont ont a son sa ses leur nous vous ils je mais ou comme été être tout",
    "es": "el la los las de del y en que a un una es por con para no se su sus al lo como más pero "
          "este esta son fue ha le ya o muy sin sobre también me hay entre cuando todo ser",
    "it": "il lo la i gli le di del della dei delle e è in che un una per non con da si al alla sono "
          "come più ma anche ha questo questa nel nella o se sua suo loro",
    "pt": "o a os as de do da dos das e em que um uma para com não no na por se é mais ao como mas "
          "foi ser são sua seu ou quando muito já também pelo pela",
    "nl": "de het een en van in is dat op te zijn met voor niet aan er die als ook door maar om bij "
          "wordt worden of uit naar dan ze hij zij wij ik was",
    "sv": "och i att det som en på är av för med till den har de inte om ett var jag men så kan vi "
          "från eller när sig",
    "da": "og i at det som en på er af for med til den har de ikke om et var jeg men så kan vi fra "
          "eller når sig",
    "no": "og i å det som en på er av for med til den har de ikke om et var jeg men så kan vi fra "
          "eller når seg",
    "pl": "i w na z się nie do to że jest o jak a od po co ale dla przez jego tak za są oraz było być",
    "cs": "a v se na je že s z do to o k i jako ale pro by jsou jeho byl což nebo jak",
    "ru": "и в не на что с по как это он к но из у за от то же о для а так она был его все мы они "
          "было при бы или быть",
    "uk": "і в не на що з по як це він до але із у за від та же о для а так вона був його всі ми вони",
    "ro": "și în de la a pe cu nu că o un este care din se pentru mai sunt fost ca dar",
    "tr": "ve bir bu da de için ile ne çok olarak daha gibi en ama ki o var olan",
    "id": "dan yang di ini itu dengan untuk dari dalam tidak akan pada juga ke ada adalah oleh",
    "fi": "ja on ei se että oli hän mutta kun tai myös ovat joka kuin niin sen",
    "hu": "a az és hogy nem is egy van meg de csak el volt mint már ez",
    "ca": "el la els les de del i en que a un una per amb no es és al com més però",
}
STOP_WORDS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in _STOP_WORDS_TEXT.items()}


def base_language(label: str | None) -> str | None:
    """``en`` for ``en``, ``eng_Latn`` (GlotLID) or ``__label__en``; None stays None."""
    if not label:
        return None
    label = label.removeprefix("__label__")
    code = label.split("_", 1)[0].split("-", 1)[0].lower()
    return _ISO3.get(code, code)


_ISO3 = {
    "eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl", "swe": "sv",
    "dan": "da", "nob": "no", "nno": "no", "pol": "pl", "ces": "cs", "rus": "ru", "ukr": "uk", "ron": "ro",
    "tur": "tr", "ind": "id", "fin": "fi", "hun": "hu", "cat": "ca", "zho": "zh", "cmn": "zh", "jpn": "ja",
    "tha": "th", "nb": "no", "nn": "no",
}
