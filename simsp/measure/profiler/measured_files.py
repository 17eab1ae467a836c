"""Where `simsp calibrate` puts the measured files a new hardware YAML names: copied under
`<out folder>/calibration/<name>/` unless they already lie in its folder, every path written
relative to that folder, and the base file's other paths rebased onto it."""

import os
import shutil
from pathlib import Path

from simsp.errors import InputError


def as_list(value) -> list[str]:
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


def rebase(value, base_dir: Path, out_dir: Path):
    """A base-relative path (or list, glob patterns allowed) made relative to the new folder."""
    if base_dir == out_dir or not value:
        return value
    if isinstance(value, str):
        return value if os.path.isabs(value) else relative(base_dir / value, out_dir)
    return [rebase(v, base_dir, out_dir) for v in value]


def relative(path: Path, folder: Path) -> str:
    """path relative to folder (POSIX separators), or absolute when no relative path exists."""
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:  # another drive
        return Path(path).as_posix()


class Placer:
    """Copies measured files under `<out folder>/calibration/<name>/[sub/]`; a second file of the
    same name goes into a numbered folder below (`2/`, ...), never renamed, since the readers
    infer a log's collective and group size from its name when the log does not say them."""

    def __init__(self, out_dir: Path, name: str):
        self.out_dir, self.name, self.used = out_dir, name, {}
        self.made: list[Path] = []
        """Folders this placer created, outermost first (undo removes them)."""
        self.copied: list[Path] = []
        """Files this placer wrote (undo removes them; a file that was there stays)."""

    def mkdir(self, folder: Path) -> None:
        """folder and its missing parents, each remembered for undo."""
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for f in reversed(missing):
            try:
                f.mkdir()
            except OSError as e:
                raise InputError(
                    f, "--out", str(f), f"cannot be made ({e.strerror or e})"
                ) from None
            self.made.append(f)

    def undo(self) -> None:
        """Remove the copies and the folders made for them (only if left empty)."""
        for dest in self.copied:
            dest.unlink(missing_ok=True)
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:
                pass

    def place(self, source: str, sub: str) -> str:
        """The path to write into the YAML for `source`, copying it when it lies elsewhere."""
        src = Path(source).resolve()
        if src.is_relative_to(self.out_dir):
            return relative(src, self.out_dir)
        folder = self.out_dir / "calibration" / self.name / sub
        dest, i = folder / src.name, 1
        while dest in self.used and self.used[dest] != src:
            i += 1
            dest = folder / str(i) / src.name
        if dest not in self.used:
            self.mkdir(dest.parent)
            for f in (dest.parent, *dest.parent.parents):
                if f == self.out_dir:
                    break
                if f.is_symlink():
                    raise InputError(
                        f, "--out", str(f), "is a symbolic link; simsp will not write through it"
                    )
            self.used[dest] = src
            if dest.is_symlink():
                raise InputError(
                    dest, "--out", str(dest), "is a symbolic link; simsp will not write through it"
                )
            if dest.exists():
                if dest.read_bytes() != src.read_bytes():
                    raise InputError(
                        dest,
                        "--out",
                        str(dest),
                        "exists with other contents: simsp does not overwrite a file it did not "
                        "write; remove it or name another --out",
                    )
                return relative(dest, self.out_dir)  # the same measurement: kept, not copied
            self.copied.append(dest)  # before the copy: undo removes a part-written one too
            try:
                shutil.copyfile(src, dest)
            except OSError as e:
                raise InputError(
                    dest, "--out", str(dest), f"cannot be written ({e.strerror or e})"
                ) from None
        return relative(dest, self.out_dir)
