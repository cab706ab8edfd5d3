from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    name = "mnote.workspace"

    def ready(self):
        from mnote.library.signals import root_files_changed
        from mnote.workspace.index import refresh_after_sync

        root_files_changed.connect(refresh_after_sync, dispatch_uid="workspace-index")
