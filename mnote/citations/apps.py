from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CitationsConfig(AppConfig):
    name = "mnote.citations"
    verbose_name = _("Citations")
