"""datasketch's choices for the configurations people use, so a build need not import datasketch (and the scipy
its ``lsh`` module imports: ~0.5 s of every build's start-up) to make them again.

- ``LSH_PARAMS``: ``(candidate threshold, num_perm, false positive weight) -> (bands, rows)``, what
  ``datasketch.MinHashLSH(threshold, num_perm, weights=(w, 1 - w))`` chooses (its ``_optimal_param``).
- ``PERMUTATIONS``: ``(num_perm, seed) ->`` the base64 of ``datasketch.MinHash(num_perm, seed,
  scheme="affine32").permutations`` (``a`` then ``b``, little-endian uint32).

``minhash.lsh_params`` and ``minhash.permutations`` read these and ask datasketch for anything else.
tests/pipeline/dedup/test_datasketch_tables.py recomputes every entry with datasketch; to add one, add its key
and take the value from that test's failure message.
"""
from __future__ import annotations

LSH_PARAMS: dict[tuple[float, int, float], tuple[int, int]] = {
    (0.1, 64, 0.5): (15, 1),
    (0.15, 64, 0.5): (32, 2),
    (0.2, 64, 0.5): (28, 2),
    (0.25, 64, 0.5): (18, 2),
    (0.3, 64, 0.5): (21, 3),
    (0.35, 64, 0.5): (21, 3),
    (0.4, 64, 0.5): (16, 4),
    (0.45, 64, 0.5): (16, 4),
    (0.5, 64, 0.5): (14, 4),
    (0.55, 64, 0.5): (12, 5),
    (0.6, 64, 0.5): (10, 6),
    (0.65, 64, 0.5): (9, 7),
    (0.7, 64, 0.5): (8, 8),
    (0.75, 64, 0.5): (7, 9),
    (0.8, 64, 0.5): (5, 11),
    (0.85, 64, 0.5): (4, 15),
    (0.9, 64, 0.5): (3, 21),
    (0.1, 128, 0.5): (64, 2),
    (0.15, 128, 0.5): (51, 2),
    (0.2, 128, 0.5): (28, 2),
    (0.25, 128, 0.5): (42, 3),
    (0.3, 128, 0.5): (37, 3),
    (0.35, 128, 0.5): (32, 4),
    (0.4, 128, 0.5): (32, 4),
    (0.45, 128, 0.5): (25, 5),
    (0.5, 128, 0.5): (25, 5),
    (0.55, 128, 0.5): (21, 6),
    (0.6, 128, 0.5): (18, 7),
    (0.65, 128, 0.5): (16, 8),
    (0.7, 128, 0.5): (14, 9),
    (0.75, 128, 0.5): (11, 11),
    (0.8, 128, 0.5): (9, 13),
    (0.85, 128, 0.5): (8, 16),
    (0.9, 128, 0.5): (5, 25),
    (0.1, 256, 0.5): (117, 2),
    (0.15, 256, 0.5): (51, 2),
    (0.2, 256, 0.5): (85, 3),
    (0.25, 256, 0.5): (64, 3),
    (0.3, 256, 0.5): (64, 4),
    (0.35, 256, 0.5): (61, 4),
    (0.4, 256, 0.5): (51, 5),
    (0.45, 256, 0.5): (47, 5),
    (0.5, 256, 0.5): (42, 6),
    (0.55, 256, 0.5): (36, 7),
    (0.6, 256, 0.5): (32, 8),
    (0.65, 256, 0.5): (28, 9),
    (0.7, 256, 0.5): (25, 10),
    (0.75, 256, 0.5): (21, 12),
    (0.8, 256, 0.5): (17, 15),
    (0.85, 256, 0.5): (13, 19),
    (0.9, 256, 0.5): (9, 28),
    (0.1, 512, 0.5): (117, 2),
    (0.15, 512, 0.5): (170, 3),
    (0.2, 512, 0.5): (126, 3),
    (0.25, 512, 0.5): (128, 4),
    (0.3, 512, 0.5): (115, 4),
    (0.35, 512, 0.5): (102, 5),
    (0.4, 512, 0.5): (86, 5),
    (0.45, 512, 0.5): (85, 6),
    (0.5, 512, 0.5): (73, 7),
    (0.55, 512, 0.5): (64, 8),
    (0.6, 512, 0.5): (56, 9),
    (0.65, 512, 0.5): (51, 10),
    (0.7, 512, 0.5): (42, 12),
    (0.75, 512, 0.5): (36, 14),
    (0.8, 512, 0.5): (28, 18),
    (0.85, 512, 0.5): (22, 23),
    (0.9, 512, 0.5): (16, 32),
}

PERMUTATIONS: dict[tuple[int, int], str] = {
    (128, 1): (
        "S+iD1dcBj/4ZX85wkSh43f/9DgATh5lBl1XLmgs9gv+fliNLgafgeCEBRy8DoQzLmX9dX488nMbbVe2w+fPoVg0bJcsz+v7eZcnf"
        "EymqT7H9qaDWy2JloCUX1V6pk5EMF/etaPlBDOPVm5jBOSWLdTu/BQ4ds54RZYRHV4nU8tOv+ajVr78W6tOXDB7jhYTc78vgR71b"
        "1eDBjm1lrQiJjhsx+5nTr5NuE/u/7w8IA5t/Inmge5aDLy0ceGJzSksJAxS2wAHv47p54gnKo/GFqBHqiiuxxcGoG/3+E+c0zYtf"
        "A/RW1R9VHvPkm8GRc09XPYRaMo9Ipi8Ha5vXjQvjVyt/cOpj3NXScwr7EAdkJWWJtz1iMVZKlONDi6FX+MNImQx9XzWYDpFpDlSr"
        "oUo409sUXQnn5n4RU+oSgKXbgD8fAEz6gdg+UomRD38zYNSY31qWj8W9a+SvaxyUD0+6cTUK2jQz/Y8l0UxS5S0IQPATbjPRh309"
        "Mc+XVJb9iIbOL0pXk/vaLT3JGpNCN4GyDEt36glzotAqp1SQW03ZbtURhVpsQUom0kW79YcVXg2ZL3qv+x8NNSvfVVIbrzi/ITO+"
        "8iWPH1Y65wEgS7kKv+mVdLktfQmfhV26RmZBp0d2sS1lNC8pIBFvJf/Tg0pe5uNqiGObTnL8B04P1AGXyRT4v8kM/dT2w82BMIkG"
        "x5sLNHLuqdXR1CPGxc+DAvbaykz20PHbD6EHlXgolsuCFOIHWUXnTRhxisiKMSNL1K5yTJ2nIysEY+QUMrHOHl6pYCQmzmVnM9aJ"
        "B6dUKi0P/abEM3HtOZp7XPAuB1n8nS2S0jg1wGBASaMNAdu5CixWIBdZIOJ8P7GwUfuon4fn0qV5wz3AmMCbWspmUVncPWPDlP4Z"
        "RaCpRVuMzFjlwby2wF5il208np/h6cH/9pjA/AJSTdepcxOEf2FzJ5+CCOQS7P1fHdymdclnuhHzYrdmEApxLXO2nvVaYFcRlOk5"
        "HPFSp3to1sk6YcbMrTzCuk7DR+FD5+c/h8WwqNySNvYlTQ8cvACFO9LFkTX9napoJicUAJ9TdlohlLBH7YYWWU4C5RnN4o3Pg7Xx"
        "B3Zbcup7eGHClei1VrzDVIeUnwoMp3dg3AwEt0DdRD2Z7+04zunU2Z7esJWhI43njFD/YNzwEfmBHizTH/R4GVQbI/HVJb6Ok77u"
        "jQgkMdSsYrJ0Ht12K2PlEIYO+TrNBmbBuIIcgrsH/sCPu2Q1GFZL7PsznwyJfCa2wiHUhMc40B81bxosRd0WBaTJdGVlw7UG+Ep8"
        "GxUYPwco7YKCTbAHP9uIJRqxyirccWnpSS/V8InNhVQ7qL2Fjc4VufctVo/XV+c/Rw=="
    ),
    (256, 1): (
        "S+iD1dcBj/4ZX85wkSh43f/9DgATh5lBl1XLmgs9gv+fliNLgafgeCEBRy8DoQzLmX9dX488nMbbVe2w+fPoVg0bJcsz+v7eZcnf"
        "EymqT7H9qaDWy2JloCUX1V6pk5EMF/etaPlBDOPVm5jBOSWLdTu/BQ4ds54RZYRHV4nU8tOv+ajVr78W6tOXDB7jhYTc78vgR71b"
        "1eDBjm1lrQiJjhsx+5nTr5NuE/u/7w8IA5t/Inmge5aDLy0ceGJzSksJAxS2wAHv47p54gnKo/GFqBHqiiuxxcGoG/3+E+c0zYtf"
        "A/RW1R9VHvPkm8GRc09XPYRaMo9Ipi8Ha5vXjQvjVyt/cOpj3NXScwr7EAdkJWWJtz1iMVZKlONDi6FX+MNImQx9XzWYDpFpDlSr"
        "oUo409sUXQnn5n4RU+oSgKXbgD8fAEz6gdg+UomRD38zYNSY31qWj8W9a+SvaxyUD0+6cTUK2jQz/Y8l0UxS5S0IQPATbjPRh309"
        "Mc+XVJb9iIbOL0pXk/vaLT3JGpNCN4GyDEt36glzotAqp1SQW03ZbtURhVpsQUom0kW79YcVXg2ZL3qv+x8NNSvfVVIbrzi/ITO+"
        "8iWPH1Y65wEgS7kKv+mVdLktfQmfhV26RmZBp0d2sS1lNC8pIBFvJf/Tg0pe5uNqiGObTnL8B04P1AGXyRTxf5MZ+6nth5sDYRIN"
        "jjcXaeTcU6ujqUeNi58HBey1lZnsoeO3H0IPK/FQLJcFKcQPsorOmzDiFJEVY0aXqF3lmTpPR1cIxsgpZGKdPbxSwUlMnMvPZqwT"
        "D06pVFse+k2JZ+LaczT3uOFdDrL5O1skpXFqgMGAkkYbArZzFVisQC+yQMT5fmJho/ZRPw/PpUvzhnuAMYE3tZXNorK5e8aGKf0z"
        "ikFTi7YZmbHKg3ltgb3ELtt5PD/D04P/7TGB+QWlmq5T5yYI/8PmTj4FEcgl2fu/OrlN65LPdCPmxW7NIBXiWuZtPeu1wa4iKNNz"
        "OOKlTvfQrZN1wo2ZW3mFdZ2Gj8KHzs9/DothUbklbexLmh84eAELd6SLI2v6O1XRTE4pAD6n7bRCKGGP2g0tspwEyzOaxRufB2vj"
        "D+y25dT38MOEK9FrrXiHqQ4pPxUYTu/BuBkIb4G6iXsy39txnNOpsz29YStDRxrPGaH+wbjhI/MDPVinP+jxM6g2RuOrS3wdJ33d"
        "GxFIYqlZxWTpPLrtV8bKIQ0d8nWbDcyCcQU5BHcP/IEfd8lqMayW2PdnPhkT+UxshUOoCY9xoD9r3jRYi7otCkmT6crLhmsN8ZX4"
        "Niswfg5R2gUFm2APfrcRSzRjlVW449LSk1+q4RObC6l2UXsLG50rcu9brB6vr85/jpDSyR+cr8476pR4Ry0+cBfDUfSVdOPvkUJt"
        "N/jOO/1qLq2fj4D5Kl6dEcYEP3Ag0EtD9swjti1KtTOkO935prchcp7OgirqnNTVSmNT9kltMBQR3Ta/esAgXUO//SCFbZzCZY43"
        "eKpt0rruIh/FpVwcxFYP3jBBJ0pdEB+ItOvvbcBnC2PWmeogvIQbCG4uyFQWyDnNu8edMnKGtk9CNwmpnEmPQMOBp2zeNgPTlDgh"
        "GOhsEnEkW0vqa5/3FFteXCwIb5EPJU9GngYLNNuh7xKOa5hA83XyJhNfa7771F8pmqoHMutoT/BW8NOUh6ECX+M6U/g1/M0Mr8XJ"
        "2G5Dr728qWY98052TCKxZ35k0FA05Gq1niBnVPuTFzjUwwmd5Bh7IyjTrmTC5WjBBF7Wr6am+OwRr7IoCuccgXyFM1rQT2g4mz/+"
        "N8NxP6CRV2SNdKCpPlEqxyWIyvIV/cJy/RvYLmqU4mZiJZ7uUGGR+j+CRPEKjUDbNDe8PM6+9A2c6s7YUquRoE92p8TRQ6NE3CHR"
        "UfsQnFalw5bWvV4mt3U2qSo1ocqZAhPN9s01RmVtGJmWtMDmTIYp8IgIETA0QVuyAqRCvhdmGCxlBM5p4qwktuiEMQDdVu5WtbOj"
        "9wWbkxDLUIYT/fLWCTfA7HASkJ/camdDM5QTU2/T4hCK+F66e0gtvEQR0oWXda3FDq2fvL+eZugVDlgqrriV7nwN46+DVJIDuHlD"
        "bVgn/zvQvIK6ri/lnTYyn8HPu/LyR9rJZfy9PvMO6tnszdKAjo9AGTSZLWXqNXcMAtSuPaT5USXtuovXY9UbZUty4ml87la9Kp0X"
        "tJoshisGJSyvjJZgtnPbORrttknvzkwdMusM8k1eeJEWZTv99JuaX5j2zMfrCMdbiCzXksVapyFXIH3iGRQrjJQizJV0sXITc4Em"
        "I0EDW6aCBXDCpHX9LK7yReMY9uLWvdOhKY1Vq0jYA5p12ni4Mhstxev6GkkeAlU0lcmAWQKJIRuSvOIryDrPAfTMiFKpQFh/3A5I"
        "XuKq8OAPxlqa4f6UVJ9y5R4i++BnO9I9QIRA2JZEHQZiysfnNN8594O2unVGYBJujGLdiyddpljmSHHMU7S6k+/eJEmwBGQgPUGB"
        "fcYJNvMNS1+ZpMxIUBf9+QOWvezzwmXul3qe6DfcaQVv+dCqP+otr85fHSLdNeKzUImLOjypWpTkuWWq0Fhz7pNt2TyL9kobL91u"
        "9jD0urXJzDa+llITrpxqsVIMi//MDWlAEAQk0JFrcNy5DJB0162eFEBmc3wp62r6r5PUWBoAuZ8V3iPjDPqp7UHJUZFnYAIzNEHV"
        "4En5XagOFaSszpptsmIoLj0v1FBToTU="
    ),
}
