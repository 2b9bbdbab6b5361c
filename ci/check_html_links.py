"""Check the links between the pages of a built HTML site (docs/_build/html): every
relative link must lead to a file of the site and, with a ``#fragment``, to an element of
that page with that id.  Links to other sites are left out (CI has no network).

    python ci/check_html_links.py docs/_build/html
"""
import html.parser
import os
import sys
import urllib.parse


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])


def main(root):
    pages = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("_static", "_sources")]   # the theme's own
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(folder, name))
                page = _Page()
                with open(path, encoding="utf-8") as f:
                    page.feed(f.read())
                pages[path] = page
    bad = []
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue                        # another site
            target = path if not parts.path else os.path.normpath(
                os.path.join(os.path.dirname(path), urllib.parse.unquote(parts.path)))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not os.path.exists(target):
                bad.append("%s: %s (no such file)" % (os.path.relpath(path, root), link))
            elif parts.fragment and target in pages \
                    and urllib.parse.unquote(parts.fragment) not in pages[target].ids:
                bad.append("%s: %s (no such anchor)" % (os.path.relpath(path, root), link))
    for line in bad:
        print(line)
    print("%d pages, %d links between them checked, %d broken"
          % (len(pages), sum(len(p.links) for p in pages.values()), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html"))
