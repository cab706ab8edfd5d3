from django.apps import AppConfig


class StackConfig(AppConfig):
    name = "mnote.stack"
    verbose_name = "Embedded LightRAG stack"
