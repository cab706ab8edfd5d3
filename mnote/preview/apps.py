from django.apps import AppConfig


class PreviewConfig(AppConfig):
    name = "mnote.preview"
