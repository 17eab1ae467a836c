"""A YAML file's text edited line by line, so that a rewritten hardware file keeps its comments
and layout: a key's line and extent, one `key: value` line in flow style, the provenance comments
above a key, the keys of a block section. Only `simsp.io.config` imports pyyaml: values are dumped
through its `yaml_flow`, and the caller reads the result back through it."""

from simsp.io.config import yaml_flow


def replace_section_keys(
    lines: list[str], section: str, values: dict, keys, note: str | None = None
) -> bool:
    """Replace (or add) `keys` under the top-level `section:` in place, each with its value from
    `values` and, for a replaced one, `note` as its comment; False where the section is not in
    block style."""
    start = find_key(lines, 0, len(lines), "", section)
    if start is None or lines[start].split("#")[0].strip() != f"{section}:":
        return False
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " #"):
        end += 1
    body = [ln for ln in lines[start + 1 : end] if ln.strip() and not ln.lstrip().startswith("#")]
    indent = " " * (len(body[0]) - len(body[0].lstrip())) if body else "  "
    for key in keys:
        new = [key_line(indent, key, values[key])]
        i = find_key(lines, start + 1, end, indent, key)
        if i is None:
            lines[end:end] = new
            end += 1
            continue
        j = entry_end(lines, i, end, indent)
        top = i  # the comments above say where the old value came from: they go with it
        while top > start + 1 and lines[top - 1].strip().startswith("#"):
            top -= 1
        new = ([f"{indent}# {note}"] if note else []) + [key_line(indent, key, values[key])]
        lines[top:j] = new
        end -= j - top - len(new)
    return True


def drop_source(lines, start: int, end: int, indent: str, key: str, source: str) -> int:
    """Remove the old provenance above `key` (the comment lines from the one starting with
    `source` down to it), since the new file's replaces it; return the section's new end."""
    i = find_key(lines, start + 1, end, indent, key)
    j = i
    while i is not None and j > start + 1 and lines[j - 1].strip().startswith("#"):
        j -= 1
        if lines[j].strip().startswith(source):
            del lines[j:i]
            return end - (i - j)
    return end


def find_key(lines, lo: int, hi: int, indent: str, key: str) -> int | None:
    """Index of the line `<indent><key>:` in lines[lo:hi]."""
    for i in range(lo, hi):
        line = lines[i]
        if line.startswith(indent + key + ":") and (
            len(indent) == 0 or not line[len(indent)].isspace()
        ):
            return i
    return None


def entry_end(lines, i: int, hi: int, indent: str) -> int:
    """One past the last line of the entry starting at i (deeper lines, same-indent '- ' items)."""
    j = last = i + 1
    while j < hi:
        line = lines[j]
        deeper = line.startswith(indent + " ") or line.startswith(indent + "- ")
        if line.strip() and not deeper:
            break
        if line.strip():
            last = j + 1
        j += 1
    return last


def key_line(indent: str, key: str, value) -> str:
    """One `key: value` line in flow style."""
    return f"{indent}{key}: {yaml_flow(value)}"
