"""What the library announces to the stages above it, which it never imports."""

from django.dispatch import Signal

# Sent by sync_root after the root's locked transaction, with ``root``: the
# root's files may have changed (the workspace index re-reads the changed
# ones), and ``texts``: (source id, sha256, bytes) of the new and changed
# files whose bodies the sync read anyway, so they need not be read again.
root_files_changed = Signal()
