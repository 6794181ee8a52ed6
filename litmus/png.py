"""A matplotlib figure as PNG bytes that depend on the figure only."""

from __future__ import annotations

import io

from matplotlib.figure import Figure


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG, without the ``Software`` text chunk (it names matplotlib's version),
    so the same figure gives the same bytes and the same digest in a receipt."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
