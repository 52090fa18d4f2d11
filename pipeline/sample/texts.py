"""Hand-written material for the built-in sample: boilerplate, sentences with synthetic personal data,
junk pages, and good prose in other languages. All personal data here is fake (reserved example domains,
555 numbers, documentation IP ranges, published test card numbers and IBANs)."""
from __future__ import annotations

import random

BOILERPLATE = [
    "Share this page on social media. Posted by admin in Uncategorized. Leave a comment below.",
    "Copyright 2024 Example Docs. All rights reserved. Privacy policy | Terms of use | Contact us",
    "This article was last updated on 12 March 2024. Was this page helpful? Yes / No",
]

PII_SENTENCES = [
    "For questions about this section, write to maria.gonzalez@example.com before the end of the month.",
    "The maintainer, reachable at +1-202-555-0143 ext. 12, answers calls on weekdays.",
    "Payment for the printed edition was made with card 4111 1111 1111 1111 by the author.",
    "The test server at 192.0.2.44 logged the request, and so did 2001:db8::8a2e:370:7334.",
    "Refunds go to the account with IBAN GB82 WEST 1234 5698 7654 32 within ten days.",
    "Her social security number, 078-05-1120, was printed on the form by mistake.",
    "Send the signed copy to j.smith@example.org or fax it to (202) 555-0178.",
    "The donation came from card 5500 0000 0000 0004, according to the receipt.",
    "Call the office on +44 20 7946 0958 if the package does not arrive.",
    "Logs show a second login from 198.51.100.23 shortly after midnight.",
]

FOREIGN = [
    ("de", "Die Stadtbibliothek öffnet im Frühjahr wieder ihre Türen. Nach zwei Jahren Umbau gibt es nun einen "
           "großen Lesesaal mit Blick auf den Fluss, eine eigene Abteilung für Kinder und Jugendliche sowie "
           "mehrere Arbeitsplätze, an denen man in Ruhe lernen kann. Die Leiterin der Bibliothek erklärte, dass "
           "man besonders auf eine freundliche Atmosphäre geachtet habe, damit sich alle Besucher willkommen fühlen."),
    ("de", "Beim Backen von Brot kommt es vor allem auf Geduld an. Der Teig braucht Zeit, um aufzugehen, und "
           "wer ihn zu früh in den Ofen schiebt, bekommt ein flaches und dichtes Ergebnis. Viele Bäcker lassen "
           "den Teig deshalb über Nacht im Kühlschrank ruhen, weil sich dabei auch der Geschmack verbessert."),
    ("de", "Der Wanderweg führt zunächst durch einen dichten Wald und steigt dann langsam zum Gipfel an. "
           "Oben angekommen, wird man mit einer weiten Aussicht über das ganze Tal belohnt."),
    ("fr", "Le marché du samedi matin attire chaque semaine des centaines de visiteurs. On y trouve des légumes "
           "de saison, des fromages de la région et du pain encore chaud. Les producteurs discutent volontiers "
           "avec les clients et expliquent comment ils cultivent leurs produits, ce qui donne au marché une "
           "ambiance à la fois simple et chaleureuse."),
    ("fr", "Apprendre une langue étrangère demande de la régularité plus que du talent. Quelques minutes de "
           "pratique chaque jour valent mieux qu'une longue séance une fois par mois, car la mémoire a besoin "
           "de répétitions espacées pour retenir durablement le vocabulaire et la grammaire."),
    ("fr", "La rivière traverse le village avant de rejoindre le fleuve, et ses berges sont devenues un lieu de "
           "promenade très apprécié des habitants."),
    ("es", "La biblioteca del barrio organiza cada jueves un taller de lectura para personas mayores. Los "
           "participantes eligen juntos un libro, lo leen durante la semana y luego comparten sus impresiones "
           "en una conversación tranquila que suele durar más de una hora. Muchos dicen que el taller les ha "
           "ayudado a conocer a sus vecinos."),
    ("es", "Para cuidar bien una planta de interior hay que observar la luz que recibe y no regarla en exceso. "
           "La mayoría de las plantas mueren por demasiada agua y no por falta de ella, así que conviene tocar "
           "la tierra antes de regar y esperar a que esté seca."),
    ("es", "El tren sale de la estación central a las ocho de la mañana y llega a la costa poco antes del mediodía."),
]


def junk_pages(rng: random.Random) -> list[str]:
    """Pages a language model should not learn from, of the kinds crawls are full of."""
    pages = []
    nav = ["Home", "About", "Products", "Blog", "Contact", "Login", "Cart", "FAQ", "Careers", "Press"]
    for _ in range(6):
        pages.append("\n".join(rng.sample(nav, len(nav)) * 2))
    for keyword in ["cheap flights", "best laptop deals", "buy shoes online", "car insurance quotes"]:
        pages.append(" ".join([keyword] * 40) + " " + " ".join([keyword + " now"] * 20))
    lorem = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore "
             "et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris.")
    for _ in range(4):
        pages.append("\n\n".join([lorem] * rng.randint(2, 5)))
    for _ in range(4):
        pages.append("\n".join("".join(rng.choice("*#=~-+|/\\") for _ in range(60)) for _ in range(12)))
    mojibake = ("Ã©tÃ© trÃ¨s rÃ©ussi, câ€™est lâ€™Ã©tÃ© oÃ¹ nous avons dÃ©couvert la cÃ´te. "
                "Ã¢â‚¬Å“TrÃ¨s bienÃ¢â‚¬Â\x9d, a dit lâ€™hÃ´te. ")
    for _ in range(3):
        pages.append(mojibake * rng.randint(3, 6))
    cookie = ("We use cookies to improve your experience. By continuing to browse you accept our cookie policy "
              "and privacy policy. Accept all cookies. Manage preferences. Reject non-essential cookies.")
    for _ in range(3):
        pages.append(cookie + "\n" + "\n".join(rng.sample(nav, 6)))
    for _ in range(4):
        pages.append("\n".join(" ".join(str(rng.randint(0, 9999)) for _ in range(8)) for _ in range(15)))
    words = ["table", "quickly", "purple", "democracy", "banana", "the", "of", "runs", "seven", "cloud",
             "angrily", "and", "under", "yesterday", "piano", "with", "to", "be", "have", "that"]
    for _ in range(4):
        pages.append(" ".join(rng.choice(words) for _ in range(120)))
    for _ in range(3):
        pages.append("\n".join(f"Click here: https://example.com/page/{rng.randint(1, 999)}" for _ in range(20)))
    return pages
