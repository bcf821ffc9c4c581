"""The run's progress bars (`--progress`): one per phase, on stderr, gone when the run ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from tqdm import tqdm


class Progress:
    """Named tqdm bars; with progress off every call does nothing (tqdm is then never imported)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, tqdm[NoReturn]] = {}

    def bar(self, name: str, total: int | None, desc: str) -> tqdm[NoReturn] | None:
        if not self.enabled:
            return None
        from tqdm import tqdm

        bar = tqdm(total=total, desc=desc, unit="session", leave=False, dynamic_ncols=True)
        self.bars[name] = bar
        return bar

    def tick(self, name: str, **postfix: object) -> None:
        bar = self.bars.get(name)
        if bar is not None:
            bar.update(1)
            if postfix:
                bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()
