from django.db import models

from mnote.library.models import Source


class WorkspaceText(models.Model):
    """MNote's own light index for Workspace search: the body of a Markdown or
    text file in the roots, as of ``sha256``. Independent of LightRAG."""

    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="workspace_text")
    sha256 = models.CharField(max_length=64)
    body = models.TextField()

    class Meta:
        # The table the search app made before the workspace was a stage of its own.
        db_table = "search_workspacetext"
