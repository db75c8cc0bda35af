#!/usr/bin/env python3
"""Checks that the folders of Sources/TokenProxyCore use only folders below them.

The layers, lowest first, are the ones docs/contributing/architecture.md draws. A Swift file may name a
type, function or constant declared in its own folder or in a folder of a lower layer;
naming one from a higher layer fails the check. All folders are one module, so the compiler
cannot see this; the check reads declarations and identifiers instead of resolving them,
which is exact for this code base (no two layers declare the same name).

    scripts/check-layers.py            # exit 1 and one line per offending use
"""
import pathlib
import re
import sys

LAYERS = [
    "System",
    "Support",
    "HTTP",
    "Configuration",
    "Server",
    "Upstream",
    "Metrics",
    "Credentials",
    "Admin",
    "Proxy",
    "App",
]

DECLARATION = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|package|internal|final|indirect)\s+)*"
    r"(?:struct|class|enum|protocol|actor|typealias|func|let|var)\s+(\w+)",
    re.MULTILINE,
)
COMMENT = re.compile(r"//.*")
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent / "Sources" / "TokenProxyCore"
    rank = {name: index for index, name in enumerate(LAYERS)}
    files = sorted(root.rglob("*.swift"))
    declared: dict[str, set[str]] = {}
    sources: dict[pathlib.Path, tuple[str, str]] = {}
    for path in files:
        layer = path.relative_to(root).parts[0]
        if layer not in rank:
            print(f"{path.relative_to(root)}: folder {layer} is not a layer in scripts/check-layers.py")
            return 1
        text = path.read_text()
        sources[path] = (layer, text)
        for match in DECLARATION.finditer(text):
            declared.setdefault(match.group(1), set()).add(layer)
    failures = []
    for path, (layer, text) in sources.items():
        code = STRING.sub('""', COMMENT.sub("", text))
        for name in sorted(set(IDENTIFIER.findall(code))):
            owners = declared.get(name, set())
            if layer in owners:
                continue
            above = sorted(owner for owner in owners if rank[owner] > rank[layer])
            if above:
                failures.append(f"{path.relative_to(root)}: {layer} uses {name} from {', '.join(above)}")
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} uses point up a layer (docs/contributing/architecture.md, 'Layers')")
        return 1
    print(f"layers: {len(files)} files, every dependency points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
