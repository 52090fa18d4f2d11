"""A labelled quality set: real prose of varied length and language (good) and realistic junk (bad).

Every source is split in two halves by a fixed shuffle: ``dev`` (used while choosing corpusforge's defaults)
and ``test`` (held out; the benchmark reports both). Junk is generated from the same half's real words,
so the two splits share no text.
"""
from __future__ import annotations

import dataclasses
import random
import re

from bench.quality_data import sources


@dataclasses.dataclass
class Example:
    id: str
    text: str
    good: bool
    kind: str
    lang: str


def _halves(items: list[str], split: str) -> list[str]:
    """The first half of a source is ``dev``, the second ``test`` (so runs of paragraphs never straddle)."""
    half = len(items) // 2
    return items[:half] if split == "dev" else items[half:]


def _runs(paragraphs: list[str], rng: random.Random, n: int, lo: int = 3, hi: int = 6) -> list[str]:
    """Multi-paragraph documents: consecutive paragraphs of the (unshuffled) source."""
    out = []
    for _ in range(n):
        k = rng.randint(lo, hi)
        start = rng.randrange(0, max(1, len(paragraphs) - k))
        out.append("\n\n".join(paragraphs[start:start + k]))
    return out


# --------------------------------------------------------------------------------------------- junk
MENU = {
    "en": ["Home", "About us", "Products", "Services", "Blog", "Contact", "Shop", "News", "Careers", "FAQ", "Support",
           "Login", "Register", "Pricing", "Gallery", "Events", "Team", "Downloads", "Search", "My account", "Cart"],
    "de": ["Startseite", "Über uns", "Produkte", "Leistungen", "Kontakt", "Impressum", "Karriere", "Aktuelles", "Anmelden"],
    "fr": ["Accueil", "Qui sommes-nous", "Produits", "Services", "Contact", "Actualités", "Connexion", "Panier"],
    "es": ["Inicio", "Nosotros", "Productos", "Servicios", "Contacto", "Noticias", "Iniciar sesión", "Carrito"],
}
COOKIE = {
    "en": ["We use cookies to improve your experience on our website.",
           "This website uses cookies to ensure you get the best experience.",
           "By clicking \"Accept all\", you agree to the storing of cookies on your device to enhance site navigation and analyse site usage.",
           "We and our partners use cookies and similar technologies for personalised ads and content.",
           "You can change your preferences at any time in Cookie Settings.", "Read our Cookie Policy.",
           "Accept all", "Reject all", "Cookie settings", "Manage preferences", "Privacy Policy", "Got it!"],
    "de": ["Wir verwenden Cookies, um Ihnen die bestmögliche Nutzung unserer Webseite zu ermöglichen.",
           "Mit dem Klick auf \"Alle akzeptieren\" stimmen Sie der Verwendung aller Cookies zu.",
           "Weitere Informationen finden Sie in unserer Datenschutzerklärung.", "Alle akzeptieren", "Einstellungen",
           "Cookies akzeptieren", "Nur notwendige Cookies"],
    "fr": ["Nous utilisons des cookies pour améliorer votre expérience sur notre site.",
           "En cliquant sur « Tout accepter », vous acceptez l'utilisation des cookies.",
           "Consultez notre politique de confidentialité.", "Tout accepter", "Paramètres des cookies", "Refuser"],
    "es": ["Utilizamos cookies propias y de terceros para mejorar nuestros servicios.",
           "Si continúa navegando, consideramos que acepta su uso.", "Más información en nuestra Política de cookies.",
           "Aceptar", "Configurar cookies", "Rechazar"],
}
FOOTER = ["© {year} {Company}. All rights reserved.", "Privacy Policy | Terms of Use | Sitemap",
          "Subscribe to our newsletter", "Follow us on Facebook, Twitter and Instagram", "Powered by WordPress",
          "Copyright {year} {Company} Inc.", "Terms and Conditions", "Back to top", "Skip to main content",
          "Sign up for our newsletter to get the latest news.", "Share on Facebook", "Impressum | Datenschutz",
          "Mentions légales | Politique de confidentialité", "Aviso legal | Política de privacidad"]
FRAGMENTS = ["Click here to continue", "Page {n} of {m}", "Loading...", "Posted by admin on March {n}, 2021",
             "Read more »", "Share this:", "Related posts", "Add to cart", "Leave a comment", "Skip to content",
             "No comments yet.", "Tags: {w}, {w2}", "Next page →", "Previous post", "Continue reading",
             "Mehr lesen", "Weiterlesen »", "Lire la suite", "Leer más", "Seite {n} von {m}", "Zum Warenkorb hinzufügen",
             "{W} {w2}", "{W}", "{W} - {W2} - {n}", "Updated {n} minutes ago", "Sold out", "Free shipping on orders over ${m}!"]
SEO = ["best {kw}", "cheap {kw}", "buy {kw} online", "{kw} for sale", "{kw} near me", "discount {kw}", "{kw} deals",
       "{kw} {year}", "top {kw} reviews", "{kw} shop", "order {kw} now", "{kw} price", "{kw} online cheap",
       "free {kw}", "{kw} coupon", "{kw} best price guaranteed"]
LOREM = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore "
         "magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo "
         "consequat duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur "
         "excepteur sint occaecat cupidatat non proident sunt in culpa qui officia deserunt mollit anim id est laborum "
         "vestibulum ante primis faucibus orci luctus ultrices posuere cubilia curae donec velit neque auctor sit amet "
         "aliquam vel ullamcorper sit amet ligula pellentesque habitant morbi tristique senectus netus").split()
_WORD = re.compile(r"[^\W\d_]{3,}")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fill(template: str, rng: random.Random, vocab: list[str]) -> str:
    w, w2 = rng.choice(vocab).lower(), rng.choice(vocab).lower()
    return template.format(n=rng.randint(1, 30), m=rng.randint(31, 99), w=w, w2=w2, W=_cap(w), W2=_cap(w2),
                           year=rng.randint(2005, 2024), Company=_cap(rng.choice(vocab)), kw=w)


def junk(kind: str, rng: random.Random, pars_by_lang: dict[str, list[str]], art: list[str]) -> str:
    lang = rng.choice(["en", "en", "de", "fr", "es"])
    pars = pars_by_lang[lang]
    vocab = sorted({w for p in pars for w in _WORD.findall(p)})
    if kind == "nav_menu":
        items = rng.sample(MENU[lang], min(len(MENU[lang]), rng.randint(4, 9)))
        sep = rng.choice([" | ", " · ", " » ", "\n", "  "])
        lines = [sep.join(items)] + ([sep.join(rng.sample(MENU["en"], 5))] if rng.random() < 0.5 else [])
        return "\n".join(lines)
    if kind == "link_list":
        lines = []
        for _ in range(rng.randint(5, 14)):
            title = " ".join(_cap(rng.choice(vocab)) for _ in range(rng.randint(3, 8)))
            style = rng.random()
            if style < 0.3:
                title = f"» {title}"
            elif style < 0.6:
                title += f" ({rng.randint(1, 300)} comments)"
            elif style < 0.8:
                title += f"\nhttps://www.{rng.choice(vocab).lower()}.com/{rng.choice(vocab).lower()}-{rng.choice(vocab).lower()}"
            lines.append(title)
        return "\n".join(lines)
    if kind == "cookie_banner":
        items = COOKIE[lang]
        sentences = [s for s in items if s.endswith(".")]
        buttons = [s for s in items if not s.endswith(".")]
        body = " ".join(rng.sample(sentences, min(len(sentences), rng.randint(1, 3))))
        return body + "\n" + "\n".join(rng.sample(buttons, min(len(buttons), rng.randint(1, 3))))
    if kind == "seo_stuffing":
        kw = rng.choice(vocab).lower() + (" " + rng.choice(vocab).lower() if rng.random() < 0.5 else "")
        parts = [_fill(rng.choice(SEO), rng, [kw]) for _ in range(rng.randint(8, 25))]
        sep = rng.choice([", ", " | ", ". ", " - "])
        return _cap(sep.join(parts)) + "."
    if kind == "repeated_lines":
        line = rng.choice(pars)
        if rng.random() < 0.5:
            line = " ".join(line.split()[: rng.randint(3, 12)])
        return "\n".join([line] * rng.randint(3, 10))
    if kind == "number_table":
        cols = rng.randint(3, 7)
        header = "  ".join(_cap(rng.choice(vocab)) for _ in range(cols))
        rows = ["  ".join(f"{rng.uniform(0, 1000):.{rng.randint(0, 2)}f}" for _ in range(cols)) for _ in range(rng.randint(4, 15))]
        return "\n".join([header] + rows)
    if kind == "lorem_ipsum":
        sents = []
        for _ in range(rng.randint(2, 8)):
            sents.append(_cap(" ".join(rng.choice(LOREM) for _ in range(rng.randint(6, 15)))) + ".")
        if rng.random() < 0.5:
            sents[0] = "Lorem ipsum dolor sit amet, consectetur adipiscing elit."
        return " ".join(sents)
    if kind == "symbol_art":
        if art and rng.random() < 0.6:
            return rng.choice(art)
        ch = rng.choice("=*#-~+/\\|_")
        width = rng.randint(20, 60)
        title = " ".join(_cap(rng.choice(vocab)) for _ in range(rng.randint(1, 2)))
        return "\n".join([ch * width, f"{ch}{ch} {title} {ch}{ch}", ch * width] + [rng.choice(["/\\/\\/\\/\\", "|  |  |", "<><><>", "(*_*)"]) * rng.randint(2, 6)])
    if kind == "short_fragment":
        return _fill(rng.choice(FRAGMENTS), rng, vocab)
    if kind == "mojibake":
        par = rng.choice([p for p in pars if any(ord(c) > 127 for c in p)] or pars)
        return par.encode("utf-8").decode("cp1252", errors="replace")
    if kind == "boilerplate_page":
        parts = [" | ".join(rng.sample(MENU[lang], min(5, len(MENU[lang]))))]
        if rng.random() < 0.7:
            parts.append(" ".join(rng.sample([s for s in COOKIE[lang] if s.endswith(".")], 1)))
        parts += [_fill(f, rng, vocab) for f in rng.sample(FOOTER, rng.randint(2, 5))]
        return "\n".join(parts)
    if kind == "word_salad":
        if rng.random() < 0.5:  # a real paragraph's tokens shuffled
            toks = re.findall(r"\w+|[^\w\s]", rng.choice([p for p in pars if len(p) > 200] or pars))
            rng.shuffle(toks)
            return _cap(" ".join(toks))
        sents = [_cap(" ".join(rng.choice(vocab).lower() for _ in range(rng.randint(6, 14)))) + "." for _ in range(rng.randint(3, 8))]
        return " ".join(sents)
    raise ValueError(kind)


JUNK_KINDS = ["nav_menu", "link_list", "cookie_banner", "seo_stuffing", "repeated_lines", "number_table",
              "lorem_ipsum", "symbol_art", "short_fragment", "mojibake", "boilerplate_page", "word_salad"]


def build(split: str = "test", per_kind: int = 60, seed: int = 0) -> list[Example]:
    """The labelled examples of one split (``dev`` or ``test``)."""
    rng = random.Random(f"{seed}-{split}")
    pydoc = sources.python_doc_paragraphs()
    good: dict[tuple[str, str], list[str]] = {}
    good[("en_doc_paragraph", "en")] = _halves(pydoc, split)
    good[("en_doc_multi_paragraph", "en")] = _runs(_halves(pydoc, split), rng, per_kind)
    good[("en_docstring_short", "en")] = _halves(sources.docstring_paragraphs(), split)
    good[("en_dictionary_entry", "en")] = _halves(sources.wordnet_entries(), split)
    for lang in ("de", "fr", "es", "it"):
        pars = sources.debian_reference_paragraphs(lang)
        if pars:
            good[(f"{lang}_paragraph", lang)] = _halves(pars, split)
            good[(f"{lang}_multi_paragraph", lang)] = _runs(_halves(pars, split), rng, per_kind)
    for lang in ("de", "es", "it"):
        quotes = sources.fortunes(lang)
        if quotes:
            good[(f"{lang}_quote", lang)] = _halves(quotes, split)

    examples: list[Example] = []
    pars_by_lang: dict[str, list[str]] = {}
    for (kind, lang), items in good.items():
        chosen = rng.sample(items, min(per_kind, len(items)))
        if kind.endswith("_paragraph") and "multi" not in kind:
            pars_by_lang.setdefault(lang, []).extend(chosen)
        examples += [Example(f"{split}-{kind}-{i}", t, True, kind, lang) for i, t in enumerate(chosen)]
    for lang in ("de", "fr", "es"):
        pars_by_lang.setdefault(lang, pars_by_lang["en"])  # without the Debian packages, junk is English
    art = _halves(sources.ascii_art(), split)
    for kind in JUNK_KINDS:
        for i in range(per_kind):
            examples.append(Example(f"{split}-{kind}-{i}", junk(kind, rng, pars_by_lang, art), False, kind, ""))
    return examples
