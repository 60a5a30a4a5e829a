#!/usr/bin/env python3
"""A synthetic access log of a small news site, in the combined format, for
the WebStone-SS experiment (run.sh): 1,500 users over two hours, each a
session of pages (a front page, articles, a CGI search, an about page)
with the files a browser fetches for each, think times from a lognormal
distribution. Deterministic (seeded): the same log every time.

Usage: gen-log.py > access.log
"""
import datetime
import random

rng = random.Random(2026)
STYLE = ("/css/site.css", 14_000)
SCRIPT = ("/js/site.js", 38_000)
LOGO = ("/img/logo.png", 9_000)


def article(n):
    # Each article: its HTML, the shared style and logo, and 2-4 pictures
    # of its own (similar sizes: the second heuristic combines them).
    pictures = [(f"/img/a{n}-{k}.jpg", 40_000 + 1_000 * ((n * 7 + k) % 5)) for k in range(2 + n % 3)]
    return [(f"/news/{n}.html", 18_000 + 500 * (n % 4)), STYLE, LOGO] + pictures


PAGES = {
    "front": [("/index.html", 22_000), STYLE, SCRIPT, LOGO, ("/img/hero.jpg", 120_000)],
    "about": [("/about.html", 6_000), STYLE, LOGO],
    "search": None,  # /cgi-bin/search?q=WORD, one file
}
WORDS = ["tern", "harbor", "quartz", "nebula", "storm", "tide", "gull", "reef"]
NEXT = {  # page -> (next, weight)
    "start": [("front", 7), ("article", 2), ("search", 1)],
    "front": [("article", 6), ("search", 2), ("about", 1), ("end", 3)],
    "article": [("article", 4), ("front", 2), ("search", 2), ("end", 4)],
    "search": [("article", 5), ("search", 1), ("end", 3)],
    "about": [("front", 1), ("end", 3)],
}


def pick(options):
    total = sum(w for _, w in options)
    u = rng.uniform(0, total)
    for name, w in options:
        u -= w
        if u <= 0:
            return name
    return options[-1][0]


def files_of(page):
    if page == "article":
        return article(rng.randrange(20))
    if page == "search":
        return [(f"/cgi-bin/search?q={rng.choice(WORDS)}", 6_000 + 200 * rng.randrange(10))]
    return PAGES[page]


start = datetime.datetime(2026, 11, 24, 9, 0, 0, tzinfo=datetime.timezone.utc)
lines = []
for user in range(1500):
    ip = f"10.{user // 60000}.{(user // 250) % 240}.{user % 250 + 1}"
    t = start + datetime.timedelta(seconds=rng.uniform(0, 7200))
    page = pick(NEXT["start"])
    while page != "end":
        for k, (path, size) in enumerate(files_of(page)):
            at = t + datetime.timedelta(seconds=0.05 * k + (0.15 if k else 0))
            stamp = at.strftime("%d/%b/%Y:%H:%M:%S +0000")
            lines.append((at, f'{ip} - - [{stamp}] "GET {path} HTTP/1.1" 200 {size} "-" "Mozilla/5.0 (X11; Linux x86_64)"'))
        think = min(rng.lognormvariate(2.8, 0.8), 240)  # median ~16 s
        t += datetime.timedelta(seconds=1 + think)
        page = pick(NEXT[page])
lines.sort(key=lambda x: x[0])
print("\n".join(line for _, line in lines))
