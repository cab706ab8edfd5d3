from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "mnote.search"

    def ready(self):
        from mnote.library.signals import root_files_changed
        from mnote.search.workspace import refresh_after_sync

        root_files_changed.connect(refresh_after_sync, dispatch_uid="workspace-index")
