"""What the citations stage asks of the stages above it, which it never imports."""

from django.dispatch import Signal

# Sent by the mapper for each locator it makes, with ``source`` and ``locator``.
# A receiver may answer with the cited words' place in the file's preview
# (``preview.views.cached_anchor``, when that preview is rendered already); the
# first answer that is not None becomes ``locator["anchor"]``.
locator_anchor = Signal()
