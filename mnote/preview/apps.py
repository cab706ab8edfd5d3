from django.apps import AppConfig


class PreviewConfig(AppConfig):
    name = "mnote.preview"

    def ready(self):
        # Connects the preview's answer to the mapper's locator_anchor signal.
        from mnote.preview import views  # noqa: F401
        # Answers the library's file_text_wanted signal (MNote's text for LightRAG).
        from mnote.preview import plain_text  # noqa: F401
