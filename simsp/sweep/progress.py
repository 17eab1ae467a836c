"""A sweep's progress on stderr: tqdm's bar when installed, else a plain one-line bar."""

import sys
import time


class Progress:
    """A one-line progress bar on stderr (tqdm's when installed); silent when disabled."""

    def __init__(self, total: int, enabled: bool = True, label: str = "configs"):
        self.total, self.done, self.enabled, self.label = total, 0, enabled and total > 0, label
        self.t0 = self.shown = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.bar = None
        if self.enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit=" " + label, file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            return
        now = time.monotonic()
        every = 0.2 if self.tty else 5.0
        if now - self.shown >= every or self.done == self.total:
            self.shown = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0.0
            width = 30
            filled = int(width * self.done / self.total)
            text = (
                f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.label} "
                f"{rate:.1f}/s ETA {eta:.0f}s"
            )
            print(
                ("\r" + text) if self.tty else text,
                end="" if self.tty else "\n",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.tty:
            print(file=sys.stderr)
